package cli

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/nettrace"
)

// hostile is text a trace's author controls: it clears the screen, sets the
// window title, colours, and (C1 CSI, RLO) hides in 8-bit and bidi forms.
const hostile = "\x1b[2J\x1b]0;pwned\x07\u009b31m\u202e"

// hostileEscaped is how it must be shown.
const hostileEscaped = `\x1b[2J\x1b]0;pwned\x07\u009b31m\u202e`

// utf16z encodes s as a NUL-terminated UTF-16LE string.
func utf16z(b []byte, s string) []byte {
	for _, u := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return append(b, 0, 0)
}

// writeHostileTrace writes a trace whose provider, event, field, method,
// module, type names and string values carry terminal escape sequences.
func writeHostileTrace(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := nettrace.NewWriter(&buf, nettrace.WriterConfig{PointerSize: 8, ProcessID: 7, ExpectedCPUSamplingRate: 1000000,
		SyncTimeUTC: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	id := uint32(0)
	md := func(m *nettrace.Metadata) *nettrace.Metadata {
		id++
		m.ID = id
		if err := w.AddMetadata(m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	src := md(&nettrace.Metadata{ProviderName: "Prov" + hostile, EventID: 1, EventName: "Ev" + hostile,
		Fields: []nettrace.Field{{Name: "F" + hostile, Type: nettrace.TypeString}}})
	sample := md(&nettrace.Metadata{ProviderName: clrevents.ProviderSampleProfiler})
	exc := md(&nettrace.Metadata{ProviderName: clrevents.ProviderRuntime, EventID: 80, Version: 1})
	module := md(&nettrace.Metadata{ProviderName: clrevents.ProviderRundown, EventID: 154, Version: 1})
	method := md(&nettrace.Metadata{ProviderName: clrevents.ProviderRundown, EventID: 144, Version: 2})
	seq := uint32(0)
	write := func(m *nettrace.Metadata, ts int64, stack uint32, payload []byte) {
		seq++
		if err := w.WriteEvent(&nettrace.Event{Metadata: m, ThreadID: 1, CaptureThreadID: 1, SequenceNumber: seq,
			Timestamp: ts, StackID: stack, Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteStacks(1, [][]uint64{{0x10000010}}); err != nil {
		t.Fatal(err)
	}
	p, _ := nettrace.AppendPayload(nil, src.Fields, nettrace.Object{{Name: "F" + hostile, Value: "value" + hostile}})
	write(src, 1_000_000_000, 0, p)
	for i := range int64(3) {
		write(sample, 1_000_000_000+i*1_000_000, 1, binary.LittleEndian.AppendUint32(nil, 2))
	}
	le := binary.LittleEndian
	e := utf16z(nil, "Ex"+hostile)
	e = utf16z(e, "message")
	e = le.AppendUint64(e, 0x10000010)
	e = le.AppendUint32(e, 0x80131509)
	e = le.AppendUint16(e, 0)
	e = le.AppendUint16(e, 9)
	write(exc, 1_002_000_000, 1, e)
	m := le.AppendUint64(nil, 7)
	m = le.AppendUint64(m, 8)
	m = le.AppendUint32(m, 0)
	m = le.AppendUint32(m, 0)
	m = utf16z(m, "/app/Mod"+hostile+".dll")
	m = utf16z(m, "")
	m = le.AppendUint16(m, 9)
	write(module, 1_010_000_000, 0, m)
	x := le.AppendUint64(nil, 0x10000000)
	x = le.AppendUint64(x, 7)
	x = le.AppendUint64(x, 0x10000000)
	x = le.AppendUint32(x, 0x100)
	x = le.AppendUint32(x, 0x06000001)
	x = le.AppendUint32(x, 8)
	x = utf16z(x, "App.Type"+hostile)
	x = utf16z(x, "Method"+hostile)
	x = utf16z(x, "void ()")
	x = le.AppendUint16(x, 9)
	x = le.AppendUint64(x, 0)
	write(method, 1_010_000_000, 0, x)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hostile.nettrace")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHostileNamesEscaped: no ESC, BEL, C1 control or bidi override from a
// trace reaches standard output or error raw, in text or JSON, and the
// escaped form is shown instead (nothing is silently dropped).
func TestHostileNamesEscaped(t *testing.T) {
	path := writeHostileTrace(t)
	for _, args := range [][]string{
		{"trace", "events", path},
		{"trace", "events", "--json", path},
		{"trace", "stats", path},
		{"trace", "stats", "--json", path},
		{"trace", "report", path},
		{"trace", "report", "--json", path},
	} {
		code, out, errOut := run(t, args...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
		for _, raw := range []string{"\x1b", "\x07", "\u009b", "\u202e"} {
			if strings.Contains(out, raw) || strings.Contains(errOut, raw) {
				t.Errorf("%v: %q reaches the terminal raw:\n%s%s", args, raw, out, errOut)
			}
		}
		json := strings.Contains(strings.Join(args, " "), "--json")
		want := hostileEscaped
		if json {
			want = `\u001b[2J\u001b]0;pwned\u0007\u009b31m\u202e`
		}
		if !strings.Contains(out, want) {
			t.Errorf("%v: the escaped text %s is not shown:\n%s", args, want, out)
		}
	}
	code, out, _ := run(t, "trace", "report", path)
	if code != 0 || !strings.Contains(out, "App.Type"+hostileEscaped+".Method"+hostileEscaped) || !strings.Contains(out, "Ex"+hostileEscaped) {
		t.Errorf("trace report does not show the escaped method and exception type:\n%s", out)
	}
}
