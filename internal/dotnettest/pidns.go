package dotnettest

import (
	"os"
	"os/exec"
	"testing"
)

// NeedPIDNamespace skips a test that starts a process in a new PID
// namespace (unshare --pid --fork --mount-proc) where that cannot work:
// without root, or without a host process 2 for the namespaced pid 2 to
// be confused with. unshare failing as root is a failure under CI=true.
func NeedPIDNamespace(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --pid")
	}
	if err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("unshare --pid --fork --mount-proc does not work here: %v", err)
		}
		t.Skipf("unshare --pid --fork --mount-proc does not work here: %v", err)
	}
	if _, err := os.Stat("/proc/2"); err != nil {
		t.Skip("no process 2 in this PID namespace: nothing to confuse the socket with")
	}
}
