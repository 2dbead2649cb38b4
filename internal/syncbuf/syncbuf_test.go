package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers and a reader at once: run with -race, every write arrives whole.
func TestConcurrentWriteAndRead(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("ab\n"))
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			_ = b.String()
		}
	}()
	wg.Wait()
	<-done
	if got := b.String(); got != strings.Repeat("ab\n", 400) {
		t.Fatalf("got %d bytes, want 1200 of \"ab\\n\"", len(got))
	}
}
