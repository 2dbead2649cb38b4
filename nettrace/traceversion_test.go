package nettrace

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestDamagedTraceObjectVersion: a Trace object whose version no writer
// uses, below the known one, is damage with its offset, not "an unsupported
// NetPerf version"; above it, an unsupported (possibly newer) format.
func TestDamagedTraceObjectVersion(t *testing.T) {
	header := func(magic string, version uint32) []byte {
		var b bytes.Buffer
		b.WriteString(magic)
		b.Write([]byte{20, 0, 0, 0})
		b.WriteString(fastSerMagic)
		b.Write([]byte{4, 4, 1})
		b.Write([]byte{byte(version), 0, 0, 0, 0, 0, 0, 0, byte(len(objTrace)), 0, 0, 0})
		b.WriteString(objTrace)
		b.WriteByte(6)
		b.Write(make([]byte, traceObjectSize))
		return b.Bytes()
	}
	for _, tc := range []struct {
		name    string
		in      []byte
		damaged bool
	}{
		{"nettrace with version 3", header(magicNettrace, 3), true},
		{"nettrace with version 0", header(magicNettrace, 0), true},
		{"nettrace with version 9", header(magicNettrace, 9), false},
	} {
		_, err := NewReader(bytes.NewReader(tc.in))
		var fe *FormatError
		switch {
		case err == nil:
			t.Errorf("%s: accepted", tc.name)
		case strings.Contains(err.Error(), "NetPerf version"):
			t.Errorf("%s: %v, reported as a NetPerf version", tc.name, err)
		case tc.damaged && (!errors.As(err, &fe) || fe.Offset != int64(len(magicNettrace))+4+int64(len(fastSerMagic))+3 || !strings.Contains(err.Error(), "damaged")):
			t.Errorf("%s: %v, want a FormatError at the version field", tc.name, err)
		case !tc.damaged && !errors.Is(err, ErrUnsupportedFormat):
			t.Errorf("%s: %v, want ErrUnsupportedFormat", tc.name, err)
		}
	}
}
