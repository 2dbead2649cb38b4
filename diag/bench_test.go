package diag_test

import (
	"context"
	"testing"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipctest"
)

// BenchmarkProcessInfo measures one ProcessInfo3 exchange over a Unix
// socket against the fake server: dial, send, read, decode, close.
func BenchmarkProcessInfo(b *testing.B) {
	srv, err := ipctest.NewServer(ipctest.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	c := diag.NewClient(srv, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.ProcessInfo(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
