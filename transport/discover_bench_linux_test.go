//go:build linux

package transport

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipctest"
)

// BenchmarkDiscover measures a full discovery (tmp dir listing plus the
// /proc scan of every process on the machine) with 20 live targets: `sleep`
// children, each with a socket named after its pid.
func BenchmarkDiscover(b *testing.B) {
	tmp := ipctest.ShortDir(b)
	const n = 20
	for range n {
		cmd := exec.Command("sleep", "600")
		if err := cmd.Start(); err != nil {
			b.Skip("cannot start sleep:", err)
		}
		b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		staleSocket(b, filepath.Join(tmp, runtimeSocketName(b, cmd.Process.Pid)), time.Time{})
	}
	cfg := &DiscoverConfig{TempDir: tmp}
	ctx := context.Background()
	ps, err := Discover(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	found := 0
	for _, p := range ps {
		if p.Name == "sleep" {
			found++
		}
	}
	if found != n {
		b.Fatalf("found %d sleep targets, want %d: %+v", found, n, ps)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Discover(ctx, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolve measures resolving one pid.
func BenchmarkResolve(b *testing.B) {
	tmp := ipctest.ShortDir(b)
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		b.Skip("cannot start sleep:", err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	staleSocket(b, filepath.Join(tmp, runtimeSocketName(b, cmd.Process.Pid)), time.Time{})
	cfg := &DiscoverConfig{TempDir: tmp}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Resolve(context.Background(), cmd.Process.Pid, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// runtimeSocketName is the name a runtime gives its socket: its pid and its
// start time in clock ticks after boot (so the ownership check needs no scan
// for another namespace's claim).
func runtimeSocketName(b testing.TB, pid int) string {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	start, err := parseStatStart(st)
	if err != nil {
		b.Fatal(err)
	}
	return fmt.Sprintf("dotnet-diagnostic-%d-%d-socket", pid, start)
}

// BenchmarkResolveForeignKey is the ownership check's worst case: a socket
// whose name does not record its process's start time, so every process is
// read to see whether one in another PID namespace claims it.
func BenchmarkResolveForeignKey(b *testing.B) {
	tmp := ipctest.ShortDir(b)
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		b.Skip("cannot start sleep:", err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Listened on, as a live runtime's socket is: an unlistened one with
	// another start time in its name is refused as stale at once.
	listenAt(b, filepath.Join(tmp, "dotnet-diagnostic-"+strconv.Itoa(cmd.Process.Pid)+"-1-socket"))
	cfg := &DiscoverConfig{TempDir: tmp}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Resolve(ctx, cmd.Process.Pid, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
