package eventpipe

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
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

// A ring spool never grows past its size, and a slow reader still gets
// every byte: the writer waits for it.
func TestRingSpoolBoundsTheFile(t *testing.T) {
	dir := t.TempDir()
	const ring = 256 << 10
	sp, err := NewTempSpool(dir, ring)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	data := make([]byte, 3<<20+17)
	rand.New(rand.NewSource(2)).Read(data)
	r := sp.NewReader()
	got := make(chan []byte)
	go func() {
		var out []byte
		buf := make([]byte, 5000)
		for {
			n, err := r.Read(buf)
			out = append(out, buf[:n]...)
			if err != nil {
				break
			}
		}
		got <- out
	}()
	n, err := sp.Copy(&slowSource{data: data, step: 100 << 10})
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, data) {
		t.Fatalf("the reader got %d bytes, want the %d written, identical", len(b), len(data))
	}
	st, err := sp.f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > ring {
		t.Errorf("the ring file has %d bytes, more than %d", st.Size(), ring)
	}
	// A reader made after the ring wrapped cannot see the start.
	if _, err := sp.NewReader().Read(make([]byte, 1)); !errors.Is(err, ErrSpoolClosed) {
		t.Errorf("late reader: %v", err)
	}
}

// A full ring whose reader went away (closed) does not block the writer,
// and Finish releases a writer waiting for room.
func TestRingSpoolReleases(t *testing.T) {
	sp, err := NewTempSpool(t.TempDir(), 1024)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	r := sp.NewReader()
	done := make(chan error, 1)
	go func() {
		_, err := sp.Write(make([]byte, 4096))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Write into a full ring returned %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	r.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r2 := sp.NewReader() // too late: sees nothing
	_ = r2
	sp2, err := NewTempSpool(t.TempDir(), 1024)
	if err != nil {
		t.Fatal(err)
	}
	defer sp2.Close()
	_ = sp2.NewReader()
	go func() {
		_, err := sp2.Write(make([]byte, 4096))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	sp2.Finish(nil)
	if err := <-done; !errors.Is(err, ErrSpoolClosed) {
		t.Fatalf("Write after Finish: %v", err)
	}
}

// A temporary spool leaves nothing in its directory, even while open
// (where the system allows it), and Close removes it everywhere.
func TestTempSpoolLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	sp, err := NewTempSpool(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Write([]byte("Nettrace")); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if runtime.GOOS != "windows" {
		if !sp.Unlinked() || len(ents) != 0 {
			t.Errorf("unlinked %v, directory holds %d entries while the spool is open", sp.Unlinked(), len(ents))
		}
	}
	sp.Finish(nil)
	b, _ := io.ReadAll(sp.NewReader())
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	if string(b) != "Nettrace" {
		t.Errorf("read back %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("directory holds %d entries after Close", len(ents))
	}
}
