package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// prefixes are the SI prefixes FormatBytes uses, one letter per step of
// 1000 (a space for none).
const prefixes = " kMGTPE"

// FormatBytes prints a byte count with an SI prefix: "999 B", "1.50 kB",
// "12.3 MB", "256 MB", "2.15 GB". Values of 1000 or more get three
// significant digits (two decimals below 10, one below 100, none above),
// the precision the monitor's dashboard shows.
func FormatBytes(n int64) string {
	return string(AppendBytes(nil, n))
}

// AppendBytes appends FormatBytes(n) to dst.
func AppendBytes(dst []byte, n int64) []byte {
	return appendSI(dst, float64(n), "B")
}

// FormatRate prints a rate in bytes per second with an SI prefix:
// "250 MB/s", "1.20 kB/s", "17 B/s".
func FormatRate(bytesPerSecond float64) string {
	return string(appendSI(nil, bytesPerSecond, "B/s"))
}

func appendSI(dst []byte, v float64, unit string) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(append(dst, strconv.FormatFloat(v, 'f', -1, 64)...), " "+unit...)
	}
	i := 0
	for math.Abs(v) >= 999.5 && i < len(prefixes)-1 {
		v /= 1000
		i++
	}
	decimals := 2
	switch a := math.Abs(v); {
	case a >= 99.95:
		decimals = 0
	case a >= 9.995:
		decimals = 1
	}
	dst = strconv.AppendFloat(dst, v, 'f', decimals, 64)
	// A whole number is written without decimals ("3 MB", not "3.00 MB"),
	// so that each value has one spelling.
	if decimals > 0 && strings.TrimRight(string(dst[len(dst)-decimals:]), "0") == "" {
		dst = dst[:len(dst)-decimals-1]
	}
	dst = append(dst, ' ')
	if i > 0 {
		dst = append(dst, prefixes[i])
	}
	return append(dst, unit...)
}

// ErrBadSize is returned (wrapped) by ParseBytes for a string that is not
// a size.
var ErrBadSize = errors.New("not a size")

// multiplier returns the bytes of a unit, upper-cased and without its
// trailing "B": SI prefixes are powers of 1000, IEC prefixes (with "i")
// powers of 1024. A bare letter ("500M") is SI, like the labels clrdiag
// prints.
func multiplier(u string) (float64, bool) {
	switch u {
	case "":
		return 1, true
	case "K":
		return 1e3, true
	case "M":
		return 1e6, true
	case "G":
		return 1e9, true
	case "T":
		return 1e12, true
	case "KI":
		return 1 << 10, true
	case "MI":
		return 1 << 20, true
	case "GI":
		return 1 << 30, true
	case "TI":
		return 1 << 40, true
	}
	return 0, false
}

// ParseBytes reads a byte count with an optional unit, in either case and
// with or without a space: "1048576", "512kB", "500MB", "2GB", "1TB" (SI,
// powers of 1000), "64KiB", "256MiB", "1.5GiB" (IEC, powers of 1024).
// "" and "0" are 0. A negative, fractional-byte-overflowing or unknown
// value is an error wrapping ErrBadSize.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	num, unit := strings.TrimSpace(t[:i]), strings.ToUpper(strings.TrimSpace(t[i:]))
	mult, ok := multiplier(strings.TrimSuffix(unit, "B"))
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("size %q: %w; give bytes with an optional unit, such as 500MB, 2GB (powers of 1000) or 256MiB (powers of 1024)", s, ErrBadSize)
	}
	b := v * mult
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q: %w: too large", s, ErrBadSize)
	}
	return int64(b), nil
}
