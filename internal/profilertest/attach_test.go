//go:build linux

package profilertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/profilertest"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/transport"
)

// HRESULTs the runtime answers AttachProfiler with (see
// /work/shared/docs/profiler-attach-verified.md).
const (
	hrOK                 = 0x00000000
	hrAlreadyActive      = 0x8013136A // CORPROF_E_PROFILER_ALREADY_ACTIVE
	hrClassNotAvailable  = 0x80040111 // CLASS_E_CLASSNOTAVAILABLE
	hrProcNotFound       = 0x8007007F // HRESULT_FROM_WIN32(ERROR_PROC_NOT_FOUND)
	hrModNotFound        = 0x8007007E // HRESULT_FROM_WIN32(ERROR_MOD_NOT_FOUND)
	hrFail               = 0x80004005 // E_FAIL
	hrNotAttachable      = 0x80131368 // CORPROF_E_PROFILER_NOT_ATTACHABLE
	attachTimeoutMS      = 5000
	waitForProfilerEvent = 15 * time.Second
)

// fixture is a running Basic target with the profiler log wired up. The
// target is started WITHOUT any startup-profiler environment: everything the
// tests see comes from attaching later.
type fixture struct {
	tg    *dotnettest.Target
	log   string
	lib   string
	clsid [16]byte
}

func start(t *testing.T, rt *dotnettest.Runtime) *fixture {
	t.Helper()
	lib := profilertest.Build(t, profilertest.Standard)
	dll := rt.Build(t, "Basic")
	logPath := filepath.Join(t.TempDir(), "profiler.log")
	tg := rt.Start(t, dll, nil, &dotnettest.Options{Env: []string{
		profilertest.LogEnv + "=" + logPath,
		"CORECLR_ENABLE_PROFILING=0", // no startup profiler, whatever the test's own environment says
		"CORECLR_PROFILER_PATH=",
	}})
	clsid, err := profilertest.GUIDBytes(profilertest.CLSID)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{tg: tg, log: logPath, lib: lib, clsid: clsid}
	if f.mapped(t, lib) {
		t.Fatalf("%s is mapped in the new target before any attach", lib)
	}
	if evs := f.events(t); len(evs) != 0 {
		t.Fatalf("the profiler logged before any attach: %v", profilertest.Names(evs))
	}
	return f
}

// attach sends AttachProfiler through the diag client and returns the
// HRESULT of the reply (0 for success) and the client's error.
func (f *fixture) attach(t *testing.T, lib string, clsid [16]byte, data []byte) (uint32, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := diag.NewClient(transport.Endpoint{Network: transport.NetworkUnix, Address: f.tg.Socket, PID: f.tg.PID}, nil)
	err := c.AttachProfiler(ctx, diag.AttachProfilerRequest{Path: lib, CLSID: ipc.GUID(clsid), ClientData: data, AttachTimeout: attachTimeoutMS * time.Millisecond})
	if err == nil {
		return 0, nil
	}
	var se *ipc.ServerError
	if !errors.As(err, &se) {
		t.Fatalf("AttachProfiler failed without a runtime answer: %v", err)
	}
	return se.HRESULT, err
}

// rawAttach sends AttachProfiler with the test's own minimal encoder
// (raw_test.go), independent of the ipc and diag packages.
func (f *fixture) rawAttach(t *testing.T, lib string, clsid [16]byte, data []byte) uint32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hr, err := rawAttach(ctx, f.tg.Socket, attachTimeoutMS, clsid, lib, data)
	if err != nil {
		t.Fatalf("AttachProfiler (raw): %v", err)
	}
	return hr
}

func (f *fixture) events(t *testing.T) []profilertest.Event {
	t.Helper()
	evs, err := profilertest.ReadLog(f.log)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// waitEvents waits until the log holds an event named name after the first
// skip events, and returns the events after skip.
func (f *fixture) waitEvents(t *testing.T, skip int, name string) []profilertest.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitForProfilerEvent)
	defer cancel()
	evs, err := profilertest.WaitLog(ctx, f.log, func(evs []profilertest.Event) bool {
		return len(evs) > skip && profilertest.Count(evs[skip:], name) > 0
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs[skip:]
}

func (f *fixture) mapped(t *testing.T, lib string) bool {
	t.Helper()
	m, err := profilertest.Mapped(f.tg.PID, lib)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (f *fixture) waitUnmapped(t *testing.T, lib string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitForProfilerEvent)
	defer cancel()
	if err := profilertest.WaitUnmapped(ctx, f.tg.PID, lib); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) ping(t *testing.T) {
	t.Helper()
	f.tg.Send(t, "ping")
	f.tg.Expect(t, "PONG", 10*time.Second)
}

// checkData checks the last initialize-for-attach event recorded exactly data
// and the given mode.
func checkData(t *testing.T, evs []profilertest.Event, data []byte, mode string) {
	t.Helper()
	ev, ok := profilertest.Last(evs, "initialize-for-attach")
	if !ok {
		t.Fatalf("no initialize-for-attach event in %v", profilertest.Names(evs))
	}
	got, err := ev.ClientData()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("the profiler received %d bytes % x, want %d bytes % x", len(got), got, len(data), data)
	}
	if ev.Fields["mode"] != mode {
		t.Fatalf("profiler mode %q, want %q", ev.Fields["mode"], mode)
	}
}

func hrf(hr uint32) string { return fmt.Sprintf("0x%08X", hr) }

func wantHR(t *testing.T, what string, got, want uint32) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: AttachProfiler answered HRESULT %s, want %s", what, hrf(got), hrf(want))
	}
}

// wantErr checks the HRESULT of a diag client error and that it matches its
// ipc sentinel.
func wantErr(t *testing.T, what string, hr uint32, err error, want uint32, sentinel error) {
	t.Helper()
	wantHR(t, what, hr, want)
	if want == hrOK {
		return
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Fatalf("%s: errors.Is(%v, %v) = false", what, err, sentinel)
	}
	if name, _, _ := ipc.HRESULTInfo(want); name == "" || !strings.Contains(err.Error(), name) {
		t.Fatalf("%s: error %q does not name the HRESULT", what, err)
	}
}

// TestAttachDetachReattach attaches to a process that never loaded a
// profiler at startup, has the profiler detach itself, checks it is really
// unloaded, attaches again, and finally checks a second attach while one is
// active is refused. On every runtime: 3.1, 8, 10 and 11.
func TestAttachDetachReattach(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Majors, testAttachDetachReattach)
}

func testAttachDetachReattach(t *testing.T, rt *dotnettest.Runtime) {
	f := start(t, rt)

	all := make([]byte, 256) // every byte value, NUL and '\n' included
	for i := range all {
		all[i] = byte(i)
	}
	big := make([]byte, 16<<10)
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	for i, data := range [][]byte{
		append([]byte("detach\n"), all...),
		append([]byte("detach\n"), big...),
	} {
		skip := len(f.events(t))
		if i == 0 {
			// The first cycle goes through the test's own encoder, as a
			// cross-check of the ipc/diag encoding used everywhere else.
			wantHR(t, "raw attach with detach request", f.rawAttach(t, f.lib, f.clsid, data), hrOK)
		} else {
			hr, err := f.attach(t, f.lib, f.clsid, data)
			wantErr(t, "attach with detach request", hr, err, hrOK, nil)
		}
		evs := f.waitEvents(t, skip, "unload")
		checkData(t, evs, data, "detach")
		want := []string{"load", "get-class-object", "create-instance", "initialize-for-attach",
			"initialize-for-attach-result", "attach-complete", "request-detach", "detach-succeeded",
			"final-release", "unload"}
		if got := profilertest.Names(evs); !slices.Equal(got, want) {
			t.Fatalf("cycle %d: profiler events %v, want %v", i, got, want)
		}
		if ev, _ := profilertest.Last(evs, "request-detach"); ev.Fields["hr"] != "0x00000000" {
			t.Fatalf("RequestProfilerDetach failed inside the profiler: %s", ev.Line)
		}
		f.waitUnmapped(t, f.lib)
		f.ping(t)
	}

	// Empty client data: the profiler stays attached.
	skip := len(f.events(t))
	hr, err := f.attach(t, f.lib, f.clsid, nil)
	wantErr(t, "attach with empty data", hr, err, hrOK, nil)
	evs := f.waitEvents(t, skip, "attach-complete")
	checkData(t, evs, nil, "stay")
	time.Sleep(700 * time.Millisecond) // longer than the runtime's 300 ms detach check
	if !f.mapped(t, f.lib) {
		t.Fatal("the profiler left the process although it was told to stay")
	}
	if evs := f.events(t)[skip:]; profilertest.Count(evs, "detach-succeeded") != 0 || profilertest.Count(evs, "unload") != 0 {
		t.Fatalf("the profiler detached although it was told to stay: %v", profilertest.Names(evs))
	}
	f.ping(t)

	// A second profiler while one is active is refused, and the first stays.
	skip = len(f.events(t))
	hr, err = f.attach(t, f.lib, f.clsid, []byte("detach"))
	wantErr(t, "second attach", hr, err, hrAlreadyActive, ipc.ErrProfilerAlreadyActive)
	if evs := f.events(t)[skip:]; profilertest.Count(evs, "initialize-for-attach") != 0 {
		t.Fatalf("the runtime initialized a second profiler instance: %v", profilertest.Names(evs))
	}
	if !f.mapped(t, f.lib) {
		t.Fatal("the active profiler was unloaded by the refused second attach")
	}
	f.ping(t)
}

// TestAttachFailures sends every kind of bad attach to one target: each
// gets its own HRESULT, the target keeps running, and a good attach still
// works afterwards. On every runtime: 3.1, 8, 10 and 11.
func TestAttachFailures(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Majors, testAttachFailures)
}

func testAttachFailures(t *testing.T, rt *dotnettest.Runtime) {
	f := start(t, rt)
	noEntry := profilertest.Build(t, profilertest.NoEntry)
	otherCLSID, err := profilertest.GUIDBytes("{0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0}")
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "no-such-profiler.so")
	cases := []struct {
		name     string
		lib      string
		sentinel error
		clsid    [16]byte
		data     []byte
		want     uint32
		events   []string // the profiler events this attach causes
		flag     string   // a flag the last but one of them must carry
		initHR   uint32   // what InitializeForAttach returned, when it ran
	}{
		{"wrong CLSID", f.lib, ipc.ErrClassNotAvailable, otherCLSID, nil, hrClassNotAvailable,
			[]string{"load", "get-class-object", "unload"}, "clsid-mismatch", 0},
		{"no DllGetClassObject", noEntry, ipc.ErrEntryPointNotFound, f.clsid, nil, hrProcNotFound,
			[]string{"load", "unload"}, "", 0},
		{"missing file", missing, ipc.ErrModuleNotFound, f.clsid, nil, hrModNotFound, nil, "", 0},
		{"relative path", filepath.Base(f.lib), ipc.ErrModuleNotFound, f.clsid, nil, hrModNotFound, nil, "", 0},
		{"InitializeForAttach E_FAIL", f.lib, ipc.ErrFail, f.clsid, []byte("fail\nextra"), hrFail,
			[]string{"load", "get-class-object", "create-instance", "initialize-for-attach",
				"initialize-for-attach-result", "final-release", "unload"}, "", 0x80004005},
		{"InitializeForAttach E_NOTIMPL", f.lib, ipc.ErrProfilerNotAttachable, f.clsid, []byte("notimpl"), hrNotAttachable,
			[]string{"load", "get-class-object", "create-instance", "initialize-for-attach",
				"initialize-for-attach-result", "final-release", "unload"}, "", 0x80004001},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			skip := len(f.events(t))
			hr, err := f.attach(t, c.lib, c.clsid, c.data)
			wantErr(t, c.name, hr, err, c.want, c.sentinel)
			var evs []profilertest.Event
			if len(c.events) > 0 {
				evs = f.waitEvents(t, skip, "unload")
			} else {
				evs = f.events(t)[skip:]
			}
			if got := profilertest.Names(evs); !slices.Equal(got, c.events) {
				t.Fatalf("profiler events %v, want %v", got, c.events)
			}
			if c.flag != "" && !slices.Contains(evs[len(evs)-2].Flags, c.flag) {
				t.Fatalf("%q lacks %q", evs[len(evs)-2].Line, c.flag)
			}
			if c.data != nil {
				checkData(t, evs, c.data, strings.SplitN(string(c.data), "\n", 2)[0])
				ev, _ := profilertest.Last(evs, "initialize-for-attach-result")
				if hr, err := ev.HR(); err != nil || hr != c.initHR {
					t.Fatalf("InitializeForAttach returned %s (%v)", ev.Line, err)
				}
			}
			if _, err := os.Stat(c.lib); err == nil && filepath.IsAbs(c.lib) && f.mapped(t, c.lib) {
				t.Fatalf("%s stays mapped after the failed attach", c.lib)
			}
			f.ping(t)
		})
	}

	// Binary data without a command word: the profiler attaches and stays.
	data := []byte{0x00, 0xff, 0x0a, 0x80, 'd', 'e', 't', 'a', 'c', 'h'}
	skip := len(f.events(t))
	hr, err := f.attach(t, f.lib, f.clsid, data)
	wantErr(t, "good attach after the failures", hr, err, hrOK, nil)
	evs := f.waitEvents(t, skip, "attach-complete")
	checkData(t, evs, data, "stay")
	if !f.mapped(t, f.lib) {
		t.Fatal("the attached profiler is not mapped")
	}
	f.ping(t)

	// The process exits normally with the profiler attached: the runtime
	// calls its Shutdown callback.
	f.tg.Send(t, "exit 0")
	select {
	case <-f.tg.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("target did not exit")
	}
	if evs := f.events(t)[skip:]; profilertest.Count(evs, "shutdown") != 1 {
		t.Fatalf("no shutdown callback at exit: %v", profilertest.Names(evs))
	}
}
