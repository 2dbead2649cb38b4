package eventpipe

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// slowSource hands out data in small pieces, signalling each read, so that
// readers really follow a growing file.
type slowSource struct {
	data []byte
	step int
}

func (s *slowSource) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	n := min(s.step, len(s.data), len(p))
	copy(p, s.data[:n])
	s.data = s.data[n:]
	return n, nil
}

func TestSpoolFollowers(t *testing.T) {
	data := make([]byte, 3<<20+17)
	rand.New(rand.NewSource(1)).Read(data)
	f, err := os.Create(filepath.Join(t.TempDir(), "s.nettrace"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sp := NewSpool(f)
	var wg sync.WaitGroup
	got := make([][]byte, 3)
	for i := range got {
		r := sp.NewReader()
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := io.ReadAll(r)
			if err != nil {
				t.Error(err)
			}
			got[i] = b
		}()
	}
	n, err := sp.Copy(&slowSource{data: data, step: 4093})
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	wg.Wait()
	for i, b := range got {
		if !bytes.Equal(b, data) {
			t.Fatalf("reader %d got %d bytes, want the %d written", i, len(b), len(data))
		}
	}
	disk, _ := os.ReadFile(f.Name())
	if !bytes.Equal(disk, data) {
		t.Fatal("file content differs from the stream")
	}
}

type failAfter struct {
	data []byte
	err  error
}

func (s *failAfter) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, s.err
	}
	n := copy(p, s.data)
	s.data = s.data[n:]
	return n, nil
}

func TestSpoolKeepsBytesBeforeError(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sp := NewSpool(f)
	boom := errors.New("connection reset")
	n, err := sp.Copy(&failAfter{data: []byte("partial"), err: boom})
	if n != 7 || !errors.Is(err, boom) {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	b, _ := io.ReadAll(sp.NewReader())
	if string(b) != "partial" {
		t.Fatalf("follower read %q", b)
	}
	if done, derr := sp.Done(); !done || !errors.Is(derr, boom) {
		t.Fatalf("Done = %v, %v", done, derr)
	}
}

func BenchmarkSpoolCopy(b *testing.B) {
	data := make([]byte, 64<<20)
	f, err := os.Create(filepath.Join(b.TempDir(), "bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Seek(0, 0); err != nil {
			b.Fatal(err)
		}
		sp := NewSpool(f)
		if _, err := sp.Copy(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
