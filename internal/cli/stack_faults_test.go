//go:build unix

package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
)

// A stream of garbage after a valid header: stack used to spool it (154 s,
// 263 MB) and then say "no thread samples". Now the damage stops the
// session at once and is the error (exit 5, the byte named).
func TestFakeStackGarbage(t *testing.T) {
	srv, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET3_1, Tracing: garbageSession})
	begin := time.Now()
	code, _, errOut := run(t, "stack", "--diagnostic-port", port)
	checkClass(t, code, exitDamaged, errOut)
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
	if !strings.Contains(errOut, "at byte ") || strings.Contains(errOut, "no thread samples") {
		t.Errorf("the damage is not the error:\n%s", errOut)
	}
	if !stopTracingSent(srv) {
		t.Error("the session was not stopped")
	}
}

// A runtime that floods valid events without a sample and keeps sending
// after the stop: the rundown's size cap ends the session, and the error
// says that rather than only "no thread samples"; one session, no retries.
func TestFakeStackEndlessRundown(t *testing.T) {
	srv, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET3_1, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{})
		if err != nil {
			return nil
		}
		if err := w.AddMetadata(fakeHelloMeta); err != nil {
			return nil
		}
		for i := 0; ; i += 200 {
			writeFakeEventsTo(w, i, 200)
			if w.Flush() != nil {
				return nil
			}
		}
	}})
	begin := time.Now()
	code, _, errOut := run(t, "stack", "--diagnostic-port", port, "--rundown-max-size", "2MB")
	checkClass(t, code, exitRuntime, errOut)
	if d := time.Since(begin); d > 30*time.Second {
		t.Errorf("took %v", d)
	}
	if !strings.Contains(errOut, "kept sending after the stop") {
		t.Errorf("the cause is hidden:\n%s", errOut)
	}
	if n := bytes.Count([]byte(errOut), []byte("sampling again")); n != 0 {
		t.Errorf("retried %d times although a longer session would end the same way:\n%s", n, errOut)
	}
	if n := len(srv.Requests()); n > 2 {
		t.Errorf("%d requests: more than one session", n)
	}
}
