package ctxio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
)

func TestInterruptibleReadsEverything(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 100000) // 1.6 MB, several chunks
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := iotest.TestReader(Interruptible(ctx, bytes.NewReader(data)), data); err != nil {
		t.Fatal(err)
	}
	r := Interruptible(ctx, iotest.TimeoutReader(bytes.NewReader(data)))
	b, err := io.ReadAll(r)
	if !errors.Is(err, iotest.ErrTimeout) || len(b) != 256<<10 {
		t.Fatalf("read %d bytes, err %v; want the first chunk, then the reader's error", len(b), err)
	}
}

func TestInterruptibleStopsWhileBlocked(t *testing.T) {
	pr, pw := io.Pipe() // nothing is ever written
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	r := Interruptible(ctx, pr)
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 10))
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Read after cancel: %v", err)
	}
}

// BenchmarkInterruptible measures what the signal-aware reader costs on a
// 64 MB input read through a 1 MiB bufio.Reader, against the plain reader.
func BenchmarkInterruptible(b *testing.B) {
	data := make([]byte, 64<<20)
	for _, mode := range []string{"plain", "interruptible"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for range b.N {
				var r io.Reader = bytes.NewReader(data)
				ctx, cancel := context.WithCancel(context.Background())
				if mode == "interruptible" {
					r = Interruptible(ctx, r)
				}
				if _, err := io.Copy(io.Discard, onlyRead{bufio.NewReaderSize(r, 1<<20)}); err != nil {
					b.Fatal(err)
				}
				cancel()
			}
		})
	}
}

// onlyRead hides WriterTo so io.Copy reads in chunks as the decoders do.
type onlyRead struct{ r io.Reader }

func (o onlyRead) Read(p []byte) (int, error) { return o.r.Read(p) }

// TestCancelable: a regular file is read as it is (no goroutine, no
// buffers), and Read returns ctx's error once it is done; a pipe goes
// through interruptible.
func TestCancelable(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 100000)
	path := filepath.Join(t.TempDir(), "trace")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	r := Cancelable(ctx, f)
	if _, ok := r.(*ctxReader); !ok {
		t.Fatalf("regular file: got %T, want *ctxReader", r)
	}
	b, err := io.ReadAll(io.LimitReader(r, 1000))
	if err != nil || !bytes.Equal(b, data[:1000]) {
		t.Fatalf("first 1000 bytes: %d bytes, err %v", len(b), err)
	}
	cancel()
	if n, err := r.Read(make([]byte, 10)); n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("Read after cancel: %d, %v; want 0, context.Canceled", n, err)
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	if r := Cancelable(ctx2, pr); func() bool { _, ok := r.(*interruptReader); return !ok }() {
		t.Fatalf("pipe: got %T, want *interruptReader", r)
	}
	if r := Cancelable(context.Background(), f); r != io.Reader(f) {
		t.Fatalf("context that never ends: got %T, want the file itself", r)
	}
}

// TestReaderAt: ReadAt reads through until ctx is done, then fails with
// its error without reading.
func TestReaderAt(t *testing.T) {
	data := []byte("0123456789")
	ctx, cancel := context.WithCancel(context.Background())
	r := ReaderAt(ctx, bytes.NewReader(data))
	b := make([]byte, 4)
	if n, err := r.ReadAt(b, 3); n != 4 || err != nil || string(b) != "3456" {
		t.Fatalf("ReadAt(3) = %d %q, %v; want 4 \"3456\", nil", n, b[:n], err)
	}
	cancel()
	if n, err := r.ReadAt(b, 0); n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadAt after cancel = %d, %v; want 0, context.Canceled", n, err)
	}
}
