//go:build unix

package cli

import (
	"bufio"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/syncbuf"
)

// trace stream | head: the output goes away; the session is stopped, the
// command ends at once with status 0, and the spool file was never visible
// in the temporary directory.
func TestFakeStreamOutputGoesAway(t *testing.T) {
	srv, port := endlessRuntime(t, false, false)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	var stderr syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"trace", "stream", "--diagnostic-port", port, "--providers", "Fake-Source"}, strings.NewReader(""), pw, &stderr)
	}()
	// Read a few lines as head does, look at the spool directory, go away.
	br := bufio.NewReader(pr)
	for i := 0; i < 10; i++ {
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatalf("line %d: %v\n%s", i, err, stderr.String())
		}
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("the spool is visible in %s: %v", tmp, ents[0].Name())
	}
	pr.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d:\n%s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("trace stream went on after its output went away:\n%s", stderr.String())
	}
	if !stopTracingSent(srv) {
		t.Errorf("the session was not stopped on the runtime")
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left behind in %s: %v", tmp, ents[0].Name())
	}
}

// The first Ctrl-C stops the stream; a second one while the runtime does
// not answer StopTracing ends it at once.
func TestFakeStreamSecondInterrupt(t *testing.T) {
	port := stopNeverAnsweredServer(t, 3)
	r := startCLI("trace", "stream", "--diagnostic-port", port, "--providers", "Fake-Source", "--stop-timeout", "1m")
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(r.stdout.String(), "Hello") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("no events printed:\n%s", r.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := 0; i < 2; i++ {
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.wait(t, 10*time.Second)
	if r.code != 0 || !strings.Contains(r.stderr.String(), "Abandoning the session") {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr.String())
	}
}
