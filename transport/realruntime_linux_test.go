//go:build linux

package transport_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/transport"
)

// tempDir returns a short directory every user can create files in (a
// socket path holds at most 107 bytes).
func tempDir(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "rt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	d := filepath.Join(base, "t")
	if err := os.Mkdir(d, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o1777)
	return d
}

// talk sends a command a .NET Core 3.1 runtime answers (ProcessInfo, which
// it does not know: the answer is its "unknown command" error) through the
// endpoint, so the connection itself, the peer check included, is tested.
func talk(t *testing.T, ep transport.Endpoint) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := diag.NewClient(ep, nil).ProcessInfo(ctx)
	if !errors.Is(err, ipc.ErrUnknownCommand) {
		t.Fatalf("ProcessInfo through %+v = %v, want the runtime's unknown-command answer", ep, err)
	}
}

// TestRealRuntimeSocketOwnership: a real 3.1 runtime's socket passes the
// ownership check and the peer check, and a newer socket of another user
// planted next to it is refused instead of being picked as the newest.
func TestRealRuntimeSocketOwnership(t *testing.T) {
	rt := dotnettest.Find(t)
	dll := rt.Build(t, "Basic")
	tmp := tempDir(t)
	tg := rt.Start(t, dll, nil, &dotnettest.Options{TmpDir: tmp})
	cfg := &transport.DiscoverConfig{TempDir: tmp}
	ctx := context.Background()
	// What killed runtimes leave behind, and a socket named after the
	// target that is newer than its own but that nobody listens on.
	dead, reused := staleSockets(t, tmp)
	shadow := filepath.Join(tmp, fmt.Sprintf("dotnet-diagnostic-%d-1-socket", tg.PID))
	plantSocket(t, shadow, os.Geteuid())
	future := time.Now().Add(time.Hour)
	os.Chtimes(shadow, future, future)
	ep, err := transport.Resolve(ctx, tg.PID, cfg)
	if err != nil || ep.Address != tg.Socket || !ep.CheckPeer {
		t.Fatalf("Resolve = %+v, %v; want %s checked", ep, err, tg.Socket)
	}
	talk(t, ep)
	if _, err := transport.Resolve(ctx, dead, cfg); !errors.Is(err, transport.ErrNotFound) {
		t.Errorf("Resolve(%d), an exited pid with a stale socket = %v, want not found", dead, err)
	}
	var ue *transport.UntrustedSocketError
	if _, err := transport.Resolve(ctx, reused, cfg); !errors.As(err, &ue) || !ue.Stale {
		t.Errorf("Resolve(%d), a reused pid with a stale socket = %v, want it refused as stale", reused, err)
	}
	cfg.Untrusted = func(e *transport.UntrustedSocketError) {
		if !e.Stale && strings.HasPrefix(e.Path, tmp) {
			t.Errorf("Discover refused %s as untrusted, want it stale: %v", e.Path, e)
		}
	}
	procs, err := transport.Discover(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.PID == dead || p.PID == reused || (p.PID == tg.PID) != (p.Endpoint.Address == tg.Socket) {
			t.Errorf("Discover lists pid %d with %s; want only the target %d with %s", p.PID, p.Endpoint.Address, tg.PID, tg.Socket)
		}
	}
	os.Remove(shadow)
	cfg.Untrusted = nil

	if os.Geteuid() != 0 {
		t.Skip("needs root to plant a socket of another user")
	}
	planted := filepath.Join(tmp, fmt.Sprintf("dotnet-diagnostic-%d-1-socket", tg.PID))
	plantSocket(t, planted, 65534)
	ep, err = transport.Resolve(ctx, tg.PID, cfg)
	if err != nil || ep.Address != tg.Socket {
		t.Fatalf("Resolve with a planted socket = %+v, %v; want %s", ep, err, tg.Socket)
	}
	refused := collectRefused(cfg, tmp)
	procs, err = transport.Discover(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range procs {
		if p.PID == tg.PID {
			found = p.Endpoint.Address == tg.Socket
		}
	}
	if !found || len(*refused) != 1 || (*refused)[0].Path != planted || !strings.Contains((*refused)[0].Reason, "uid 65534") {
		t.Errorf("Discover: target found=%v, refused %+v; want the real socket and the planted one refused", found, *refused)
	}
	// Deliberately trusted, the newest (planted) socket is used, unchecked.
	cfg.TrustAnySocket = true
	if ep, err := transport.Resolve(ctx, tg.PID, cfg); err != nil || ep.Address != planted || ep.CheckPeer {
		t.Errorf("Resolve with TrustAnySocket = %+v, %v; want %s", ep, err, planted)
	}
	// A checked endpoint whose socket was swapped for another process's is
	// refused at Dial.
	os.Remove(planted)
	swapped := transport.Endpoint{Network: transport.NetworkUnix, Address: tg.Socket, PID: os.Getpid(), CheckPeer: true}
	if _, err := swapped.Dial(ctx); !errors.Is(err, transport.ErrUntrustedSocket) ||
		!strings.Contains(err.Error(), fmt.Sprintf("process %d", tg.PID)) {
		t.Errorf("Dial of another process's socket = %v, want refused naming pid %d", err, tg.PID)
	}
}

// collectRefused makes Discover with cfg collect the sockets below dir it
// refuses for another reason than being stale. Sockets elsewhere (the
// machine's /tmp, scanned for other processes) are not the test's.
func collectRefused(cfg *transport.DiscoverConfig, dir string) *[]*transport.UntrustedSocketError {
	var refused []*transport.UntrustedSocketError
	cfg.Untrusted = func(e *transport.UntrustedSocketError) {
		if !e.Stale && strings.HasPrefix(e.Path, dir+"/") {
			refused = append(refused, e)
		}
	}
	return &refused
}

// staleSockets leaves in dir what runtimes killed with SIGKILL leave in a CI
// machine's /tmp: the socket of a pid that has exited, and one of a pid
// since reused by a live process (sleep, started after the socket was
// made). It returns the two pids.
func staleSockets(t *testing.T, dir string) (dead, reused int) {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead = cmd.Process.Pid
	plantSocket(t, filepath.Join(dir, fmt.Sprintf("dotnet-diagnostic-%d-12345-socket", dead)), os.Geteuid())
	// Plant sockets for the next free pids, then start processes until one
	// gets one of them. As root, rewind ns_last_pid if others took them.
	for round := 0; round < 5; round++ {
		b, err := os.ReadFile("/proc/sys/kernel/ns_last_pid")
		last, err2 := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || err2 != nil {
			t.Fatalf("read ns_last_pid: %v %v", err, err2)
		}
		planted := map[int]string{}
		for p := last + 1; p <= last+64; p++ {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", p)); err == nil {
				continue
			}
			planted[p] = filepath.Join(dir, fmt.Sprintf("dotnet-diagnostic-%d-%d-socket", p, 1000+p))
			plantSocket(t, planted[p], os.Geteuid())
		}
		os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(last)), 0) // best effort
		for i := 0; i < 100; i++ {
			c := exec.Command("sleep", "600")
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			pid := c.Process.Pid
			if _, ok := planted[pid]; ok {
				t.Cleanup(func() { c.Process.Kill(); c.Wait() })
				for p, path := range planted {
					if p != pid {
						os.Remove(path)
					}
				}
				return dead, pid
			}
			c.Process.Kill()
			c.Wait()
			if pid > last+64 || pid < last {
				break // past the planted pids (or wrapped around)
			}
		}
		for _, path := range planted {
			os.Remove(path)
		}
	}
	t.Fatal("no process got a pid with a planted socket in 5 rounds")
	return 0, 0
}

// plantSocket makes a socket nobody listens on at path, owned by uid.
func plantSocket(t *testing.T, path string, uid int) {
	t.Helper()
	l, err := netListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	t.Cleanup(func() { os.Remove(path) })
	if err := os.Lchown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// TestRealRuntimeOtherUser: a runtime run as uid 65534 owns its socket;
// clrdiag, as root, accepts it.
func TestRealRuntimeOtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the target as another user")
	}
	rt := dotnettest.Find(t)
	dll := worldReadable(t, rt.Build(t, "Basic"))
	tmp := tempDir(t)
	tg := rt.Start(t, dll, nil, &dotnettest.Options{TmpDir: tmp, Credential: &syscall.Credential{Uid: 65534, Gid: 65534}})
	var st syscall.Stat_t
	if err := syscall.Stat(tg.Socket, &st); err != nil || st.Uid != 65534 {
		t.Fatalf("socket %s: uid %d, %v; want the runtime to run as 65534", tg.Socket, st.Uid, err)
	}
	ep, err := transport.Resolve(context.Background(), tg.PID, &transport.DiscoverConfig{TempDir: tmp})
	if err != nil || ep.Address != tg.Socket || !ep.CheckPeer {
		t.Fatalf("Resolve = %+v, %v", ep, err)
	}
	talk(t, ep)
}

// worldReadable copies a built target to a directory every user can read.
func worldReadable(t *testing.T, dll string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dll")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(dll), "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, filepath.Base(dll))
}

// TestRealRuntimeOtherPIDNamespace reproduces the false `ps` entry: a
// runtime in a new PID namespace, where it is pid 2, shares our temp dir;
// its socket dotnet-diagnostic-2-KEY-socket is its own, not host pid 2's
// (kthreadd). Discovery lists it under its host pid only, Resolve(2)
// refuses the socket, and the runtime is reachable through its host pid.
func TestRealRuntimeOtherPIDNamespace(t *testing.T) {
	dotnettest.NeedPIDNamespace(t)
	rt := dotnettest.Find(t)
	dll := rt.Build(t, "Basic")
	tmp := tempDir(t)
	// A socket of an earlier runtime that was pid 2 in its namespace (newer
	// than the real one will be, so it is checked first), and other stale
	// sockets.
	earlier := filepath.Join(tmp, "dotnet-diagnostic-2-12345-socket")
	plantSocket(t, earlier, os.Geteuid())
	future := time.Now().Add(time.Hour)
	os.Chtimes(earlier, future, future)
	dead, reused := staleSockets(t, tmp)
	// sh stays pid 1 (the command is not its last), so the runtime is pid 2.
	tg := rt.Start(t, dll, nil, &dotnettest.Options{TmpDir: tmp,
		Wrapper: []string{"unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", `"$@"; exit $?`, "sh"}})
	var sock string
	deadline := time.Now().Add(20 * time.Second)
	for sock == "" {
		m, _ := filepath.Glob(filepath.Join(tmp, "dotnet-diagnostic-2-*-socket"))
		if m = slices.DeleteFunc(m, func(p string) bool { return p == earlier }); len(m) > 0 {
			sock = m[0]
		} else if time.Now().After(deadline) {
			t.Fatalf("no socket of pid 2 in %s; stderr: %s", tmp, tg.Stderr())
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	ctx := context.Background()
	cfg := &transport.DiscoverConfig{TempDir: tmp}
	refusedp := collectRefused(cfg, tmp)
	procs, err := transport.Discover(ctx, cfg)
	refused := *refusedp
	if err != nil {
		t.Fatal(err)
	}
	var inner *transport.Process
	for i, p := range procs {
		if p.PID == 2 {
			t.Errorf("Discover lists host pid 2 with %s", p.Endpoint.Address)
		}
		if p.NamespacePID == 2 {
			inner = &procs[i]
		}
		if p.PID == dead || p.PID == reused {
			t.Errorf("Discover lists pid %d with its stale socket %s", p.PID, p.Endpoint.Address)
		}
	}
	// The runtime's socket, seen through /proc/PID/root or in tmp itself.
	if inner == nil || inner.Name != "dotnet" || filepath.Base(inner.Endpoint.Address) != filepath.Base(sock) {
		t.Fatalf("Discover = %+v; want the runtime listed as pid 2 in its namespace", procs)
	}
	if len(refused) != 1 || refused[0].PID != 2 || !strings.Contains(refused[0].Reason, fmt.Sprintf("belongs to process %d", inner.PID)) {
		t.Errorf("refused %+v; want host pid 2's claim on %s refused", refused, sock)
	}
	if _, err := transport.Resolve(ctx, 2, cfg); !errors.Is(err, transport.ErrUntrustedSocket) || !strings.Contains(err.Error(), sock) {
		t.Errorf("Resolve(2) = %v, want the socket refused", err)
	}
	ep, err := transport.Resolve(ctx, inner.PID, cfg)
	if err != nil || !ep.CheckPeer || filepath.Base(ep.Address) != filepath.Base(sock) {
		t.Fatalf("Resolve(%d) = %+v, %v", inner.PID, ep, err)
	}
	talk(t, ep)
}

func netListenUnix(path string) (*net.UnixListener, error) {
	return net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
}
