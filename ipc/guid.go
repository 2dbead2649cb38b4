package ipc

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// GUID is a Windows GUID in its wire (and in-memory) byte order: Data1 as a
// little-endian u32, Data2 and Data3 as little-endian u16s, then Data4's 8
// bytes as written. This is the order of Python's uuid.bytes_le and of a
// CLSID in a COM structure.
type GUID [16]byte

// ParseGUID parses the canonical text form
// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", optionally in braces.
func ParseGUID(s string) (GUID, error) {
	var g GUID
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
		t = t[1 : len(t)-1]
	}
	if len(t) != 36 || t[8] != '-' || t[13] != '-' || t[18] != '-' || t[23] != '-' {
		return g, fmt.Errorf("GUID %q: want the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (32 hex digits in groups 8-4-4-4-12)", s)
	}
	var raw [16]byte
	if _, err := hex.Decode(raw[:], []byte(t[0:8]+t[9:13]+t[14:18]+t[19:23]+t[24:36])); err != nil {
		return g, fmt.Errorf("GUID %q: %v; use hex digits 0-9 and a-f", s, err)
	}
	// raw is big-endian text order; convert the first three fields.
	binary.LittleEndian.PutUint32(g[0:], binary.BigEndian.Uint32(raw[0:]))
	binary.LittleEndian.PutUint16(g[4:], binary.BigEndian.Uint16(raw[4:]))
	binary.LittleEndian.PutUint16(g[6:], binary.BigEndian.Uint16(raw[6:]))
	copy(g[8:], raw[8:])
	return g, nil
}

// MustParseGUID is ParseGUID for constants; it panics on bad input and is
// meant for literals in tests and tables only.
func MustParseGUID(s string) GUID {
	g, err := ParseGUID(s)
	if err != nil {
		panic(err)
	}
	return g
}

// String returns the canonical lower-case text form.
func (g GUID) String() string {
	return fmt.Sprintf("%08x-%04x-%04x-%x-%x",
		binary.LittleEndian.Uint32(g[0:]), binary.LittleEndian.Uint16(g[4:]), binary.LittleEndian.Uint16(g[6:]), g[8:10], g[10:])
}

// IsZero reports whether g is the nil GUID (3.1 runtimes report it as the
// runtime cookie).
func (g GUID) IsZero() bool { return g == GUID{} }
