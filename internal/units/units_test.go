package units

import (
	"errors"
	"math"
	"testing"
)

func TestFormatBytes(t *testing.T) {
	for _, c := range []struct {
		in   int64
		want string
	}{
		{0, "0 B"}, {7, "7 B"}, {999, "999 B"}, {1000, "1 kB"}, {1024, "1.02 kB"}, {1500, "1.50 kB"},
		{99_949, "99.9 kB"}, {99_950, "100 kB"}, {999_499, "999 kB"}, {999_500, "1 MB"}, {999_600, "1 MB"}, {1_004_000, "1 MB"}, {1_006_000, "1.01 MB"}, {2_999_999, "3 MB"}, {14_999_000, "15 MB"}, {9_996, "10 kB"},
		{1 << 20, "1.05 MB"}, {12_345_678, "12.3 MB"}, {256_000_000, "256 MB"}, {256 << 20, "268 MB"},
		{200_808_112, "201 MB"}, {2_147_483_648, "2.15 GB"}, {1e12, "1 TB"}, {-1500, "-1.50 kB"},
		{math.MaxInt64, "9.22 EB"},
	} {
		if got := FormatBytes(c.in); got != c.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestFormatRate(t *testing.T) {
	// The case: a 250 MB/s maximum reads "250 MB/s", not "238 MB/s".
	for in, want := range map[float64]string{250e6: "250 MB/s", 106.4e6: "106 MB/s", 1200: "1.20 kB/s", 17: "17 B/s", 0.5: "0.50 B/s", 99.96: "100 B/s"} {
		if got := FormatRate(in); got != want {
			t.Errorf("FormatRate(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"": 0, "0": 0, "1048576": 1 << 20, "7B": 7, "7 b": 7,
		"512kB": 512_000, "512KB": 512_000, "500MB": 500_000_000, "10 mb": 10_000_000, "2GB": 2_000_000_000,
		"2G": 2_000_000_000, "1TB": 1e12, "1.5GB": 1_500_000_000,
		"64KiB": 64 << 10, "256MiB": 256 << 20, "256mib": 256 << 20, "1.5GiB": 3 << 29, "1TiB": 1 << 40, "4Mi": 4 << 20,
	} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"MB", "-1MB", "5XB", "1e400", "abc", "9999999TB", "3iB", "NaN"} {
		if _, err := ParseBytes(bad); !errors.Is(err, ErrBadSize) {
			t.Errorf("ParseBytes(%q) = %v, want ErrBadSize", bad, err)
		}
	}
}

// TestRoundTrip: what FormatBytes prints parses back to within its
// rounding (half a unit of its last digit), so a size the CLI shows can be
// typed back as a flag, and formatting that again gives the same text (one
// spelling per value).
func TestRoundTrip(t *testing.T) {
	for _, n := range []int64{1, 999, 1000, 1024, 65_536, 1 << 20, 2_999_999, 14_999_000, 123_456_789, 256 << 20, 5e9, 1 << 40} {
		s := FormatBytes(n)
		got, err := ParseBytes(s)
		if err != nil {
			t.Fatalf("ParseBytes(FormatBytes(%d) = %q): %v", n, s, err)
		}
		if d := math.Abs(float64(got-n)) / float64(n); d > 0.005 {
			t.Errorf("ParseBytes(FormatBytes(%d) = %q) = %d, off by %.2f%%", n, s, got, 100*d)
		}
		if again := FormatBytes(got); again != s {
			t.Errorf("FormatBytes(%d) = %q, but FormatBytes(ParseBytes(%q)) = %q", n, s, s, again)
		}
	}
}
