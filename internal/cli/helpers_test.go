package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/syncbuf"
	"github.com/clrdiag/clrdiag/nettrace"
)

// run executes the CLI in-process and returns its exit status and output.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// collectAsync runs clrdiag with args in the background.
type asyncRun struct {
	done   chan struct{}
	code   int
	stdout syncbuf.Buffer
	stderr syncbuf.Buffer
}

func startCLI(args ...string) *asyncRun {
	r := &asyncRun{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.code = Main(args, strings.NewReader(""), &r.stdout, &r.stderr)
	}()
	return r
}

// waitSession waits until the CLI says the session is running.
func (r *asyncRun) waitSession(t *testing.T) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(r.stderr.String(), "Session        :") {
		select {
		case <-r.done:
			t.Fatalf("collect ended before the session started (exit %d):\n%s", r.code, r.stderr.String())
		case <-deadline:
			t.Fatalf("session not started after 30s:\n%s", r.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (r *asyncRun) wait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(d):
		t.Fatalf("command did not end within %v:\n%s", d, r.stderr.String())
	}
}

type decodedEvent struct {
	provider string
	name     string
	id       uint32
	fields   nettrace.Object
}

// readTrace decodes a whole file and fails the test on any error.
func readTrace(t *testing.T, path string) ([]decodedEvent, nettrace.Stats) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := nettrace.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []decodedEvent
	var ev nettrace.Event
	for {
		err := rd.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s does not decode: %v", path, err)
		}
		de := decodedEvent{provider: ev.Metadata.ProviderName, name: ev.Metadata.EventName, id: ev.Metadata.EventID}
		if len(ev.Metadata.Fields) > 0 {
			if de.fields, err = ev.Fields(); err != nil {
				t.Fatalf("payload of %s/%d: %v", de.provider, de.id, err)
			}
		}
		out = append(out, de)
	}
	return out, rd.Stats()
}

// goToolPprof runs go tool pprof with args on a file, checks that the
// output names every want, and returns it ("" when go is not on PATH and
// CI is not set).
func goToolPprof(t *testing.T, file string, args []string, want ...string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("go not on PATH (CI=true): %v", err)
		}
		t.Logf("SKIPPING go tool pprof: %v", err)
		return ""
	}
	cmd := exec.Command(goTool, append(append([]string{"tool", "pprof"}, args...), file)...)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
	txt, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof %v: %v\n%s", args, err, txt)
	}
	if strings.Contains(string(txt), "Main binary filename not available") {
		t.Errorf("go tool pprof %v looks for a binary:\n%s", args, txt)
	}
	for _, w := range want {
		if !strings.Contains(string(txt), w) {
			t.Errorf("go tool pprof %v does not show %q:\n%s", args, w, txt)
		}
	}
	return string(txt)
}

// sentenceOf is the class sentence a failure with code must start with
// (after "clrdiag: ").
func sentenceOf(t *testing.T, code int) string {
	t.Helper()
	s := classSentence(code)
	if s == "" {
		t.Fatalf("no sentence for exit %d", code)
	}
	return "clrdiag: " + s + ": "
}

// checkClass checks an exit status and that the last line of stderr is
// the class's failure message.
func checkClass(t *testing.T, code, want int, stderr string) {
	t.Helper()
	if code != want {
		t.Fatalf("exit %d, want %d:\n%s", code, want, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, sentenceOf(t, want)) {
		t.Errorf("the failure does not start with its class's sentence %q:\n%s", sentenceOf(t, want), stderr)
	}
}
