package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestInterruptibleReadsEverything(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 100000) // 1.6 MB, several chunks
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := iotest.TestReader(interruptible(ctx, bytes.NewReader(data)), data); err != nil {
		t.Fatal(err)
	}
	r := interruptible(ctx, iotest.TimeoutReader(bytes.NewReader(data)))
	b, err := io.ReadAll(r)
	if !errors.Is(err, iotest.ErrTimeout) || len(b) != 256<<10 {
		t.Fatalf("read %d bytes, err %v; want the first chunk, then the reader's error", len(b), err)
	}
}

func TestInterruptibleStopsWhileBlocked(t *testing.T) {
	pr, pw := io.Pipe() // nothing is ever written
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	r := interruptible(ctx, pr)
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
					r = interruptible(ctx, r)
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
