//go:build linux

package transport

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkDiscover measures a full discovery (tmp dir listing plus the
// /proc scan of every process on the machine) with 20 live targets: `sleep`
// children, each with a socket named after its pid.
func BenchmarkDiscover(b *testing.B) {
	tmp := shortDir(b)
	const n = 20
	for range n {
		cmd := exec.Command("sleep", "600")
		if err := cmd.Start(); err != nil {
			b.Skip("cannot start sleep:", err)
		}
		b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		staleSocket(b, filepath.Join(tmp, "dotnet-diagnostic-"+strconv.Itoa(cmd.Process.Pid)+"-1-socket"), time.Time{})
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
	tmp := shortDir(b)
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		b.Skip("cannot start sleep:", err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	staleSocket(b, filepath.Join(tmp, "dotnet-diagnostic-"+strconv.Itoa(cmd.Process.Pid)+"-1-socket"), time.Time{})
	cfg := &DiscoverConfig{TempDir: tmp}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Resolve(context.Background(), cmd.Process.Pid, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
