//go:build linux

package transport

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipctest"
)

// fakeProc builds /proc/PID entries under root.
type fakeProc struct {
	t    testing.TB
	root string
}

func (f fakeProc) add(pid int, files map[string]string) {
	f.t.Helper()
	dir := filepath.Join(f.root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
}

// fakeBoot is the boot time of every fake /proc: a day ago, in whole
// seconds as /proc/stat btime gives it.
var fakeBoot = time.Unix(time.Now().Add(-24*time.Hour).Unix(), 0)

// fakeStart is the default start time of fake processes: an hour ago, in
// clock ticks after fakeBoot.
var fakeStart = ticksAt(time.Now().Add(-time.Hour))

// ticksAt returns t in clock ticks after fakeBoot.
func ticksAt(t time.Time) uint64 { return uint64(t.Sub(fakeBoot) / (time.Second / clockTicks)) }

// statLine is a /proc/PID/stat line with the given state and start time.
func statLine(pid int, comm string, state byte, start uint64) string {
	return fmt.Sprintf("%d (%s) %c 1 %d %d 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 %d 1000 10 18446744073709551615\n",
		pid, comm, state, pid, pid, start)
}

// procFiles returns the files of a fake process run by this test's
// effective uid (the owner of the sockets the test makes), started at
// fakeStart.
func procFiles(comm, cmdline, environ, nspid string) map[string]string {
	uid := os.Geteuid()
	pid, _, _ := strings.Cut(nspid, "\t")
	n, _ := strconv.Atoi(pid)
	return map[string]string{
		"comm":    comm + "\n",
		"cmdline": cmdline,
		"environ": environ,
		"status": fmt.Sprintf("Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t%d\t%d\t%d\t%d\nNSpid:\t%s\nPPid:\t1\n",
			comm, uid, uid, uid, uid, nspid),
		"stat": statLine(n, comm, 'S', fakeStart),
	}
}

// withUID sets the uids of a fake process's status.
func withUID(files map[string]string, uid int) map[string]string {
	st := files["status"]
	i := strings.Index(st, "Uid:")
	j := i + strings.IndexByte(st[i:], '\n')
	files["status"] = st[:i] + fmt.Sprintf("Uid:\t%d\t%d\t%d\t%d", uid, uid, uid, uid) + st[j:]
	return files
}

type fakeHost struct {
	cfg   *DiscoverConfig
	paths map[string]string // what to expect, by label
}

// newFakeHost lays out a fake /proc and temp dirs:
//
//	100  dotnet app.dll, socket in our TMPDIR
//	200  two sockets in our TMPDIR: the newer wins
//	300  in a container (NSpid 300 7), socket under /proc/300/root/tmp
//	400  TMPDIR=<other>, socket there
//	500  environ unreadable (a directory): skipped without failing
//	600  dsrouter socket as new as a runtime socket: dsrouter wins
//	700  zombie (state Z in stat) with its socket left behind
//	2    kernel thread: empty environ and cmdline, no socket
//	999  stale socket, no such process
func newFakeHost(t *testing.T) fakeHost {
	base := ipctest.ShortDir(t)
	proc := filepath.Join(base, "p")
	tmp := filepath.Join(base, "t")
	other := filepath.Join(base, "o")
	fp := fakeProc{t: t, root: proc}
	if err := os.MkdirAll(proc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "stat"), fmt.Appendf(nil, "cpu  1 2 3\nbtime %d\nprocesses 9\n", fakeBoot.Unix()), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	now := time.Now()
	paths := map[string]string{
		"100":    filepath.Join(tmp, "dotnet-diagnostic-100-11-socket"),
		"200old": filepath.Join(tmp, "dotnet-diagnostic-200-5-socket"),
		"200new": filepath.Join(tmp, "dotnet-diagnostic-200-9-socket"),
		"300":    filepath.Join(proc, "300/root/tmp/dotnet-diagnostic-7-33-socket"),
		"400":    filepath.Join(other, "dotnet-diagnostic-400-44-socket"),
		"600rt":  filepath.Join(tmp, "dotnet-diagnostic-600-66-socket"),
		"600dsr": filepath.Join(tmp, "dotnet-diagnostic-dsrouter-600-66-socket"),
		"999":    filepath.Join(tmp, "dotnet-diagnostic-999-1-socket"),
		"700":    filepath.Join(tmp, "dotnet-diagnostic-700-1-socket"),
	}
	fp.add(100, procFiles("dotnet", "dotnet\x00app.dll\x00--urls\x00http://*:5000\x00", "HOME=/root\x00", "100"))
	fp.add(100, map[string]string{"stat": statLine(100, "a) Z) (b", 'S', fakeStart)})
	fp.add(700, procFiles("dotnet", "", "", "700"))
	fp.add(700, map[string]string{"stat": statLine(700, "dotnet", 'Z', fakeStart)})
	fp.add(200, procFiles("worker", "/opt/worker\x00", "", "200"))
	fp.add(300, procFiles("api", "/app/api\x00", "PATH=/bin\x00", "300\t7"))
	fp.add(400, procFiles("svc", "svc\x00", "TMPDIR="+other+"/\x00", "400"))
	fp.add(500, map[string]string{"comm": "secret\n", "status": "NSpid:\t500\n"})
	if err := os.Mkdir(filepath.Join(proc, "500", "environ"), 0o755); err != nil {
		t.Fatal(err)
	}
	fp.add(600, procFiles("dotnet-dsrouter", "dotnet-dsrouter\x00", "", "600"))
	fp.add(2, procFiles("kthreadd", "", "", "2"))
	os.MkdirAll(filepath.Join(proc, "sys"), 0o755)
	os.Symlink("100", filepath.Join(proc, "self"))
	for label, p := range paths {
		mt := now
		if label == "200old" {
			mt = old
		}
		staleSocket(t, p, mt)
	}
	// A socket-like name that is a regular file is not an endpoint.
	os.WriteFile(filepath.Join(tmp, "dotnet-diagnostic-2-1-socket"), nil, 0o600)
	return fakeHost{cfg: &DiscoverConfig{TempDir: tmp, ProcRoot: proc}, paths: paths}
}

func TestDiscoverFakeProc(t *testing.T) {
	h := newFakeHost(t)
	got, err := Discover(context.Background(), h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ep := func(label string, pid int) Endpoint {
		return Endpoint{Network: NetworkUnix, Address: h.paths[label], PID: pid, CheckPeer: true}
	}
	want := []Process{
		{PID: 100, Name: "dotnet", CommandLine: "dotnet app.dll --urls http://*:5000", Endpoint: ep("100", 100)},
		{PID: 200, Name: "worker", CommandLine: "/opt/worker", Endpoint: ep("200new", 200)},
		{PID: 300, Name: "api", CommandLine: "/app/api", Endpoint: ep("300", 300), NamespacePID: 7},
		{PID: 400, Name: "svc", CommandLine: "svc", Endpoint: ep("400", 400)},
		{PID: 600, Name: "dotnet-dsrouter", CommandLine: "dotnet-dsrouter", Endpoint: ep("600dsr", 600)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Discover:\n got %+v\nwant %+v", got, want)
	}

	local, err := Discover(context.Background(), &DiscoverConfig{TempDir: h.cfg.TempDir, ProcRoot: h.cfg.ProcRoot, LocalOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, p := range local {
		pids = append(pids, p.PID)
	}
	if !reflect.DeepEqual(pids, []int{100, 200, 600}) {
		t.Errorf("LocalOnly pids = %v, want [100 200 600]", pids)
	}
}

func TestResolveFakeProc(t *testing.T) {
	h := newFakeHost(t)
	ctx := context.Background()
	for pid, label := range map[int]string{100: "100", 200: "200new", 300: "300", 400: "400", 600: "600dsr"} {
		got, err := Resolve(ctx, pid, h.cfg)
		if err != nil || got.Address != h.paths[label] || got.PID != pid || got.Network != NetworkUnix {
			t.Errorf("Resolve(%d) = %+v, %v; want %s", pid, got, err, h.paths[label])
		}
	}

	_, err := Resolve(ctx, 999, h.cfg)
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.Exists || !errors.Is(err, ErrNotFound) {
		t.Fatalf("Resolve(999) = %v, want NotFoundError for a missing process", err)
	}
	if !strings.Contains(err.Error(), "stale socket "+h.paths["999"]) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Resolve(999) text does not mention the stale socket: %v", err)
	}

	_, err = Resolve(ctx, 700, h.cfg)
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "zombie") || !strings.Contains(err.Error(), "stale socket") {
		t.Errorf("Resolve(700) = %v, want a NotFoundError naming the zombie and its stale socket", err)
	}

	_, err = Resolve(ctx, 2, h.cfg)
	if !errors.As(err, &nf) || !nf.Exists {
		t.Fatalf("Resolve(2) = %v, want NotFoundError for a live process", err)
	}
	msg := err.Error()
	for _, want := range []string{"dotnet-diagnostic-2-*-socket", "0600", "TMPDIR", "CAP_SYS_PTRACE", "pid: host", "107 bytes"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Resolve(2) text lacks %q: %s", want, msg)
		}
	}

	_, err = Resolve(ctx, 500, h.cfg)
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "500/environ") {
		t.Errorf("Resolve(500) = %v, want a note about the unreadable environ", err)
	}
	if _, err := Resolve(ctx, -1, h.cfg); err == nil {
		t.Error("Resolve(-1) succeeded")
	}
}

func TestFindByName(t *testing.T) {
	h := newFakeHost(t)
	got, err := FindByName(context.Background(), "DOTNET", h.cfg)
	if err != nil || len(got) != 1 || got[0].PID != 100 {
		t.Fatalf("FindByName(DOTNET) = %+v, %v; want pid 100", got, err)
	}
	_, err = FindByName(context.Background(), "app", h.cfg)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `named "app"`) {
		t.Errorf("FindByName(app) = %v, want a NotFoundError", err)
	}
}

func TestNameOf(t *testing.T) {
	h := newFakeHost(t)
	ctx := context.Background()
	for pid, want := range map[int]string{100: "dotnet", 400: "svc", 0: "", 2: "", 31337: ""} {
		if got := NameOf(ctx, pid, h.cfg); got != want {
			t.Errorf("NameOf(%d) = %q, want %q", pid, got, want)
		}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if got := NameOf(canceled, 100, h.cfg); got != "" {
		t.Errorf("NameOf with an ended context = %q, want \"\"", got)
	}
}

func TestDiscoverErrors(t *testing.T) {
	h := newFakeHost(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Discover(ctx, h.cfg); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
	_, err := Discover(context.Background(), &DiscoverConfig{TempDir: h.cfg.TempDir, ProcRoot: filepath.Join(h.cfg.ProcRoot, "nope")})
	if err == nil || !strings.Contains(err.Error(), "procfs") {
		t.Errorf("missing ProcRoot: err = %v", err)
	}
}

// TestDiscoverRealProc uses the real /proc: this test binary's own pid and a
// pid that has exited.
func TestDiscoverRealProc(t *testing.T) {
	tmp := ipctest.ShortDir(t)
	self := os.Getpid()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("cannot run true:", err)
	}
	dead := cmd.Process.Pid
	zombie := exec.Command("sleep", "600")
	if err := zombie.Start(); err != nil {
		t.Skip("cannot start sleep:", err)
	}
	zombie.Process.Kill() // killed, not yet reaped: a zombie, as a SIGKILLed target
	defer zombie.Wait()
	for i := 0; i < 100; i++ {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(zombie.Process.Pid) + "/stat"); strings.Contains(string(b), ") Z ") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	staleSocket(t, filepath.Join(tmp, "dotnet-diagnostic-"+strconv.Itoa(zombie.Process.Pid)+"-1-socket"), time.Time{})
	// This process's socket is live (listened on), as an ipctest fake
	// runtime's is: its name need not record our start time.
	listenAt(t, filepath.Join(tmp, "dotnet-diagnostic-"+strconv.Itoa(self)+"-1-socket"))
	staleSocket(t, filepath.Join(tmp, "dotnet-diagnostic-"+strconv.Itoa(dead)+"-1-socket"), time.Time{})
	got, err := Discover(context.Background(), &DiscoverConfig{TempDir: tmp, LocalOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].PID != self {
		t.Fatalf("Discover = %+v, want only pid %d", got, self)
	}
	if exe := filepath.Base(os.Args[0]); !strings.HasPrefix(exe, got[0].Name) || got[0].Name == "" {
		t.Errorf("Name = %q, want a prefix of %q", got[0].Name, exe)
	}
	if !strings.HasPrefix(got[0].CommandLine, os.Args[0]) {
		t.Errorf("CommandLine = %q, want it to start with %q", got[0].CommandLine, os.Args[0])
	}
}
