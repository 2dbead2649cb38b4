//go:build unix

package dotnettest

import (
	"testing"
	"time"
)

// TestBasicTarget proves the harness itself: the runtime starts a compiled
// target, the target answers on stdin/stdout and publishes its socket.
func TestBasicTarget(t *testing.T) {
	rt := Find(t)
	dll := rt.Build(t, "Basic")
	tg := rt.Start(t, dll, nil, nil)
	if tg.Socket == "" {
		t.Fatal("no diagnostic socket")
	}
	tg.Send(t, "ping")
	tg.Expect(t, "PONG", 10*time.Second)
	tg.Send(t, "exit 7")
	select {
	case <-tg.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("target did not exit")
	}
	if code := tg.Cmd.ProcessState.ExitCode(); code != 7 {
		t.Fatalf("exit code = %d, want 7", code)
	}
}
