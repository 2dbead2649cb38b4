package ipc

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGoldenProcessInfoRequest(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteMessage(&buf, SetProcess, CmdProcessInfo, nil); err != nil {
		t.Fatal(err)
	}
	// "DOTNET_IPC_V1\0", size 20, set 0x04, id 0x00, reserved 0.
	want := unhex(t, "444f544e45545f4950435f563100 1400 04 00 0000")
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("got  % x\nwant % x", buf.Bytes(), want)
	}
}

func TestGoldenAttachProfilerRequest(t *testing.T) {
	req := &AttachProfilerRequest{
		AttachTimeoutMS: 5000,
		CLSID:           MustParseGUID("cf0d821e-299b-5307-a3d8-b283c03916dd"),
		Path:            "/p.so",
		ClientData:      []byte{1, 2},
	}
	payload, err := req.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteMessage(&buf, SetProfiler, CmdAttachProfiler, payload); err != nil {
		t.Fatal(err)
	}
	want := unhex(t, `
		444f544e45545f4950435f563100 3e00 03 01 0000
		88130000
		1e820dcf 9b29 0753 a3d8 b283c03916dd
		06000000 2f00 7000 2e00 7300 6f00 0000
		02000000 0102`)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("got  % x\nwant % x", buf.Bytes(), want)
	}
	var back AttachProfilerRequest
	if err := back.UnmarshalBinary(payload); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, req) {
		t.Fatalf("round trip: got %+v, want %+v", back, *req)
	}
}

func TestGoldenCollectTracing2(t *testing.T) {
	req := &CollectTracingRequest{Version: 2, CircularBufferMB: 256, Format: FormatNetTrace, RequestRundown: true,
		Providers: []TracingProvider{{Keywords: 0x10, Level: 4, Name: "A"}}}
	b, err := req.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := unhex(t, `00010000 01000000 01 01000000
		1000000000000000 04000000 02000000 4100 0000 00000000`)
	if !bytes.Equal(b, want) {
		t.Fatalf("got  % x\nwant % x", b, want)
	}
	if set, id := req.Command(); set != SetEventPipe || id != CmdCollectTracing2 {
		t.Fatalf("command 0x%02x%02x", set, id)
	}
}

func TestGoldenCollectTracing6(t *testing.T) {
	req := &CollectTracingRequest{Version: 6, CircularBufferMB: 1, Format: FormatNetTrace, RundownKeyword: 2, RequestStackwalk: true,
		Providers:  []TracingProvider{{Keywords: 1, Level: 5, Name: "A", Args: "k=v", Filter: &EventFilter{Enable: true, EventIDs: []uint32{7}}}},
		BufferMode: BufferBlock}
	b, err := req.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := unhex(t, `00000000 01000000 01000000 0200000000000000 01 01000000
		0100000000000000 05000000 02000000 4100 0000 04000000 6b00 3d00 7600 0000
		01 01000000 07000000
		01000000`)
	if !bytes.Equal(b, want) {
		t.Fatalf("got  % x\nwant % x", b, want)
	}
	// CT6 = CT5 + trailing u32.
	r5 := *req
	r5.Version = 5
	b5, _ := r5.MarshalBinary()
	if !bytes.Equal(b5, b[:len(b)-4]) {
		t.Fatalf("CT5 is not CT6 minus the buffer mode:\n% x\n% x", b5, b)
	}
}

func TestCollectTracingRoundTrip(t *testing.T) {
	prov := []TracingProvider{
		{Keywords: 0xFFFFFFFFFFFFFFFF, Level: 5, Name: "Microsoft-Windows-DotNETRuntime", Args: "a=b;\"c=d\"=e"},
		{Keywords: 1, Level: 1, Name: "Ünïcødé 🎉"},
	}
	for v := 1; v <= 6; v++ {
		req := &CollectTracingRequest{Version: v, CircularBufferMB: 64, Format: FormatNetTrace, Providers: prov}
		switch v {
		case 2:
			req.RequestRundown = true
		case 3:
			req.RequestRundown, req.RequestStackwalk = true, true
		case 4, 5, 6:
			req.RundownKeyword, req.RequestStackwalk = 0x80020139, true
		}
		if v >= 5 {
			req.Providers = append([]TracingProvider(nil), prov...)
			for i := range req.Providers {
				req.Providers[i].Filter = &EventFilter{Enable: i == 0, EventIDs: []uint32{uint32(i + 1), 9}}
			}
		}
		if v == 6 {
			req.BufferMode = BufferBlock
		}
		b, err := req.MarshalBinary()
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		set, id := req.Command()
		got, err := DecodeRequest(set, id, b)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if !reflect.DeepEqual(got, req) {
			t.Fatalf("v%d round trip:\n got %+v\nwant %+v", v, got, req)
		}
	}
}

func TestCollectTracingUserEventsRoundTrip(t *testing.T) {
	for _, v := range []int{5, 6} {
		req := &CollectTracingRequest{Version: v, SessionType: SessionUserEvents, RundownKeyword: 1,
			Providers: []TracingProvider{{Keywords: 1, Level: 4, Name: "P", Filter: &EventFilter{},
				Tracepoints: &TracepointConfig{Sets: []TracepointSet{{Name: "tp", EventIDs: []uint32{1, 2}}}}}}}
		b, err := req.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		set, id := req.Command()
		got, err := DecodeRequest(set, id, b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, req) {
			t.Fatalf("v%d round trip:\n got %+v\nwant %+v", v, got, req)
		}
	}
	bad := &CollectTracingRequest{Version: 5, SessionType: SessionUserEvents, Providers: []TracingProvider{{Name: "P"}}}
	if _, err := bad.MarshalBinary(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("user_events without tracepoints: %v", err)
	}
	old := &CollectTracingRequest{Version: 4, SessionType: SessionUserEvents, Providers: []TracingProvider{{Name: "P"}}}
	if _, err := old.MarshalBinary(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("user_events on CT4: %v", err)
	}
}

func TestRequestRoundTrips(t *testing.T) {
	clsid := MustParseGUID("{8A8CC829-CCF2-49FE-BBAE-0F022228071A}")
	reqs := []Request{
		&GenerateCoreDumpRequest{Version: 1, Path: "/tmp/core", Type: DumpFull, Flags: DumpLoggingEnabled},
		&GenerateCoreDumpRequest{Version: 2, Path: "", Type: DumpTriage, Flags: DumpCrashReportEnabled | DumpVerboseLoggingEnabled},
		&GenerateCoreDumpRequest{Version: 3, Path: "C:\\d\\x.dmp", Type: DumpWithHeap},
		&StopTracingRequest{SessionID: 0x1122334455667788},
		&AttachProfilerRequest{AttachTimeoutMS: 1, CLSID: clsid, Path: "/x.so"},
		&StartupProfilerRequest{CLSID: clsid, Path: "/y.so"},
		&SetEnvironmentVariableRequest{Name: "A", Value: ""},
		&EnablePerfMapRequest{Type: PerfMapJitDump},
		&ApplyStartupHookRequest{Path: "/hook.dll"},
		&EmptyRequest{Set: SetProcess, ID: CmdProcessInfo3},
		&EmptyRequest{Set: SetProcess, ID: CmdDisablePerfMap},
	}
	for _, req := range reqs {
		b, err := req.AppendBinary(nil)
		if err != nil {
			t.Fatalf("%T: %v", req, err)
		}
		set, id := req.Command()
		got, err := DecodeRequest(set, id, b)
		if err != nil {
			t.Fatalf("%s: %v", CommandName(set, id), err)
		}
		if !reflect.DeepEqual(got, req) {
			t.Fatalf("%s round trip:\n got %#v\nwant %#v", CommandName(set, id), got, req)
		}
		// Every truncation must fail cleanly.
		for n := 0; n < len(b); n++ {
			if _, err := DecodeRequest(set, id, b[:n]); err == nil {
				t.Fatalf("%s truncated to %d of %d bytes decoded without error", CommandName(set, id), n, len(b))
			}
		}
	}
	if _, err := (&GenerateCoreDumpRequest{Version: 1, Flags: DumpCrashReportEnabled}).MarshalBinary(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("dump v1 with crash report flag: %v", err)
	}
}

func TestGUID(t *testing.T) {
	g, err := ParseGUID("00112233-4455-6677-8899-aabbccddeeff")
	if err != nil {
		t.Fatal(err)
	}
	want := unhex(t, "33221100 5544 7766 8899 aabbccddeeff")
	if !bytes.Equal(g[:], want) {
		t.Fatalf("wire order: got % x, want % x", g[:], want)
	}
	if s := g.String(); s != "00112233-4455-6677-8899-aabbccddeeff" {
		t.Fatalf("String: %s", s)
	}
	for _, bad := range []string{"", "00112233445566778899aabbccddeeff", "0011223-34455-6677-8899-aabbccddeeff", "zz112233-4455-6677-8899-aabbccddeeff"} {
		if _, err := ParseGUID(bad); err == nil {
			t.Errorf("ParseGUID(%q) accepted", bad)
		}
	}
}

func TestStrings(t *testing.T) {
	// Count 0 is the empty string.
	d := newDecoder("t", unhex(t, "00000000"))
	if s := d.str("s"); s != "" || d.finish() != nil {
		t.Fatalf("count 0: %q %v", s, d.finish())
	}
	// The encoder writes "" as count 1.
	if b := appendString(nil, ""); !bytes.Equal(b, unhex(t, "01000000 0000")) {
		t.Fatalf("empty: % x", b)
	}
	// Surrogate pairs survive.
	d = newDecoder("t", appendString(nil, "a🎉"))
	if s := d.str("s"); s != "a🎉" {
		t.Fatalf("pair: %q %v", s, d.finish())
	}
	// A huge count fails before allocating.
	d = newDecoder("t", unhex(t, "ffffff7f 4100"))
	_ = d.str("s")
	var pe *ProtocolError
	if !errors.As(d.finish(), &pe) || !errors.Is(d.finish(), ErrProtocol) {
		t.Fatalf("huge count: %v", d.finish())
	}
}

func TestPayloadTooLarge(t *testing.T) {
	var buf bytes.Buffer
	err := WriteMessage(&buf, SetProcess, CmdApplyStartupHook, make([]byte, MaxPayloadSize+1))
	if !errors.Is(err, ErrPayloadTooLarge) || buf.Len() != 0 {
		t.Fatalf("err %v, wrote %d bytes", err, buf.Len())
	}
	if !strings.Contains(err.Error(), "ApplyStartupHook") || !strings.Contains(err.Error(), "65515") {
		t.Fatalf("message does not name the command and limit: %v", err)
	}
	if err := WriteMessage(&buf, SetProcess, CmdApplyStartupHook, make([]byte, MaxPayloadSize)); err != nil {
		t.Fatalf("exactly the limit: %v", err)
	}
	if buf.Len() != MaxMessageSize {
		t.Fatalf("wrote %d bytes", buf.Len())
	}
}

func msg(t testing.TB, set, id uint8, payload []byte) []byte {
	b, err := AppendMessage(nil, set, id, payload)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadReply(t *testing.T) {
	ok := msg(t, SetServer, CmdOK, AppendHRESULTReply(nil, 0))
	m, err := ReadReply(bytes.NewReader(ok))
	if err != nil || len(m.Payload) != 4 {
		t.Fatalf("OK: %v %v", m, err)
	}

	_, err = ReadReply(bytes.NewReader(msg(t, SetServer, CmdError, AppendHRESULTReply(nil, HRUnknownCommand))))
	var se *ServerError
	if !errors.As(err, &se) || se.HRESULT != HRUnknownCommand || !errors.Is(err, ErrUnknownCommand) {
		t.Fatalf("error reply: %v", err)
	}

	_, err = ReadReply(bytes.NewReader(msg(t, SetServer, CmdError, AppendErrorReply(nil, HRFail, "createdump failed", false))))
	if !errors.As(err, &se) || se.Message != "createdump failed" || !errors.Is(err, ErrFail) {
		t.Fatalf("dump3 error reply: %v", err)
	}

	// Short read in the payload says how many bytes were expected.
	_, err = ReadReply(bytes.NewReader(ok[:22]))
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Expected != 4 || pe.Got != 2 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short payload: %v", err)
	}
	if !strings.Contains(err.Error(), "expected 4 bytes") {
		t.Fatalf("message: %v", err)
	}
	// Short header.
	_, err = ReadReply(bytes.NewReader(ok[:7]))
	if !errors.As(err, &pe) || pe.Expected != HeaderSize || pe.Got != 7 {
		t.Fatalf("short header: %v", err)
	}
	// Empty stream.
	if _, err = ReadReply(bytes.NewReader(nil)); !errors.As(err, &pe) || pe.Got != 0 {
		t.Fatalf("empty: %v", err)
	}
	// Bad magic.
	bad := append([]byte(nil), ok...)
	bad[12] = '2'
	if _, err = ReadReply(bytes.NewReader(bad)); !errors.Is(err, ErrUnknownMagic) {
		t.Fatalf("bad magic: %v", err)
	}
	// Size smaller than the header.
	bad = append([]byte(nil), ok...)
	bad[14], bad[15] = 3, 0
	if _, err = ReadReply(bytes.NewReader(bad)); !errors.As(err, &pe) {
		t.Fatalf("tiny size: %v", err)
	}
	// Not a server reply.
	if _, err = ReadReply(bytes.NewReader(msg(t, SetProcess, CmdProcessInfo, nil))); !errors.As(err, &pe) {
		t.Fatalf("request as reply: %v", err)
	}
}

func TestServerErrorMessages(t *testing.T) {
	cases := []struct {
		err  ServerError
		want []string
		is   error
	}{
		{ServerError{CommandSet: SetProcess, CommandID: CmdProcessInfo, HRESULT: HRUnknownCommand},
			[]string{"ProcessInfo: this runtime does not support it; it needs .NET 5 or later", "0x80131385"}, ErrUnknownCommand},
		{ServerError{CommandSet: SetProfiler, CommandID: CmdAttachProfiler, HRESULT: HRProfilerAlreadyActive},
			[]string{"AttachProfiler", "CORPROF_E_PROFILER_ALREADY_ACTIVE", "detach"}, ErrProfilerAlreadyActive},
		{ServerError{CommandSet: SetProfiler, CommandID: CmdAttachProfiler, HRESULT: HRProfilerNotAttachable},
			[]string{"ICorProfilerCallback3", "InitializeForAttach"}, ErrProfilerNotAttachable},
		{ServerError{CommandSet: SetProfiler, CommandID: CmdAttachProfiler, HRESULT: HRModNotFound},
			[]string{"ERROR_MOD_NOT_FOUND", "absolute path"}, ErrModuleNotFound},
		{ServerError{CommandSet: SetProfiler, CommandID: CmdAttachProfiler, HRESULT: HRProcNotFound},
			[]string{"DllGetClassObject"}, ErrEntryPointNotFound},
		{ServerError{CommandSet: SetProfiler, CommandID: CmdAttachProfiler, HRESULT: HRClassNotAvailable},
			[]string{"CLSID"}, ErrClassNotAvailable},
		{ServerError{CommandSet: SetProfiler, CommandID: CmdAttachProfiler, HRESULT: HRTimeoutWaitingForConcurrentGC},
			[]string{"retry"}, ErrTimeout},
		{ServerError{CommandSet: SetProcess, CommandID: CmdApplyStartupHook, HRESULT: HRInvalidArg},
			[]string{"suspend"}, ErrInvalidArgument},
		{ServerError{CommandSet: SetDump, CommandID: CmdGenerateCoreDump3, HRESULT: HRFail, Message: "no ptrace"},
			[]string{"GenerateCoreDump3", `"no ptrace"`, "could not write the dump", "writable by the target's user"}, ErrFail},
		{ServerError{CommandSet: SetDump, CommandID: CmdGenerateCoreDump, HRESULT: HRFail},
			[]string{"could not write the dump", "ptrace"}, ErrFail},
		{ServerError{HRESULT: 0x8badf00d}, []string{"0x8BADF00D"}, nil},
	}
	for _, c := range cases {
		s := c.err.Error()
		for _, w := range c.want {
			if !strings.Contains(s, w) {
				t.Errorf("%q lacks %q", s, w)
			}
		}
		if c.is != nil && !errors.Is(&c.err, c.is) {
			t.Errorf("%q is not %v", s, c.is)
		}
		if errors.Is(&c.err, ErrBadEncoding) {
			t.Errorf("%q matches an unrelated sentinel", s)
		}
	}
	// Advice belongs to the command: no profiler advice for a dump, and a
	// BAD_ENCODING from a runtime older than the command says so.
	dump := (&ServerError{CommandSet: SetDump, CommandID: CmdGenerateCoreDump2, HRESULT: HRFail}).Error()
	if strings.Contains(dump, "profiler") {
		t.Errorf("dump E_FAIL gives profiler advice: %q", dump)
	}
	attach := (&ServerError{CommandSet: SetProfiler, CommandID: CmdAttachProfiler, HRESULT: HRFail}).Error()
	if !strings.Contains(attach, "absolute path") {
		t.Errorf("AttachProfiler E_FAIL lost its advice: %q", attach)
	}
	startup := &ServerError{CommandSet: SetProfiler, CommandID: CmdStartupProfiler, HRESULT: HRBadEncoding}
	if s := startup.Error(); !strings.Contains(s, "StartupProfiler needs .NET 6 or later") || strings.Contains(s, "retry") || !errors.Is(startup, ErrBadEncoding) {
		t.Errorf("StartupProfiler BAD_ENCODING: %q", s)
	}

	// Every documented code is in the table with a name and a meaning.
	for _, hr := range []uint32{HRBadEncoding, HRUnknownCommand, HRUnknownMagic, HRUnknownError, HRNotSupported, HRFail,
		HRNotYetAvailable, HRRuntimeUninitialized, HRInvalidArg, HRInsufficientBuffer, HREnvVarNotFound,
		HRProfilerAlreadyActive, HRProfilerNotAttachable, HRModNotFound, HRProcNotFound, HRClassNotAvailable,
		HRTimeoutWaitingForConcurrentGC, HRProfilerDetaching, HRProfilerNotYetInitialized, HRUnsupportedForAttachProfiler} {
		if name, meaning, ok := HRESULTInfo(hr); !ok || name == "" || meaning == "" {
			t.Errorf("0x%08X missing from the table", hr)
		}
	}
}

func TestProcessInfoRoundTrip(t *testing.T) {
	for v := 1; v <= 3; v++ {
		p := &ProcessInfo{Version: v, PID: 4242, RuntimeCookie: MustParseGUID("00112233-4455-6677-8899-aabbccddeeff"),
			CommandLine: "/usr/bin/dotnet app.dll", OS: "Linux", Arch: "x64"}
		if v >= 2 {
			p.ManagedEntrypointAssemblyName, p.ClrProductVersion = "app", "8.0.1+abc"
		}
		if v == 3 {
			p.PayloadVersion, p.RuntimeIdentifier = 1, "linux-x64"
		}
		b, err := p.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeProcessInfo(v, b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, p) {
			t.Fatalf("v%d: got %+v want %+v", v, got, p)
		}
		for n := 0; n < len(b); n++ {
			if _, err := DecodeProcessInfo(v, b[:n]); err == nil {
				t.Fatalf("v%d truncated to %d decoded", v, n)
			}
		}
	}
}

func TestEnvironment(t *testing.T) {
	env := []string{"A=1", "PATH=/bin", "E="}
	b := AppendEnvironment(nil, env)
	got, err := DecodeEnvironment(b)
	if err != nil || !reflect.DeepEqual(got, env) {
		t.Fatalf("%v %v", got, err)
	}
	// nIncomingBytes 4 with a zero count is valid.
	if got, err := DecodeEnvironment(unhex(t, "00000000")); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v %v", got, err)
	}
	if _, err := DecodeEnvironment(unhex(t, "ffffffff")); err == nil {
		t.Fatal("huge count accepted")
	}
	r, err := DecodeEnvironmentReply(unhex(t, "10000000 0000"))
	if err != nil || r.IncomingBytes != 16 {
		t.Fatalf("%v %v", r, err)
	}
}

func TestAdvertise(t *testing.T) {
	a := Advertise{RuntimeCookie: MustParseGUID("00112233-4455-6677-8899-aabbccddeeff"), PID: 77}
	b, _ := a.MarshalBinary()
	want := unhex(t, "414456525f563100 33221100 5544 7766 8899 aabbccddeeff 4d00000000000000 0000")
	if !bytes.Equal(b, want) {
		t.Fatalf("got % x\nwant % x", b, want)
	}
	got, err := ReadAdvertise(bytes.NewReader(b))
	if err != nil || got != a {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := ReadAdvertise(bytes.NewReader(b[:20])); err == nil {
		t.Fatal("short advertise accepted")
	}
	b[0] = 'X'
	if _, err := ReadAdvertise(bytes.NewReader(b)); err == nil {
		t.Fatal("bad magic accepted")
	}
}

func TestCommandTable(t *testing.T) {
	seen := map[[2]uint8]bool{}
	for _, c := range Commands() {
		if seen[[2]uint8{c.Set, c.ID}] {
			t.Errorf("duplicate %s", c.Name)
		}
		seen[[2]uint8{c.Set, c.ID}] = true
		if c.Name == "" || c.Since == "" || c.Major < 3 {
			t.Errorf("incomplete entry %+v", c)
		}
	}
	if id := freeCommandID(t, SetProcess); CommandName(SetProcess, id) != fmt.Sprintf("command 0x04%02X", id) {
		t.Error(CommandName(SetProcess, id))
	}
}

// freeCommandID returns the lowest id of set that the command table
// does not use.
func freeCommandID(t *testing.T, set uint8) uint8 {
	for id := range uint8(255) {
		if _, ok := LookupCommand(set, id); !ok {
			return id
		}
	}
	t.Fatalf("no free id in set %d", set)
	return 0
}

// TestInvalidArgAdvicePerCommand: E_INVALIDARG means a different thing for
// each startup command; neither gets the other's advice.
func TestInvalidArgAdvicePerCommand(t *testing.T) {
	hook := (&ServerError{CommandSet: SetProcess, CommandID: CmdApplyStartupHook, HRESULT: HRInvalidArg}).Error()
	prof := (&ServerError{CommandSet: SetProfiler, CommandID: CmdStartupProfiler, HRESULT: HRInvalidArg}).Error()
	if !strings.Contains(hook, "absolute path of an assembly") || strings.Contains(hook, "suspended at startup (") {
		t.Errorf("ApplyStartupHook E_INVALIDARG: %s", hook)
	}
	if !strings.Contains(prof, "suspended at startup") {
		t.Errorf("StartupProfiler E_INVALIDARG: %s", prof)
	}
	if other := (&ServerError{CommandSet: SetProcess, CommandID: CmdSetEnvironmentVariable, HRESULT: HRInvalidArg}).Error(); strings.Contains(other, "startup") {
		t.Errorf("SetEnvironmentVariable E_INVALIDARG speaks of startup commands: %s", other)
	}
}
