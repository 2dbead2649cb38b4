package ipc

import "github.com/clrdiag/clrdiag/internal/wire"

// GUID is a Windows GUID in its wire (and in-memory) byte order: Data1 as a
// little-endian u32, Data2 and Data3 as little-endian u16s, then Data4's 8
// bytes as written. This is the order of Python's uuid.bytes_le and of a
// CLSID in a COM structure.
type GUID [16]byte

// ParseGUID parses the canonical text form
// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", optionally in braces.
func ParseGUID(s string) (GUID, error) {
	g, err := wire.ParseGUID(s)
	return GUID(g), err
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
func (g GUID) String() string { return wire.FormatGUID(g) }

// IsZero reports whether g is the nil GUID (3.1 runtimes report it as the
// runtime cookie).
func (g GUID) IsZero() bool { return g == GUID{} }
