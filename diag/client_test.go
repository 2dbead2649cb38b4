package diag_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
)

func newServer(t *testing.T, cfg ipctest.Config) (*ipctest.Server, *diag.Client) {
	t.Helper()
	srv, err := ipctest.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	return srv, diag.NewClient(srv, &diag.Config{Timeout: 5 * time.Second})
}

func sent(srv *ipctest.Server) []string {
	var names []string
	for _, r := range srv.Requests() {
		names = append(names, ipc.CommandName(r.Header.CommandSet, r.Header.CommandID))
	}
	return names
}

func TestProcessInfoFallback(t *testing.T) {
	cases := []struct {
		rt      ipctest.Runtime
		version int
		sent    []string
	}{
		{ipctest.NET11, 3, []string{"ProcessInfo3"}},
		{ipctest.NET8, 3, []string{"ProcessInfo3"}},
		{ipctest.NET7, 2, []string{"ProcessInfo3", "ProcessInfo2"}},
		{ipctest.NET6, 2, []string{"ProcessInfo3", "ProcessInfo2"}},
		{ipctest.NET5, 1, []string{"ProcessInfo3", "ProcessInfo2", "ProcessInfo"}},
	}
	for _, c := range cases {
		t.Run(c.rt.String(), func(t *testing.T) {
			srv, cl := newServer(t, ipctest.Config{Runtime: c.rt, PID: 4321,
				ProcessInfo: ipc.ProcessInfo{CommandLine: "/usr/bin/dotnet x.dll", ClrProductVersion: "9.9.9"}})
			info, err := cl.ProcessInfo(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want := srv.Info()
			if info.Version != c.version || info.PID != 4321 || info.CommandLine != "/usr/bin/dotnet x.dll" ||
				info.RuntimeCookie != want.RuntimeCookie || info.RuntimeCookie.IsZero() || info.OS != "Linux" || info.Arch != "x64" {
				t.Fatalf("got %+v", info)
			}
			if c.version >= 2 && (info.ClrProductVersion != "9.9.9" || info.ManagedEntrypointAssemblyName != "app") {
				t.Fatalf("v2 fields: %+v", info)
			}
			if c.version < 2 && info.ClrProductVersion != "" {
				t.Fatalf("v1 has v2 fields: %+v", info)
			}
			if (c.version == 3) != (info.RuntimeIdentifier == "linux-x64") {
				t.Fatalf("RID: %+v", info)
			}
			if got := sent(srv); !reflect.DeepEqual(got, c.sent) {
				t.Fatalf("sent %v, want %v", got, c.sent)
			}
		})
	}
	t.Run("3.1", func(t *testing.T) {
		srv, cl := newServer(t, ipctest.Config{Runtime: ipctest.NET3_1})
		_, err := cl.ProcessInfo(context.Background())
		if !errors.Is(err, ipc.ErrUnknownCommand) {
			t.Fatalf("err %v", err)
		}
		if !strings.HasPrefix(err.Error(), "ProcessInfo: this runtime does not support it; it needs .NET 5 or later") {
			t.Fatalf("message: %v", err)
		}
		if got := len(srv.Requests()); got != 3 {
			t.Fatalf("%d requests", got)
		}
	})
}

func TestEnvironment(t *testing.T) {
	env := []string{"PATH=/bin", "HOME=/root", "EMPTY=", "UNI=é🎉"}
	srv, cl := newServer(t, ipctest.Config{Runtime: ipctest.NET6, Environment: env})
	got, err := cl.Environment(context.Background())
	if err != nil || !reflect.DeepEqual(got, env) {
		t.Fatalf("%q %v", got, err)
	}
	if err := cl.SetEnvironmentVariable(context.Background(), "HOME", "/home/x"); err != nil {
		t.Fatal(err)
	}
	if err := cl.SetEnvironmentVariable(context.Background(), "NEW", "1"); err != nil {
		t.Fatal(err)
	}
	got, _ = cl.Environment(context.Background())
	want := []string{"PATH=/bin", "HOME=/home/x", "EMPTY=", "UNI=é🎉", "NEW=1"}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(srv.Environment(), want) {
		t.Fatalf("after set: %q", got)
	}
	if err := cl.SetEnvironmentVariable(context.Background(), "", "x"); !errors.Is(err, ipc.ErrInvalidArgument) {
		t.Fatalf("empty name: %v", err)
	}

	_, cl5 := newServer(t, ipctest.Config{Runtime: ipctest.NET5})
	err = cl5.SetEnvironmentVariable(context.Background(), "A", "B")
	if !errors.Is(err, ipc.ErrUnknownCommand) || !strings.Contains(err.Error(), "SetEnvironmentVariable: this runtime does not support it; it needs .NET 6") {
		t.Fatalf(".NET 5: %v", err)
	}
	if env, err := cl5.Environment(context.Background()); err != nil || len(env) != 0 || env == nil {
		t.Fatalf(".NET 5 empty env: %q %v", env, err)
	}
}

func TestEnvironmentLimit(t *testing.T) {
	srv, _ := newServer(t, ipctest.Config{Environment: []string{"A=0123456789"}})
	cl := diag.NewClient(srv, &diag.Config{MaxEnvironmentBytes: 10})
	_, err := cl.Environment(context.Background())
	if err == nil || !strings.Contains(err.Error(), "MaxEnvironmentBytes") {
		t.Fatalf("err %v", err)
	}
}

func TestWriteDumpFallback(t *testing.T) {
	cases := []struct {
		rt   ipctest.Runtime
		sent []string
	}{
		{ipctest.NET8, []string{"GenerateCoreDump3"}},
		{ipctest.NET7, []string{"GenerateCoreDump3"}},
		{ipctest.NET6, []string{"GenerateCoreDump3", "GenerateCoreDump2"}},
		{ipctest.NET5, []string{"GenerateCoreDump3", "GenerateCoreDump2", "GenerateCoreDump"}},
		{ipctest.NET3_1, []string{"GenerateCoreDump3", "GenerateCoreDump2", "GenerateCoreDump"}},
	}
	for _, c := range cases {
		t.Run(c.rt.String(), func(t *testing.T) {
			srv, cl := newServer(t, ipctest.Config{Runtime: c.rt})
			if err := cl.WriteDump(context.Background(), diag.DumpRequest{Path: "/tmp/core.1", Diagnostics: true}); err != nil {
				t.Fatal(err)
			}
			if got := sent(srv); !reflect.DeepEqual(got, c.sent) {
				t.Fatalf("sent %v, want %v", got, c.sent)
			}
			d := srv.Dumps()
			if len(d) != 1 || d[0].Path != "/tmp/core.1" || d[0].Type != ipc.DumpFull || d[0].Flags != ipc.DumpLoggingEnabled {
				t.Fatalf("dumps %+v", d)
			}
		})
	}
	t.Run("crash report on 3.1", func(t *testing.T) {
		srv, cl := newServer(t, ipctest.Config{Runtime: ipctest.NET3_1})
		err := cl.WriteDump(context.Background(), diag.DumpRequest{Path: "/tmp/c", CrashReport: true})
		if err == nil || !strings.Contains(err.Error(), "crash reports") || len(srv.Dumps()) != 0 {
			t.Fatalf("err %v, dumps %v", err, srv.Dumps())
		}
	})
	t.Run("dump3 error message", func(t *testing.T) {
		_, cl := newServer(t, ipctest.Config{DumpHRESULT: ipc.HRFail, DumpMessage: "Problem launching createdump"})
		err := cl.WriteDump(context.Background(), diag.DumpRequest{Path: "/tmp/c", Type: ipc.DumpTriage})
		var se *ipc.ServerError
		if !errors.As(err, &se) || se.Message != "Problem launching createdump" || se.CommandID != ipc.CmdGenerateCoreDump3 || !errors.Is(err, ipc.ErrFail) {
			t.Fatalf("err %v", err)
		}
		if !strings.Contains(err.Error(), "GenerateCoreDump3") || !strings.Contains(err.Error(), "Problem launching createdump") {
			t.Fatalf("message %v", err)
		}
	})
	t.Run("dump2 error", func(t *testing.T) {
		_, cl := newServer(t, ipctest.Config{Runtime: ipctest.NET6, DumpHRESULT: ipc.HRNotSupported})
		err := cl.WriteDump(context.Background(), diag.DumpRequest{Path: "/tmp/c"})
		if !errors.Is(err, ipc.ErrNotSupported) || !strings.HasPrefix(err.Error(), "GenerateCoreDump2:") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("empty path", func(t *testing.T) {
		srv, cl := newServer(t, ipctest.Config{})
		if err := cl.WriteDump(context.Background(), diag.DumpRequest{}); !errors.Is(err, ipc.ErrInvalidArgument) || len(srv.Requests()) != 0 {
			t.Fatalf("err %v", err)
		}
	})
}

var clsid = ipc.MustParseGUID("cf0d821e-299b-5307-a3d8-b283c03916dd")

func TestAttachProfiler(t *testing.T) {
	srv, cl := newServer(t, ipctest.Config{Runtime: ipctest.NET3_1})
	req := diag.AttachProfilerRequest{Path: "/opt/prof.so", CLSID: clsid, ClientData: []byte("hello"), AttachTimeout: 1500 * time.Millisecond}
	if err := cl.AttachProfiler(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0].Request.(*ipc.AttachProfilerRequest)
	if r.AttachTimeoutMS != 1500 || r.CLSID != clsid || r.Path != "/opt/prof.so" || string(r.ClientData) != "hello" {
		t.Fatalf("server saw %+v", r)
	}
	err := cl.AttachProfiler(context.Background(), req)
	if !errors.Is(err, ipc.ErrProfilerAlreadyActive) || !strings.Contains(err.Error(), "AttachProfiler: a profiler is already attached") {
		t.Fatalf("second attach: %v", err)
	}
	srv.DetachProfiler()
	req.AttachTimeout = 0
	if err := cl.AttachProfiler(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if ms := srv.Requests()[2].Request.(*ipc.AttachProfilerRequest).AttachTimeoutMS; ms != 30000 {
		t.Fatalf("default timeout %d ms", ms)
	}
	if err := cl.AttachProfiler(context.Background(), diag.AttachProfilerRequest{CLSID: clsid}); !errors.Is(err, ipc.ErrInvalidArgument) {
		t.Fatalf("empty path: %v", err)
	}
	if err := cl.AttachProfiler(context.Background(), diag.AttachProfilerRequest{Path: "/x", AttachTimeout: -1}); !errors.Is(err, ipc.ErrInvalidArgument) {
		t.Fatalf("negative timeout: %v", err)
	}
}

func TestAttachProfilerHRESULTs(t *testing.T) {
	for _, c := range []struct {
		hr   uint32
		is   error
		text string
	}{
		{ipc.HRProfilerNotAttachable, ipc.ErrProfilerNotAttachable, "ICorProfilerCallback3"},
		{ipc.HRModNotFound, ipc.ErrModuleNotFound, "absolute path"},
		{ipc.HRProcNotFound, ipc.ErrEntryPointNotFound, "DllGetClassObject"},
		{ipc.HRClassNotAvailable, ipc.ErrClassNotAvailable, "CLSID"},
		{ipc.HRTimeoutWaitingForConcurrentGC, ipc.ErrTimeout, "retry"},
		{ipc.HRFail, ipc.ErrFail, "E_FAIL"},
	} {
		_, cl := newServer(t, ipctest.Config{ProfilerHRESULT: c.hr})
		err := cl.AttachProfiler(context.Background(), diag.AttachProfilerRequest{Path: "/p.so", CLSID: clsid})
		var se *ipc.ServerError
		if !errors.As(err, &se) || se.HRESULT != c.hr || !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("0x%08X: %v", c.hr, err)
		}
	}
}

func TestStartupCommands(t *testing.T) {
	srv, cl := newServer(t, ipctest.Config{Runtime: ipctest.NET8, Suspended: true})
	ctx := context.Background()
	if err := cl.SetStartupProfiler(ctx, clsid, "/p.so"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ApplyStartupHook(ctx, "/hook.dll"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ResumeRuntime(ctx); err != nil {
		t.Fatal(err)
	}
	if srv.Suspended() || !reflect.DeepEqual(srv.StartupHooks(), []string{"/hook.dll"}) {
		t.Fatalf("suspended %v hooks %v", srv.Suspended(), srv.StartupHooks())
	}
	// Once running, both are refused with INVALIDARG.
	err := cl.ApplyStartupHook(ctx, "/hook2.dll")
	if !errors.Is(err, ipc.ErrInvalidArgument) || !strings.Contains(err.Error(), "suspend") {
		t.Fatalf("hook after resume: %v", err)
	}
	if err := cl.SetStartupProfiler(ctx, clsid, "/p.so"); !errors.Is(err, ipc.ErrInvalidArgument) {
		t.Fatalf("startup profiler after resume: %v", err)
	}
	// Resume is a no-op when running.
	if err := cl.ResumeRuntime(ctx); err != nil {
		t.Fatal(err)
	}
	// .NET 6 lacks ApplyStartupHook.
	_, cl6 := newServer(t, ipctest.Config{Runtime: ipctest.NET6, Suspended: true})
	if err := cl6.ApplyStartupHook(ctx, "/h.dll"); !errors.Is(err, ipc.ErrUnknownCommand) || !strings.Contains(err.Error(), ".NET 8") {
		t.Fatalf(".NET 6 hook: %v", err)
	}
	if err := cl6.SetStartupProfiler(ctx, clsid, "/p.so"); err != nil {
		t.Fatalf(".NET 6 startup profiler: %v", err)
	}
}

func TestPerfMap(t *testing.T) {
	srv, cl := newServer(t, ipctest.Config{})
	ctx := context.Background()
	if err := cl.EnablePerfMap(ctx, ipc.PerfMapJitDump); err != nil || srv.PerfMap() != ipc.PerfMapJitDump {
		t.Fatalf("%v %v", err, srv.PerfMap())
	}
	if err := cl.DisablePerfMap(ctx); err != nil || srv.PerfMap() != ipc.PerfMapDisabled {
		t.Fatalf("%v %v", err, srv.PerfMap())
	}
	if err := cl.EnablePerfMap(ctx, 9); !errors.Is(err, ipc.ErrInvalidArgument) {
		t.Fatalf("bad type: %v", err)
	}
	_, cl7 := newServer(t, ipctest.Config{Runtime: ipctest.NET7})
	if err := cl7.DisablePerfMap(ctx); !errors.Is(err, ipc.ErrUnknownCommand) {
		t.Fatalf(".NET 7: %v", err)
	}
}

func TestTracingStream(t *testing.T) {
	payload := []byte("Nettrace\x00fake-stream")
	srv, cl := newServer(t, ipctest.Config{Runtime: ipctest.NET3_1, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		if _, err := s.Stream.Write(payload); err != nil {
			return err
		}
		<-s.Stopped
		_, err := s.Stream.Write([]byte("-rundown"))
		return err
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := &ipc.CollectTracingRequest{Version: 2, CircularBufferMB: 64, Format: ipc.FormatNetTrace, RequestRundown: true,
		Providers: []ipc.TracingProvider{{Keywords: 1, Level: 4, Name: "Microsoft-Windows-DotNETRuntime"}}}
	id, stream, err := cl.StartTracing(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	head := make([]byte, len(payload))
	if _, err := io.ReadFull(stream, head); err != nil || !bytes.Equal(head, payload) {
		t.Fatalf("%q %v", head, err)
	}
	if err := cl.StopTracing(ctx, id); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(stream)
	if err != nil || string(rest) != "-rundown" {
		t.Fatalf("%q %v", rest, err)
	}
	got := srv.Requests()[0].Request.(*ipc.CollectTracingRequest)
	if !reflect.DeepEqual(got, req) {
		t.Fatalf("server saw %+v", got)
	}
	// 3.1 lacks CollectTracing3.
	req.Version = 3
	if _, _, err := cl.StartTracing(ctx, req); !errors.Is(err, ipc.ErrUnknownCommand) || !strings.Contains(err.Error(), "CollectTracing3") {
		t.Fatalf("CT3 on 3.1: %v", err)
	}
	// CT6 with a bad buffer mode is BAD_ENCODING on .NET 11.
	_, cl11 := newServer(t, ipctest.Config{Runtime: ipctest.NET11})
	req.Version, req.BufferMode = 6, 7
	if _, _, err := cl11.StartTracing(ctx, req); !errors.Is(err, ipc.ErrBadEncoding) {
		t.Fatalf("CT6 bad mode: %v", err)
	}
}

func TestStreamOutlivesContext(t *testing.T) {
	_, cl := newServer(t, ipctest.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	req := &ipc.CollectTracingRequest{Version: 2, Format: 1, Providers: []ipc.TracingProvider{{Name: "P"}}}
	id, stream, err := cl.StartTracing(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	cancel()
	time.Sleep(20 * time.Millisecond)
	if err := cl.StopTracing(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	// The stream still works after the start context ended: it reaches EOF
	// when the session stops instead of "use of closed connection".
	if _, err := io.ReadAll(stream); err != nil {
		t.Fatalf("read after cancel: %v", err)
	}
}
