package exceptions

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/wire"
	"github.com/clrdiag/clrdiag/nettrace"
)

// MethodLoadVerbose/MethodDCEndVerbose version 2, ModuleDCEnd version 1,
// ExceptionThrown version 1 (pointer size 8).
func methodPayload(start uint64, size uint32, module uint64, ns, name, sig string) []byte {
	return (&wire.Builder{}).U64(start).U64(module).U64(start).U32(size).U32(0x06000001).U32(8).
		UTF16Z(ns).UTF16Z(name).UTF16Z(sig).U16(9).U64(0).B
}

func modulePayload(id uint64, path string) []byte {
	return (&wire.Builder{}).U64(id).U64(id + 1).U32(0).U32(0).UTF16Z(path).UTF16Z("").U16(9).B
}

func thrownPayload(typ, msg string, flags uint16) []byte {
	return (&wire.Builder{}).UTF16Z(typ).UTF16Z(msg).U64(0x1234).U32(0x80131509).U16(flags).U16(9).B
}

// Addresses of the synthetic program: Main calls Run, which calls the
// constructor of App.Widget, which throws; 0xdead0000 is native code, and
// App.Unused is a rundown method no stack touches.
const (
	addrMain   = 0x10000010
	addrRun    = 0x10001020
	addrCtor   = 0x10002008
	addrNative = 0xdead0000
)

// synthetic writes a trace: 3 InvalidOperationException thrown on thread
// 100 from Widget..ctor (one stack, written once), a FormatException
// rethrown on thread 200 from Run, a version 0 ExceptionThrown (no
// payload: no type), one cut short (undecodable), then the rundown.
func synthetic(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := nettrace.NewWriter(&buf, nettrace.WriterConfig{PointerSize: 8, ProcessID: 42,
		SyncTimeUTC: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	id := uint32(0)
	md := func(provider string, event, version uint32) *nettrace.Metadata {
		id++
		m := &nettrace.Metadata{ID: id, ProviderName: provider, EventID: event, Version: version}
		if err := w.AddMetadata(m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	seq := map[uint64]uint32{}
	write := func(m *nettrace.Metadata, thread uint64, ts int64, stack uint32, payload []byte) {
		seq[thread]++
		if err := w.WriteEvent(&nettrace.Event{Metadata: m, ThreadID: thread, CaptureThreadID: thread, SequenceNumber: seq[thread],
			Timestamp: ts, StackID: stack, Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteStacks(1, [][]uint64{
		{addrNative, addrCtor, addrRun, addrMain}, // 1
		{addrRun + 4, addrMain},                   // 2
	}); err != nil {
		t.Fatal(err)
	}
	ms := int64(time.Millisecond)
	base := int64(1_000_000_000)
	exc := md(clrevents.ProviderRuntime, 80, 1)
	for i := range int64(3) {
		write(exc, 100, base+i*ms, 1, thrownPayload("System.InvalidOperationException", "invalid "+string(rune('0'+i)), 0))
	}
	write(exc, 200, base+5*ms, 2, thrownPayload("System.FormatException", "bad\nformat", 0x4))
	write(md(clrevents.ProviderRuntime, 80, 0), 200, base+6*ms, 2, nil)
	write(exc, 200, base+7*ms, 2, thrownPayload("System.Cut", "", 0)[:10])
	write(md(clrevents.ProviderRundown, 154, 1), 300, base+50*ms, 0, modulePayload(7, "/app/App.dll"))
	dc := md(clrevents.ProviderRundown, 144, 2)
	write(dc, 300, base+50*ms, 0, methodPayload(0x10000000, 0x100, 7, "App.Program", "Main", "void  (class System.String[])"))
	write(dc, 300, base+50*ms, 0, methodPayload(0x10001000, 0x100, 7, "App.Program", "Run", "void  (int32)"))
	write(dc, 300, base+50*ms, 0, methodPayload(0x10002000, 0x10, 7, "App.Widget", ".ctor", "void  ()"))
	write(dc, 300, base+50*ms, 0, methodPayload(0x10003000, 0x100, 7, "App.Unused", "Never", "void  ()"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRead(t *testing.T) {
	res, err := Read(bytes.NewReader(synthetic(t)), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Thrown != 6 || res.Undecoded != 1 || res.Dropped != 0 || res.Filtered != 0 || len(res.Exceptions) != 5 {
		t.Fatalf("%+v", res)
	}
	// The native frame is left out and counted once (its stack is
	// resolved once for its three exceptions).
	if res.UnresolvedFrames != 1 {
		t.Errorf("unresolved frames %d", res.UnresolvedFrames)
	}
	e := res.Exceptions[0]
	want := []Frame{
		{MethodName: ".ctor", TypeName: "App.Widget", ModuleName: "App", Signature: "void  ()"},
		{MethodName: "Run", TypeName: "App.Program", ModuleName: "App", Signature: "void  (int32)"},
		{MethodName: "Main", TypeName: "App.Program", ModuleName: "App", Signature: "void  (class System.String[])"},
	}
	if e.ID != 1 || e.TypeName != "System.InvalidOperationException" || e.Message != "invalid 0" || e.HResult != -2146233079 ||
		e.Stack.ThreadID != 100 || e.Rethrown || len(e.Stack.Frames) != 3 {
		t.Fatalf("%+v", e)
	}
	for i, f := range want {
		if e.Stack.Frames[i] != f {
			t.Errorf("frame %d: %+v, want %+v", i, e.Stack.Frames[i], f)
		}
	}
	if got := e.Timestamp; !got.Equal(res.Exceptions[1].Timestamp.Add(-time.Millisecond)) || got.Location() != time.UTC {
		t.Errorf("times %v %v", got, res.Exceptions[1].Timestamp)
	}
	f := res.Exceptions[3]
	if f.ID != 4 || f.TypeName != "System.FormatException" || !f.Rethrown || f.Stack.ThreadID != 200 ||
		len(f.Stack.Frames) != 2 || f.Stack.Frames[0].Name() != "App.Program.Run" {
		t.Fatalf("%+v", f)
	}
	if v0 := res.Exceptions[4]; v0.TypeName != TypeNotReported || v0.Message != "" || len(v0.Stack.Frames) != 2 {
		t.Errorf("version 0: %+v", v0)
	}
	if tc := TypeCounts(res.Exceptions); len(tc) != 3 || tc[0] != (TypeCount{"System.InvalidOperationException", 3}) {
		t.Errorf("type counts %+v", tc)
	}
}

func TestFiltersAndCaps(t *testing.T) {
	data := synthetic(t)
	cases := []struct {
		name  string
		cfg   Config
		types string
	}{
		{"include type", Config{Filters: Filters{Include: []Filter{{ExceptionType: "System.FormatException"}}}}, "System.FormatException"},
		{"include top frame", Config{Filters: Filters{Include: []Filter{{TypeName: "App.Widget", MethodName: ".ctor", ModuleName: "App.dll"}}}},
			"System.InvalidOperationException x3"},
		{"all fields must match", Config{Filters: Filters{Include: []Filter{{ExceptionType: "System.FormatException", MethodName: ".ctor"}}}}, ""},
		{"any include", Config{Filters: Filters{Include: []Filter{{MethodName: "Run"}, {ExceptionType: "System.InvalidOperationException"}}}},
			"System.InvalidOperationException x3, System.FormatException, (type not reported)"},
		{"exclude", Config{Filters: Filters{Exclude: []Filter{{ExceptionType: "System.InvalidOperationException"}}}}, "System.FormatException, (type not reported)"},
		{"not the outer frames", Config{Filters: Filters{Include: []Filter{{MethodName: "Main"}}}}, ""},
		{"cap", Config{MaxExceptions: 2}, "System.InvalidOperationException x2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Read(bytes.NewReader(data), c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i := 0; i < len(res.Exceptions); {
				j := i
				for j < len(res.Exceptions) && res.Exceptions[j].TypeName == res.Exceptions[i].TypeName {
					j++
				}
				s := res.Exceptions[i].TypeName
				if j-i > 1 {
					s += " x" + string(rune('0'+j-i))
				}
				got = append(got, s)
				i = j
			}
			if strings.Join(got, ", ") != c.types {
				t.Fatalf("%q, want %q", strings.Join(got, ", "), c.types)
			}
			for i, e := range res.Exceptions {
				if e.ID != i+1 {
					t.Errorf("ids %d at %d", e.ID, i)
				}
			}
			kept := len(res.Exceptions) + res.Filtered + res.Undecoded
			if c.cfg.MaxExceptions == 2 && (res.Dropped != 4 || kept != 2) || c.cfg.MaxExceptions == 0 && (res.Dropped != 0 || kept != 6) {
				t.Errorf("dropped %d, kept %d", res.Dropped, kept)
			}
		})
	}
}

func TestWriters(t *testing.T) {
	res, err := Read(bytes.NewReader(synthetic(t)), Config{Filters: Filters{Include: []Filter{{ExceptionType: "System.FormatException"}}}})
	if err != nil || len(res.Exceptions) != 1 {
		t.Fatal(err, res)
	}
	var text bytes.Buffer
	if err := WriteText(&text, res.Exceptions); err != nil {
		t.Fatal(err)
	}
	ts := res.Exceptions[0].Timestamp.Format(time.RFC3339Nano)
	want := "First chance exception at " + ts + "\n" +
		"System.FormatException: bad\nformat\n" +
		"   at App.Program.Run(int32)\n" +
		"   at App.Program.Main(class System.String[])\n\n"
	if text.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), want)
	}
	for _, seq := range []bool{false, true} {
		var js bytes.Buffer
		if err := WriteJSON(&js, res.Exceptions, seq); err != nil {
			t.Fatal(err)
		}
		line := js.String()
		if seq != strings.HasPrefix(line, "\x1e") || strings.Count(line, "\n") != 1 {
			t.Fatalf("seq %v: %q", seq, line)
		}
		var back Exception
		if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "\x1e")), &back); err != nil {
			t.Fatal(err)
		}
		if back.ID != 1 || back.TypeName != "System.FormatException" || back.Message != "bad\nformat" || !back.Timestamp.Equal(res.Exceptions[0].Timestamp) ||
			back.Stack.ThreadID != 200 || len(back.Stack.Frames) != 2 || back.Stack.Frames[0].MethodName != "Run" {
			t.Errorf("%+v", back)
		}
		for _, key := range []string{`"typeName":"System.FormatException"`, `"stack":{"threadId":200,"frames":[{"methodName":"Run","typeName":"App.Program","moduleName":"App"`} {
			if !strings.Contains(line, key) {
				t.Errorf("%s lacks %s", line, key)
			}
		}
	}
}

func TestSplitName(t *testing.T) {
	for _, c := range [][3]string{
		{"App.Widget..ctor", "App.Widget", ".ctor"},
		{"App.Widget..cctor", "App.Widget", ".cctor"},
		{"Main", "", "Main"},
		{"System.Collections.Generic.List`1[System.Int32].Add", "System.Collections.Generic.List`1[System.Int32]", "Add"},
		{"App.Outer+<Run>d__3.MoveNext", "App.Outer+<Run>d__3", "MoveNext"},
		{"App.G`1[Sys.A.B]", "App", "G`1[Sys.A.B]"},
	} {
		if typ, m := splitName(c[0]); typ != c[1] || m != c[2] {
			t.Errorf("%s: %q %q", c[0], typ, m)
		}
	}
}

// A stream that is not nettrace is an error; one cut short gives the
// exceptions before the cut, with a warning.
func TestReadDamaged(t *testing.T) {
	if _, err := Read(strings.NewReader("not a trace at all, not at all"), Config{}); err == nil {
		t.Fatal("read garbage")
	}
	data := synthetic(t)
	res, err := Read(bytes.NewReader(data[:len(data)-40]), Config{})
	if err == nil || res == nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "damaged") {
		t.Fatalf("%v %+v", err, res)
	}
}

// The frames of .NET 9+'s managed exception dispatch on top of the
// throwing method are left out; a stack of nothing else keeps its last.
func TestTrimDispatch(t *testing.T) {
	fs := []Frame{{MethodName: "DispatchEx", TypeName: "System.Runtime.EH"}, {MethodName: "RhThrowEx", TypeName: "System.Runtime.EH"},
		{MethodName: "Invalid", TypeName: "App.Thrower"}, {MethodName: "Leaf", TypeName: "System.Runtime.EH"}}
	if got := trimDispatch(fs); len(got) != 2 || got[0].MethodName != "Invalid" {
		t.Errorf("%+v", got)
	}
	if got := trimDispatch(fs[:2]); len(got) != 1 || got[0].MethodName != "RhThrowEx" {
		t.Errorf("%+v", got)
	}
	if got := trimDispatch(nil); len(got) != 0 {
		t.Errorf("%+v", got)
	}
}

// Read never panics on damaged input, and what it returns is consistent.
func FuzzRead(f *testing.F) {
	f.Add(synthetic(&testing.T{}))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, _ := Read(bytes.NewReader(data), Config{MaxExceptions: 100})
		if res == nil {
			return
		}
		if len(res.Exceptions)+res.Dropped+res.Filtered+res.Undecoded != res.Thrown {
			t.Fatalf("%d listed + %d dropped + %d filtered + %d undecoded != %d thrown", len(res.Exceptions), res.Dropped, res.Filtered, res.Undecoded, res.Thrown)
		}
		var buf bytes.Buffer
		if err := WriteText(&buf, res.Exceptions); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&buf, res.Exceptions, true); err != nil {
			t.Fatal(err)
		}
	})
}
