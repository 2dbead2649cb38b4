//go:build unix

package monitor

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/internal/procstate"
	"github.com/clrdiag/clrdiag/transport"
)

type countDialer struct{ n int }

func (d *countDialer) Dial(context.Context) (net.Conn, error) {
	d.n++
	return nil, errors.New("dialed")
}

// The guard refuses a stopped process before it dials, and dials a running
// one; only pids of this machine's endpoints are guarded.
func TestStoppedGuard(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "7"), 0o755)
	os.WriteFile(filepath.Join(root, "7", "stat"), []byte("7 (dotnet) T 1 7 7 0 -1\n"), 0o644)
	d := &countDialer{}
	_, err := stoppedGuard{d: d, pid: 7, proc: procstate.FS{Root: root}}.Dial(context.Background())
	if !errors.Is(err, procstate.ErrStopped) || d.n != 0 || !strings.Contains(err.Error(), "kill -CONT 7") {
		t.Errorf("stopped: %v, dialed %d times", err, d.n)
	}
	if statusOf(err) != 409 {
		t.Errorf("status %d", statusOf(err))
	}
	os.WriteFile(filepath.Join(root, "7", "stat"), []byte("7 (dotnet) S 1 7 7 0 -1\n"), 0o644)
	if _, err := (stoppedGuard{d: d, pid: 7, proc: procstate.FS{Root: root}}).Dial(context.Background()); err == nil || d.n != 1 {
		t.Errorf("running: %v, dialed %d times", err, d.n)
	}

	ep := transport.Endpoint{Network: transport.NetworkUnix, Address: "/x", PID: 7}
	for _, c := range []struct {
		p    Process
		want int
	}{
		{Process{PID: 7, Dialer: ep}, 7},
		{Process{PID: 7, Dialer: &ep}, 7},
		{Process{PID: 7, Dialer: transport.Dialer{Endpoint: ep}}, 7},
		{Process{PID: 7, Dialer: d}, 0},               // reached some other way
		{Process{PID: 7, Dialer: reverseDialer{}}, 0}, // another PID namespace, maybe
	} {
		if got := localPID(c.p); got != c.want {
			t.Errorf("localPID(%T) = %d, want %d", c.p.Dialer, got, c.want)
		}
	}
}
