//go:build unix

package eventpipe_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/ipctest"
)

// BenchmarkSessionDrain measures the client side of a session: a fake
// runtime writes 256 MB as fast as the socket takes it and the session is
// spooled to a file, as trace collect does.
func BenchmarkSessionDrain(b *testing.B) {
	const total = 256 << 20
	if testing.Short() {
		b.Skip("moves 256 MB per iteration")
	}
	chunk := make([]byte, 1<<20)
	copy(chunk, "Nettrace\x14\x00\x00\x00") // a nettrace header, as Drain checks
	srv, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET8, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		for n := 0; n < total; n += len(chunk) {
			if _, err := s.Stream.Write(chunk); err != nil {
				return err
			}
		}
		return nil
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	client := diag.NewClient(srv, nil)
	dir := os.Getenv("DRAIN_DIR") // e.g. /dev/shm to leave the disk out
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, "drain.nettrace")
	defer os.Remove(path)
	// The ceiling: the same stream read into io.Discard.
	b.Run("discard", func(b *testing.B) {
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			sess, err := eventpipe.Start(context.Background(), client, eventpipe.Config{Providers: []eventpipe.Provider{{Name: "P"}}})
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, sess); err != nil || n != total {
				b.Fatalf("copied %d bytes: %v", n, err)
			}
			sess.Close()
		}
	})
	// Session.Drain into a spool on a file: what trace collect does.
	b.Run("drain", func(b *testing.B) {
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			sess, err := eventpipe.Start(context.Background(), client, eventpipe.Config{Providers: []eventpipe.Provider{{Name: "P"}}})
			if err != nil {
				b.Fatal(err)
			}
			res, err := sess.Drain(context.Background(), eventpipe.NewSpool(f), eventpipe.DrainConfig{})
			if err != nil || res.Bytes != total {
				b.Fatalf("drained %d bytes: %v", res.Bytes, err)
			}
			f.Close()
		}
	})
	b.Run("file", func(b *testing.B) {
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			spoolOnce(b, client, path, total)
		}
	})
}

func spoolOnce(b *testing.B, client *diag.Client, path string, total int64) {
	{
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		sess, err := eventpipe.Start(context.Background(), client, eventpipe.Config{Providers: []eventpipe.Provider{{Name: "P"}}})
		if err != nil {
			b.Fatal(err)
		}
		n, err := eventpipe.NewSpool(f).Copy(sess)
		if err != nil || n != total {
			b.Fatalf("copied %d bytes: %v", n, err)
		}
		sess.Close()
		f.Close()
	}
}
