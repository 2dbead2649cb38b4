//go:build linux

package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipctest"
)

// plant makes a socket at path owned by uid (needs root for another uid).
func plant(t *testing.T, path string, uid int) {
	t.Helper()
	staleSocket(t, path, time.Time{})
	if uid != os.Geteuid() {
		if err := os.Lchown(path, uid, uid); err != nil {
			t.Fatalf("chown %s: %v", path, err)
		}
	}
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create files owned by another user")
	}
}

// trustHost lays out a fake /proc and temp dir with sockets that are not
// their process's:
//
//	800  uid 0: its own socket, and a newer one of uid 65534 planted to shadow it
//	810  uid 0: only a socket of uid 65534
//	820  uid 65534: a socket of uid 65534 (another user's own target: fine)
//	830  started an hour from now: its socket predates it
//	840  started a second from now: within the clock slack, accepted
//	2    kthreadd (started at boot) and 900 = pid 2 in another PID namespace
//	     whose /tmp is ours (bind mount): the socket dotnet-diagnostic-2-K is 900's
//	910  pid 5 in another namespace, its socket under /proc/910/root/tmp owned by uid 4242
func trustHost(t *testing.T) (cfg *DiscoverConfig, paths map[string]string) {
	needRoot(t)
	base := ipctest.ShortDir(t)
	proc := filepath.Join(base, "p")
	tmp := filepath.Join(base, "t")
	fp := fakeProc{t: t, root: proc}
	if err := os.MkdirAll(proc, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(proc, "stat"), fmt.Appendf(nil, "btime %d\n", fakeBoot.Unix()), 0o644)
	key := fakeStart + 4242
	paths = map[string]string{
		"800own":   filepath.Join(tmp, fmt.Sprintf("dotnet-diagnostic-800-%d-socket", fakeStart)),
		"800plant": filepath.Join(tmp, "dotnet-diagnostic-800-1-socket"),
		"810":      filepath.Join(tmp, "dotnet-diagnostic-810-1-socket"),
		"820":      filepath.Join(tmp, "dotnet-diagnostic-820-1-socket"),
		"830":      filepath.Join(tmp, "dotnet-diagnostic-830-1-socket"),
		"840":      filepath.Join(tmp, "dotnet-diagnostic-840-1-socket"),
		"2":        filepath.Join(tmp, fmt.Sprintf("dotnet-diagnostic-2-%d-socket", key)),
		"900":      filepath.Join(proc, "900/root/tmp", fmt.Sprintf("dotnet-diagnostic-2-%d-socket", key)),
		"910":      filepath.Join(proc, "910/root/tmp/dotnet-diagnostic-5-1-socket"),
	}
	fp.add(800, procFiles("owner", "owner\x00", "", "800"))
	fp.add(810, procFiles("victim", "victim\x00", "", "810"))
	fp.add(820, withUID(procFiles("nobodys", "nobodys\x00", "", "820"), 65534))
	later := procFiles("later", "later\x00", "", "830")
	later["stat"] = statLine(830, "later", 'S', ticksAt(time.Now().Add(time.Hour)))
	fp.add(830, later)
	soon := procFiles("soon", "soon\x00", "", "840")
	soon["stat"] = statLine(840, "soon", 'S', ticksAt(time.Now().Add(time.Second)))
	fp.add(840, soon)
	kt := procFiles("kthreadd", "", "", "2")
	kt["stat"] = statLine(2, "kthreadd", 'S', 3)
	fp.add(2, kt)
	inner := procFiles("dotnet", "dotnet\x00app.dll\x00", "", "900\t2")
	inner["stat"] = statLine(900, "dotnet", 'S', key)
	fp.add(900, inner)
	fp.add(910, procFiles("api", "api\x00", "", "910\t5"))

	plant(t, paths["800own"], 0)
	plant(t, paths["800plant"], 65534)
	old := time.Now().Add(-time.Minute)
	os.Chtimes(paths["800own"], old, old) // the planted one is newer
	plant(t, paths["810"], 65534)
	plant(t, paths["820"], 65534)
	plant(t, paths["830"], 0)
	plant(t, paths["840"], 0)
	plant(t, paths["2"], 0)
	if err := os.MkdirAll(filepath.Join(proc, "900/root"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tmp, filepath.Join(proc, "900/root/tmp")); err != nil {
		t.Fatal(err)
	}
	plant(t, paths["910"], 4242)
	return &DiscoverConfig{TempDir: tmp, ProcRoot: proc}, paths
}

func TestDiscoverRefusesSocketsOfOthers(t *testing.T) {
	cfg, paths := trustHost(t)
	refused := map[int][]string{}
	cfg.Untrusted = func(e *UntrustedSocketError) { refused[e.PID] = append(refused[e.PID], e.Reason) }
	got, err := Discover(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[int]Process{}
	for _, p := range got {
		listed[p.PID] = p
	}
	want := map[int]string{800: paths["800own"], 820: paths["820"], 840: paths["840"], 900: paths["900"]}
	if len(listed) != len(want) {
		t.Errorf("Discover listed %+v, want pids 800, 820, 840, 900", got)
	}
	for pid, path := range want {
		if p := listed[pid]; p.Endpoint.Address != path || !p.Endpoint.CheckPeer {
			t.Errorf("pid %d: endpoint %+v, want %s with CheckPeer", pid, p.Endpoint, path)
		}
	}
	if listed[900].NamespacePID != 2 {
		t.Errorf("pid 900: NamespacePID %d, want 2", listed[900].NamespacePID)
	}
	for pid, reason := range map[int]string{
		800: "owned by uid 65534, but the process runs as uid 0",
		810: "owned by uid 65534, but the process runs as uid 0",
		830: "before the process started",
		2:   "belongs to process 900, which is pid 2 in another PID namespace",
		910: "owned by uid 4242",
	} {
		if len(refused[pid]) != 1 || !strings.Contains(refused[pid][0], reason) {
			t.Errorf("pid %d: refused %q, want one reason with %q", pid, refused[pid], reason)
		}
	}
	if len(refused) != 5 {
		t.Errorf("refused %v, want pids 800, 810, 830, 2, 910", refused)
	}

	// LocalOnly still checks.
	cfg.LocalOnly, cfg.Untrusted = true, nil
	got, _ = Discover(context.Background(), cfg)
	for _, p := range got {
		if p.PID == 810 || p.PID == 2 || p.PID == 830 {
			t.Errorf("LocalOnly listed %+v", p)
		}
	}

	// TrustAnySocket lists them all, unchecked (the newest socket wins again).
	cfg.LocalOnly, cfg.TrustAnySocket = false, true
	got, _ = Discover(context.Background(), cfg)
	listed = map[int]Process{}
	for _, p := range got {
		listed[p.PID] = p
		if p.Endpoint.CheckPeer {
			t.Errorf("TrustAnySocket: pid %d endpoint has CheckPeer", p.PID)
		}
	}
	for _, pid := range []int{2, 800, 810, 820, 830, 840, 900, 910} {
		if _, ok := listed[pid]; !ok {
			t.Errorf("TrustAnySocket: pid %d not listed", pid)
		}
	}
	if listed[800].Endpoint.Address != paths["800plant"] {
		t.Errorf("TrustAnySocket: pid 800 endpoint %s, want the newest %s", listed[800].Endpoint.Address, paths["800plant"])
	}
}

func TestResolveRefusesSocketsOfOthers(t *testing.T) {
	cfg, paths := trustHost(t)
	ctx := context.Background()
	for pid, label := range map[int]string{800: "800own", 820: "820", 840: "840", 900: "900"} {
		ep, err := Resolve(ctx, pid, cfg)
		if err != nil || ep.Address != paths[label] || !ep.CheckPeer {
			t.Errorf("Resolve(%d) = %+v, %v; want %s", pid, ep, err, paths[label])
		}
	}
	for pid, reason := range map[int]string{
		810: "the socket is owned by uid 65534, but the process runs as uid 0",
		830: "before the process started",
		2:   "belongs to process 900",
		910: "owned by uid 4242",
	} {
		_, err := Resolve(ctx, pid, cfg)
		var ue *UntrustedSocketError
		if !errors.As(err, &ue) || !errors.Is(err, ErrUntrustedSocket) || ue.PID != pid || !strings.Contains(err.Error(), reason) {
			t.Errorf("Resolve(%d) = %v; want an UntrustedSocketError saying %q", pid, err, reason)
			continue
		}
		if !strings.Contains(err.Error(), "--trust-socket") || !strings.Contains(err.Error(), ue.Path) {
			t.Errorf("Resolve(%d): the error does not name the socket and the override: %v", pid, err)
		}
	}
	cfg.TrustAnySocket = true
	if ep, err := Resolve(ctx, 810, cfg); err != nil || ep.Address != paths["810"] || ep.CheckPeer {
		t.Errorf("Resolve(810) with TrustAnySocket = %+v, %v", ep, err)
	}
}

// TestTrustUnreadableProcess: a process whose status lacks a Uid line (or
// whose stat has no start time) cannot be checked; its socket is refused.
func TestTrustUnreadableProcess(t *testing.T) {
	h := newFakeHost(t)
	fp := fakeProc{t: t, root: h.cfg.ProcRoot}
	fp.add(100, map[string]string{"stat": "100 (dotnet) S 1\n"})
	_, err := Resolve(context.Background(), 100, h.cfg)
	if !errors.Is(err, ErrUntrustedSocket) || !strings.Contains(err.Error(), "start time cannot be read") {
		t.Errorf("Resolve(100) with a short stat = %v", err)
	}
	os.Remove(filepath.Join(h.cfg.ProcRoot, "stat"))
	_, err = Resolve(context.Background(), 200, h.cfg)
	if !errors.Is(err, ErrUntrustedSocket) || !strings.Contains(err.Error(), "boot time from") {
		t.Errorf("Resolve(200) without /proc/stat = %v", err)
	}
}

// listenAt serves a Unix socket at path from this process.
func listenAt(t testing.TB, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// TestCheckPeer: Dial asks the kernel which process listens on the socket.
func TestCheckPeer(t *testing.T) {
	path := filepath.Join(ipctest.ShortDir(t), "s")
	listenAt(t, path)
	ctx := context.Background()
	conn, err := Endpoint{Network: NetworkUnix, Address: path, PID: os.Getpid(), CheckPeer: true}.Dial(ctx)
	if err != nil {
		t.Fatalf("dial our own socket: %v", err)
	}
	conn.Close()
	_, err = Endpoint{Network: NetworkUnix, Address: path, PID: 1, CheckPeer: true}.Dial(ctx)
	if !errors.Is(err, ErrUntrustedSocket) || !strings.Contains(err.Error(), fmt.Sprintf("process %d (uid %d) listens on it, not process 1", os.Getpid(), os.Geteuid())) {
		t.Errorf("dial with PID 1 = %v, want a refusal naming the listener", err)
	}
	// Without CheckPeer (a socket the caller named) there is no check.
	conn, err = Endpoint{Network: NetworkUnix, Address: path, PID: 1}.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
}

// TestTrustRealProcesses checks the real /proc reads: processes of this
// user and of uid 65534 (started with another credential), sockets of
// either owner.
func TestTrustRealProcesses(t *testing.T) {
	needRoot(t)
	tmp := ipctest.ShortDir(t)
	start := func(uid uint32) int {
		before := time.Now()
		cmd := exec.Command("sleep", "600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		if err := cmd.Start(); err != nil {
			t.Skip("cannot start sleep:", err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		// The computed start time is this process's, to the clock tick and
		// the whole second of btime.
		s := newProcScanner(nil)
		id := s.ident(cmd.Process.Pid)
		bt, err := s.bootTime()
		if id.err != nil || err != nil {
			t.Fatal(id.err, err)
		}
		got := bt.Add(time.Duration(id.start) * (time.Second / clockTicks))
		if got.Before(before.Add(-1100*time.Millisecond)) || got.After(time.Now().Add(10*time.Millisecond)) {
			t.Errorf("computed start %v, want between %v and now", got, before)
		}
		if id.uids[1] != uid {
			t.Errorf("uid %d, want %d", id.uids[1], uid)
		}
		return cmd.Process.Pid
	}
	mine, theirs := start(0), start(65534)
	// A socket named, as a runtime names its own, after the process's start
	// time (plus n, to tell several apart: a name that does not record
	// the start time is only accepted while someone listens on it).
	sock := func(pid, uid, n int) string {
		p := filepath.Join(tmp, fmt.Sprintf("dotnet-diagnostic-%d-%d-socket", pid, newProcScanner(nil).ident(pid).start+uint64(n)))
		plant(t, p, uid)
		return p
	}
	cfg := &DiscoverConfig{TempDir: tmp, LocalOnly: true}
	ctx := context.Background()
	sock(mine, 65534, 1)
	if _, err := Resolve(ctx, mine, cfg); !errors.Is(err, ErrUntrustedSocket) {
		t.Errorf("root's process with a socket of uid 65534: %v, want refused", err)
	}
	good := sock(theirs, 65534, 0)
	if ep, err := Resolve(ctx, theirs, cfg); err != nil || ep.Address != good {
		t.Errorf("uid 65534's process with its own socket: %+v, %v", ep, err)
	}
	p := sock(mine, 0, 0)
	if ep, err := Resolve(ctx, mine, cfg); err != nil || ep.Address != p {
		t.Errorf("root's process with a root socket: %+v, %v", ep, err)
	}
	got, err := Discover(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range got {
		if pr.PID == mine && pr.Endpoint.Address != p {
			t.Errorf("Discover chose %s for pid %d, want %s", pr.Endpoint.Address, mine, p)
		}
	}
}

// TestTrustStaleSocketOfEndedNamespace reproduces a false `ps` entry: a
// runtime that was pid 1 in a PID namespace that shared our temp dir (a
// container with /tmp mounted from the host) has exited and left
// dotnet-diagnostic-1-KEY-socket behind. Host pid 1 (started at boot, root,
// like the runtime) passes the owner and creation-time checks, and no live
// process claims the key, so the socket was listed against init. Its name
// records another start time than init's and nobody listens on it: it is
// refused as stale. The same socket while listened on is accepted (a
// process in a time namespace records another start time).
func TestTrustStaleSocketOfEndedNamespace(t *testing.T) {
	h := newFakeHost(t)
	fp := fakeProc{t: t, root: h.cfg.ProcRoot}
	initFiles := procFiles("systemd", "/sbin/init\x00", "", "1")
	initFiles["stat"] = statLine(1, "systemd", 'S', 3)
	fp.add(1, initFiles)
	name := fmt.Sprintf("dotnet-diagnostic-1-%d-socket", fakeStart)
	path := filepath.Join(h.cfg.TempDir, name)
	staleSocket(t, path, time.Time{})
	netUnix := filepath.Join(h.cfg.ProcRoot, "1/net/unix")
	if err := os.MkdirAll(filepath.Dir(netUnix), 0o755); err != nil {
		t.Fatal(err)
	}
	header := "Num       RefCount Protocol Flags    Type St Inode Path\n"
	others := "0000000000000000: 00000002 00000000 00010000 0001 01 11807 /run/systemd/notify\n" +
		"0000000000000000: 00000003 00000000 00000000 0001 03 20318 " + path + "\n" // connected, not listening
	ctx := context.Background()
	for _, tc := range []struct {
		table string // "" for no net/unix file
		stale bool
	}{
		{header + others, true},
		{header + others + "0000000000000000: 00000002 00000000 00010000 0001 01 20317 /tmp/" + name + "\n", false},
		{"", false}, // unreadable: not refused on this ground
	} {
		os.Remove(netUnix)
		if tc.table != "" {
			if err := os.WriteFile(netUnix, []byte(tc.table), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ep, err := Resolve(ctx, 1, h.cfg)
		var ue *UntrustedSocketError
		if tc.stale {
			if !errors.As(err, &ue) || !ue.Stale || !strings.Contains(ue.Reason, "nobody listens on it") {
				t.Errorf("net/unix without a listener: Resolve(1) = %+v, %v; want refused as stale", ep, err)
			}
			var heard []*UntrustedSocketError
			cfg := *h.cfg
			cfg.Untrusted = func(e *UntrustedSocketError) { heard = append(heard, e) }
			procs, err := Discover(ctx, &cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range procs {
				if p.PID == 1 {
					t.Errorf("Discover lists pid 1 with %s", p.Endpoint.Address)
				}
			}
			if len(heard) != 1 || !heard[0].Stale || heard[0].Path != path {
				t.Errorf("Discover refused %+v, want %s refused as stale", heard, path)
			}
			continue
		}
		if err != nil || ep.Address != path {
			t.Errorf("net/unix %q: Resolve(1) = %+v, %v; want %s", tc.table, ep, err, path)
		}
	}
}

func TestListensOn(t *testing.T) {
	table := []byte("Num       RefCount Protocol Flags    Type St Inode Path\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 11807 /run/a b/dotnet-diagnostic-7-9-socket\n" +
		"0000000000000000: 00000002 00000000 00000000 0001 01 11808 /tmp/dotnet-diagnostic-8-9-socket\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 11809 /tmp/xdotnet-diagnostic-9-9-socket\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 11810\n")
	for base, want := range map[string]bool{
		"dotnet-diagnostic-7-9-socket": true,  // a path with a space
		"dotnet-diagnostic-8-9-socket": false, // not listening
		"dotnet-diagnostic-9-9-socket": false, // another name ending the same way
	} {
		if got := listensOn(table, base); got != want {
			t.Errorf("listensOn(%s) = %v, want %v", base, got, want)
		}
	}
}
