//go:build unix

package transport

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipctest"
)

// TestScanDirLarge: scanDir reads a directory of several batches of files
// (a busy /tmp) and keeps exactly the endpoints, every one of them, best
// first per pid, wherever they fall in the listing.
func TestScanDirLarge(t *testing.T) {
	dir := ipctest.ShortDir(t)
	files := 0 // regular files named like an endpoint
	for i := range 3*scanDirBatch + 7 {
		name := fmt.Sprintf("f%05d", i)
		if i%100 == 0 {
			// Named like an endpoint but a regular file.
			name = fmt.Sprintf("dotnet-diagnostic-%d-1-socket", 100000+i)
			files++
		}
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	want := map[int][]string{}
	for i := range 40 {
		pid := 1000 + i%13
		name := fmt.Sprintf("dotnet-diagnostic-%d-%d-socket", pid, 500+i)
		mtime := old.Add(time.Duration(i) * time.Minute)
		staleSocket(t, filepath.Join(dir, name), mtime)
		// Later i are newer, and newer is better: the newest first.
		want[pid] = append([]string{filepath.Join(dir, name)}, want[pid]...)
	}
	got, err := scanDir(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[int][]string{}
	for pid, cs := range got {
		for _, c := range cs {
			paths[pid] = append(paths[pid], c.path)
		}
	}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("scanDir found %v, want %v", paths, want)
	}

	all, err := scanDir(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(all); n != 13+files {
		t.Errorf("without wantSockets scanDir found %d pids, want 13 with sockets + %d with regular files", n, files)
	}

	if got, err := scanDir(filepath.Join(dir, "missing"), true); err != nil || len(got) != 0 {
		t.Errorf("scanDir of a missing directory = %v, %v; want empty, nil", got, err)
	}
	if _, err := scanDir(filepath.Join(dir, "f00001"), true); err == nil {
		t.Error("scanDir of a regular file: no error")
	}
}
