//go:build unix

package reverse_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/transport/reverse"
)

// BenchmarkCommand measures one command over a reverse connection, including
// the runtime's reconnection and Advertise.
func BenchmarkCommand(b *testing.B) {
	dir, err := os.MkdirTemp("", "rv")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s.sock")
	srv, err := reverse.Listen(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	f, err := ipctest.NewServer(ipctest.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go f.ConnectTo(ctx, path)
	rt, err := srv.Accept(ctx)
	if err != nil {
		b.Fatal(err)
	}
	c := diag.NewClient(rt, nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.ResumeRuntime(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
