package stacks

import (
	"os"
	"strings"
	"testing"
)

func TestOSThreadNames(t *testing.T) {
	if _, why := osThreadNames(0, []uint64{1}); !strings.Contains(why, "unknown") {
		t.Errorf("pid 0: %q", why)
	}
	if _, why := osThreadNames(1<<30, []uint64{1}); !strings.Contains(why, "not readable") {
		t.Errorf("no such pid: %q", why)
	}
	// This test process's threads are unnamed (they show the executable's
	// name), unless it runs in a nested PID namespace.
	pid := os.Getpid()
	names, why := osThreadNames(pid, []uint64{uint64(pid)})
	if len(names) != 0 || why == "" {
		t.Errorf("own threads: %v %q", names, why)
	}
}
