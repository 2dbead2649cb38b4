package profilertest

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// GUIDBytes converts a GUID written as 8-4-4-4-12 hex digits (braces
// optional) to the 16 bytes of its Windows in-memory layout: the first three
// groups little-endian, the last two as written. That is the order the
// Diagnostic IPC protocol carries a CLSID in.
func GUIDBytes(s string) ([16]byte, error) {
	var g [16]byte
	t := strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	parts := strings.Split(t, "-")
	if len(parts) != 5 || len(parts[0]) != 8 || len(parts[1]) != 4 || len(parts[2]) != 4 || len(parts[3]) != 4 || len(parts[4]) != 12 {
		return g, fmt.Errorf("GUID %q: want 8-4-4-4-12 hex digits", s)
	}
	b, err := hex.DecodeString(strings.Join(parts, ""))
	if err != nil {
		return g, fmt.Errorf("GUID %q: %w", s, err)
	}
	g[0], g[1], g[2], g[3] = b[3], b[2], b[1], b[0]
	g[4], g[5] = b[5], b[4]
	g[6], g[7] = b[7], b[6]
	copy(g[8:], b[8:])
	return g, nil
}
