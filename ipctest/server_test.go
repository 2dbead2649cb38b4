package ipctest

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipc"
)

func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// roundTrip sends one message on a fresh connection and reads the reply.
func roundTrip(t *testing.T, s *Server, set, id uint8, payload []byte) (ipc.Message, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := s.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := ipc.WriteMessage(c, set, id, payload); err != nil {
		t.Fatal(err)
	}
	return ipc.ReadReply(c)
}

func TestSocketNaming(t *testing.T) {
	dir, err := os.MkdirTemp("", "ipcn")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s := start(t, Config{Dir: dir, PID: 123, Key: 456})
	if want := filepath.Join(dir, "dotnet-diagnostic-123-456-socket"); s.Path != want {
		t.Fatalf("path %s", s.Path)
	}
	d := start(t, Config{})
	if !regexp.MustCompile(`^dotnet-diagnostic-\d+-\d+-socket$`).MatchString(filepath.Base(d.Path)) {
		t.Fatalf("default name %s", d.Path)
	}
	if d.Info().PID != uint64(os.Getpid()) {
		t.Fatalf("default pid %d", d.Info().PID)
	}
	d.Close()
	if _, err := os.Stat(d.Dir); !os.IsNotExist(err) {
		t.Fatalf("temp dir left behind: %v", err)
	}
	s.Close()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("caller's dir removed: %v", err)
	}
}

func TestRuntimeProfiles(t *testing.T) {
	for _, c := range ipc.Commands() {
		for _, rt := range Runtimes() {
			want := int(rt) >= c.Major*10+c.Minor || (rt == NET3_1 && c.Set == ipc.SetProfiler)
			if rt.Supports(c.Set, c.ID) != want {
				t.Errorf("%s supports %s: %v", rt, c.Name, !want)
			}
		}
	}
	if Runtime(0).Supports(ipc.SetProcess, ipc.CmdProcessInfo3) != true {
		t.Error("zero Runtime is not .NET 8")
	}
}

// Every command of the ipc table is supported by some runtime profile: a
// command newer than the newest profile would be silently unsupported by
// the fake, and every test of it would only see UnknownCommand.
func TestEveryCommandHasARuntime(t *testing.T) {
	rts := Runtimes()
	newest := rts[len(rts)-1]
	for _, c := range ipc.Commands() {
		if !newest.Supports(c.Set, c.ID) {
			t.Errorf("%s (since %s) is newer than ipctest's newest runtime profile, %s: add a Runtime constant for %s to ipctest/server.go and to Runtimes",
				c.Name, c.Since, newest, c.Since)
		}
	}
	for i := 1; i < len(rts); i++ {
		if rts[i] <= rts[i-1] {
			t.Errorf("Runtimes is not sorted: %s after %s", rts[i], rts[i-1])
		}
	}
}

func TestUnknownCommandReplyAndClose(t *testing.T) {
	s := start(t, Config{Runtime: NET5})
	ctx := context.Background()
	c, err := s.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = ipc.WriteMessage(c, ipc.SetProcess, ipc.CmdProcessInfo2, nil)
	var buf [64]byte
	c.SetDeadline(time.Now().Add(5 * time.Second))
	n, err := readAll(c, buf[:])
	if err != nil {
		t.Fatal(err)
	}
	// Exactly an error header 0xFF/0xFF and the HRESULT, then EOF.
	want, _ := ipc.AppendMessage(nil, ipc.SetServer, ipc.CmdError, ipc.AppendHRESULTReply(nil, ipc.HRUnknownCommand))
	if string(buf[:n]) != string(want) {
		t.Fatalf("got % x\nwant % x", buf[:n], want)
	}
}

func readAll(c net.Conn, b []byte) (int, error) {
	n := 0
	for {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			if n > 0 {
				return n, nil
			}
			return n, err
		}
	}
}

func TestNET31ProfilerIgnoresID(t *testing.T) {
	s := start(t, Config{Runtime: NET3_1})
	p, _ := (&ipc.AttachProfilerRequest{Path: "/p.so"}).MarshalBinary()
	if _, err := roundTrip(t, s, ipc.SetProfiler, 0x00, p); err != nil {
		t.Fatalf("id 0x00: %v", err)
	}
	if !s.ProfilerAttached() {
		t.Fatal("not attached")
	}
	if _, err := roundTrip(t, s, ipc.SetProfiler, 0x02, p); !errors.Is(err, ipc.ErrProfilerAlreadyActive) {
		t.Fatalf("id 0x02: %v", err)
	}
	s.DetachProfiler()
	if _, err := roundTrip(t, s, ipc.SetProfiler, ipc.CmdAttachProfiler, p[:10]); !errors.Is(err, ipc.ErrBadEncoding) {
		t.Fatalf("truncated: %v", err)
	}
	empty, _ := (&ipc.AttachProfilerRequest{}).MarshalBinary()
	if _, err := roundTrip(t, s, ipc.SetProfiler, ipc.CmdAttachProfiler, empty); !errors.Is(err, ipc.ErrFail) {
		t.Fatalf("empty path: %v", err)
	}
	// 3.1 reports the nil cookie.
	if !s.Info().RuntimeCookie.IsZero() {
		t.Fatal("3.1 cookie not zero")
	}
}

func TestRequestsLog(t *testing.T) {
	s := start(t, Config{})
	p, _ := (&ipc.SetEnvironmentVariableRequest{Name: "A", Value: "1"}).MarshalBinary()
	if _, err := roundTrip(t, s, ipc.SetProcess, ipc.CmdSetEnvironmentVariable, p); err != nil {
		t.Fatal(err)
	}
	r := s.Requests()
	if len(r) != 1 || r[0].Err != nil || r[0].Reverse {
		t.Fatalf("%+v", r)
	}
	if got, ok := r[0].Request.(*ipc.SetEnvironmentVariableRequest); !ok || got.Name != "A" || got.Value != "1" {
		t.Fatalf("%#v", r[0].Request)
	}
}

func TestCloseEndsSessions(t *testing.T) {
	s, err := NewServer(Config{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := (&ipc.CollectTracingRequest{Version: 2, Providers: []ipc.TracingProvider{{Name: "P"}}}).MarshalBinary()
	c, err := s.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = ipc.WriteMessage(c, ipc.SetEventPipe, ipc.CmdCollectTracing2, p)
	m, err := ipc.ReadReply(c)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := ipc.DecodeSessionIDReply(m.Payload); err != nil || id == 0 {
		t.Fatalf("%d %v", id, err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs with a live session")
	}
}

func TestConnectToReverse(t *testing.T) {
	dir, err := os.MkdirTemp("", "ipcr")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "port.sock")
	s := start(t, Config{Runtime: NET8, PID: 999, Suspended: true})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	// Start before the listener exists: the runtime keeps retrying.
	go func() { done <- s.ConnectTo(ctx, sock) }()
	time.Sleep(50 * time.Millisecond)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	accept := func() (net.Conn, ipc.Advertise) {
		t.Helper()
		ln.(*net.UnixListener).SetDeadline(time.Now().Add(5 * time.Second))
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		a, err := ipc.ReadAdvertise(c)
		if err != nil {
			t.Fatal(err)
		}
		return c, a
	}
	// Each connection carries one command, then the runtime re-advertises.
	c, a := accept()
	if a.PID != 999 || a.RuntimeCookie != s.Info().RuntimeCookie || a.RuntimeCookie.IsZero() {
		t.Fatalf("advertise %+v", a)
	}
	_ = ipc.WriteMessage(c, ipc.SetProcess, ipc.CmdProcessInfo3, nil)
	m, err := ipc.ReadReply(c)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := ipc.DecodeProcessInfo(3, m.Payload); err != nil || info.PID != 999 {
		t.Fatalf("%+v %v", info, err)
	}
	c.Close()
	c, a2 := accept()
	if a2 != a {
		t.Fatalf("second advertise %+v", a2)
	}
	_ = ipc.WriteMessage(c, ipc.SetProcess, ipc.CmdResumeRuntime, nil)
	if _, err := ipc.ReadReply(c); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if s.Suspended() {
		t.Fatal("still suspended after ResumeRuntime")
	}
	if r := s.Requests(); len(r) != 2 || !r[0].Reverse {
		t.Fatalf("%+v", r)
	}
	if n, m := s.CountCommand(ipc.SetProcess, ipc.CmdResumeRuntime), s.CountCommand(ipc.SetProcess, ipc.CmdProcessInfo); n != 1 || m != 0 {
		t.Fatalf("CountCommand: %d ResumeRuntime, %d ProcessInfo; want 1, 0", n, m)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("ConnectTo returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ConnectTo did not stop")
	}
}

// SocketPath is short enough for AF_UNIX under a long test name, and its
// directory goes when the test ends.
func TestSocketPath(t *testing.T) {
	var p string
	t.Run(strings.Repeat("a-very-long-subtest-name-", 8), func(t *testing.T) {
		p = SocketPath(t)
		if len(p) > 107 {
			t.Errorf("%d bytes: %s", len(p), p)
		}
		if _, err := os.Stat(filepath.Dir(p)); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := os.Stat(filepath.Dir(p)); !os.IsNotExist(err) {
		t.Errorf("%s still there after the test: %v", filepath.Dir(p), err)
	}
}
