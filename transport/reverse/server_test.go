//go:build unix

package reverse_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/transport/reverse"
)

func listen(t *testing.T, cfg *reverse.Config) (*reverse.Server, string) {
	t.Helper()
	path := ipctest.SocketPath(t)
	srv, err := reverse.Listen(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, path
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// advertise dials path and sends an Advertise for cookie and pid.
func advertise(t *testing.T, path string, cookie ipc.GUID, pid uint64) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	b, err := ipc.Advertise{RuntimeCookie: cookie, PID: pid}.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	return c
}

// closedByPeer reports whether the server closed c within d.
func closedByPeer(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	return errors.Is(err, io.EOF) || errors.Is(err, syscall_ECONNRESET)
}

func TestCommandsOverReconnections(t *testing.T) {
	srv, path := listen(t, nil)
	f, _ := ipctest.StartConnecting(t, ipctest.Config{Runtime: ipctest.NET8, PID: 4242, Suspended: true,
		Environment: []string{"A=1"}}, path)
	ctx := timeout(t, 20*time.Second)
	rt, err := srv.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rt.PID != 4242 || rt.Cookie != f.Info().RuntimeCookie {
		t.Fatalf("accepted %v, want pid 4242 cookie %v", rt, f.Info().RuntimeCookie)
	}
	c := diag.NewClient(rt, &diag.Config{Timeout: 10 * time.Second})
	for i := range 3 {
		info, err := c.ProcessInfo(ctx)
		if err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
		if info.PID != 4242 {
			t.Fatalf("command %d: pid %d", i, info.PID)
		}
	}
	env, err := c.Environment(ctx)
	if err != nil || len(env) != 1 || env[0] != "A=1" {
		t.Fatalf("environment %q, %v", env, err)
	}
	if !f.Suspended() {
		t.Fatal("fake runtime not suspended before ResumeRuntime")
	}
	if err := c.ResumeRuntime(ctx); err != nil {
		t.Fatal(err)
	}
	if f.Suspended() {
		t.Fatal("ResumeRuntime did not arrive")
	}
	reqs := f.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	for _, r := range reqs {
		if !r.Reverse {
			t.Fatalf("request not served on a reverse connection: %+v", r)
		}
	}
	if got := srv.Runtimes(); len(got) != 1 || got[0] != rt {
		t.Fatalf("Runtimes() = %v", got)
	}
	// The same runtime is not accepted twice.
	if rt2, err := srv.Accept(timeout(t, 300*time.Millisecond)); err == nil {
		t.Fatalf("second Accept returned %v", rt2)
	}
}

func TestConcurrentDials(t *testing.T) {
	srv, path := listen(t, nil)
	ipctest.StartConnecting(t, ipctest.Config{PID: 7}, path)
	ctx := timeout(t, 20*time.Second)
	rt, err := srv.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := diag.NewClient(rt, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			_, err := c.ProcessInfo(ctx)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestTwoRuntimes(t *testing.T) {
	srv, path := listen(t, nil)
	f1, _ := ipctest.StartConnecting(t, ipctest.Config{PID: 101}, path)
	f2, _ := ipctest.StartConnecting(t, ipctest.Config{Runtime: ipctest.NET6, PID: 202}, path)
	ctx := timeout(t, 20*time.Second)
	seen := map[int]*reverse.Runtime{}
	for range 2 {
		rt, err := srv.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen[rt.PID] = rt
	}
	for pid, f := range map[int]*ipctest.Server{101: f1, 202: f2} {
		rt := seen[pid]
		if rt == nil {
			t.Fatalf("pid %d not accepted: %v", pid, seen)
		}
		if rt.Cookie != f.Info().RuntimeCookie {
			t.Fatalf("pid %d: cookie %v, want %v", pid, rt.Cookie, f.Info().RuntimeCookie)
		}
		info, err := diag.NewClient(rt, nil).ProcessInfo(ctx)
		if err != nil || info.PID != uint64(pid) {
			t.Fatalf("pid %d: ProcessInfo %+v, %v", pid, info, err)
		}
	}
}

func TestBadAdvertiseDropped(t *testing.T) {
	var mu sync.Mutex
	var dropped []error
	srv, path := listen(t, &reverse.Config{Dropped: func(err error) {
		mu.Lock()
		dropped = append(dropped, err)
		mu.Unlock()
	}})

	bad, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := bad.Write([]byte(strings.Repeat("X", ipc.AdvertiseSize))); err != nil {
		t.Fatal(err)
	}
	partial, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer partial.Close()
	b, _ := ipc.Advertise{PID: 1}.MarshalBinary()
	if _, err := partial.Write(b[:10]); err != nil {
		t.Fatal(err)
	}
	silent, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	for name, c := range map[string]net.Conn{"bad magic": bad, "partial": partial, "silent": silent} {
		if !closedByPeer(c, 5*time.Second) {
			t.Errorf("%s advertise: connection not closed by the server", name)
		}
	}
	if _, err := srv.Accept(timeout(t, 100*time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Accept after bad advertises: %v, want a deadline error", err)
	}
	mu.Lock()
	n := len(dropped)
	var ae *reverse.AdvertiseError
	ok := n > 0 && errors.As(dropped[0], &ae)
	mu.Unlock()
	if n != 3 || !ok {
		t.Fatalf("Dropped called %d times (%v), want 3 *AdvertiseError", n, dropped)
	}
	// A good runtime still gets through.
	ipctest.StartConnecting(t, ipctest.Config{PID: 9}, path)
	rt, err := srv.Accept(timeout(t, 10*time.Second))
	if err != nil || rt.PID != 9 {
		t.Fatalf("Accept = %v, %v", rt, err)
	}
}

func TestNewestConnectionKept(t *testing.T) {
	srv, path := listen(t, nil)
	cookie := ipc.GUID{1, 2, 3}
	first := advertise(t, path, cookie, 55)
	ctx := timeout(t, 10*time.Second)
	rt, err := srv.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second := advertise(t, path, cookie, 55)
	if !closedByPeer(first, 5*time.Second) {
		t.Fatal("older connection of the same runtime not closed")
	}
	if rt.Gone() {
		t.Fatal("runtime marked gone after reconnecting")
	}
	conn, err := rt.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	second.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 2)
	if _, err := io.ReadFull(second, got); err != nil || string(got) != "hi" {
		t.Fatalf("Dial did not return the newest connection: %q, %v", got, err)
	}
	// Bytes the runtime sends after the Advertise reach the caller intact.
	if _, err := second.Write([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(conn, got); err != nil || string(got) != "ok" {
		t.Fatalf("reply %q, %v", got, err)
	}
}

func TestRuntimeGone(t *testing.T) {
	srv, path := listen(t, nil)
	ctx := timeout(t, 10*time.Second)
	c := advertise(t, path, ipc.GUID{9}, 99)
	rt, err := srv.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Close() // the runtime exits
	if _, err := rt.Dial(ctx); !errors.Is(err, reverse.ErrRuntimeGone) {
		t.Fatalf("Dial after exit: %v, want ErrRuntimeGone", err)
	}
	if len(srv.Runtimes()) != 0 {
		t.Fatalf("gone runtime still listed: %v", srv.Runtimes())
	}

	// Same with a fake runtime that stops between commands.
	_, stop := ipctest.StartConnecting(t, ipctest.Config{PID: 5}, path)
	rt, err = srv.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cl := diag.NewClient(rt, nil)
	if _, err := cl.ProcessInfo(ctx); err != nil {
		t.Fatal(err)
	}
	// Let the fake reconnect and advertise, as a runtime does right after a
	// command, then make it exit while the server holds that connection.
	time.Sleep(300 * time.Millisecond)
	stop()
	deadline := time.Now().Add(5 * time.Second)
	for !rt.Gone() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := cl.ProcessInfo(ctx); !errors.Is(err, reverse.ErrRuntimeGone) {
		t.Fatalf("command after exit: %v, want ErrRuntimeGone", err)
	}
}

func TestCancellation(t *testing.T) {
	srv, path := listen(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := srv.Accept(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Accept with a cancelled context: %v", err)
	}
	advertise(t, path, ipc.GUID{4}, 4)
	rt, err := srv.Accept(timeout(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := rt.Dial(timeout(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	// The runtime does not reconnect: Dial waits until the deadline.
	start := time.Now()
	if _, err := rt.Dial(timeout(t, 100*time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial with no connection: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("Dial did not honour its deadline")
	}
	// Close unblocks waiting calls.
	errc := make(chan error, 2)
	go func() { _, err := srv.Accept(context.Background()); errc <- err }()
	go func() { _, err := rt.Dial(context.Background()); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-errc:
			if !errors.Is(err, reverse.ErrClosed) {
				t.Fatalf("after Close: %v, want ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not unblock Accept and Dial")
		}
	}
}

func TestSocketFile(t *testing.T) {
	srv, path := listen(t, nil)
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want a socket with 0600", fi.Mode())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left next to the socket: %v", entries)
	}
	// A live listener is not taken over.
	_, err = reverse.Listen(path, nil)
	var le *reverse.ListenError
	if !errors.Is(err, reverse.ErrAddressInUse) || !errors.As(err, &le) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Listen: %v, want ErrAddressInUse naming the path", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket not removed on Close: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestStaleSocketTakenOver(t *testing.T) {
	path := ipctest.SocketPath(t)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // a killed listener leaves its socket behind
	srv, err := reverse.Listen(path, nil)
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	defer srv.Close()
	advertise(t, path, ipc.GUID{1}, 1)
	if _, err := srv.Accept(timeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
}

func TestListenRefusesOtherFiles(t *testing.T) {
	path := ipctest.SocketPath(t)
	if err := os.WriteFile(path, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := reverse.Listen(path, nil); err == nil || !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Listen over a regular file: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "data" {
		t.Fatalf("regular file touched: %q, %v", b, err)
	}
	long := "/tmp/" + strings.Repeat("x", 120)
	if _, err := reverse.Listen(long, nil); err == nil || !strings.Contains(err.Error(), "107") {
		t.Fatalf("Listen on a long path: %v", err)
	}
	if _, err := reverse.Listen("", nil); err == nil {
		t.Fatal("Listen on an empty address succeeded")
	}
	if _, err := reverse.Listen(filepath.Join(path+"-missing-dir", "s"), nil); err == nil {
		t.Fatal("Listen in a missing directory succeeded")
	}
}

func TestRemove(t *testing.T) {
	srv, path := listen(t, nil)
	c := advertise(t, path, ipc.GUID{7}, 7)
	rt, err := srv.Accept(timeout(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	srv.Remove(rt)
	if !closedByPeer(c, 5*time.Second) {
		t.Fatal("Remove did not close the held connection")
	}
	if _, err := rt.Dial(timeout(t, time.Second)); !errors.Is(err, reverse.ErrRuntimeGone) {
		t.Fatalf("Dial after Remove: %v", err)
	}
	// The runtime connecting again is a new runtime to Accept.
	advertise(t, path, ipc.GUID{7}, 7)
	rt2, err := srv.Accept(timeout(t, 10*time.Second))
	if err != nil || rt2 == rt {
		t.Fatalf("re-Accept after Remove: %v, %v", rt2, err)
	}
}
