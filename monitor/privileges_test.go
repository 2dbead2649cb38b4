package monitor

import (
	"strings"
	"testing"
)

// The notes say what the monitor lacks, by capability, and always what a
// dump needs.
func TestPrivilegeNotes(t *testing.T) {
	none := Privileges{UID: 1000, Known: true}.Notes()
	all := strings.Join(none, "\n")
	for _, want := range []string{"uid 1000 with no capabilities: serving the .NET processes of uid 1000", "CAP_DAC_OVERRIDE to connect", "CAP_SYS_PTRACE", "CAP_FOWNER", "createdump"} {
		if !strings.Contains(all, want) {
			t.Errorf("notes lack %q:\n%s", want, all)
		}
	}
	node := strings.Join(Privileges{UID: 1000, Known: true, DACOverride: true, SysPtrace: true, FOwner: true}.Notes(), "\n")
	if strings.Contains(node, "would need") || !strings.Contains(node, "with CAP_DAC_OVERRIDE, CAP_SYS_PTRACE, CAP_FOWNER") {
		t.Errorf("node notes:\n%s", node)
	}
	if root := strings.Join(Privileges{UID: 0, Known: true, DACOverride: true, SysPtrace: true, FOwner: true}.Notes(), "\n"); !strings.Contains(root, "running as root") {
		t.Errorf("root notes:\n%s", root)
	}
	if (Privileges{UID: 5}).Notes() != nil {
		t.Error("notes without known capabilities")
	}
	// This process's own, read from /proc.
	if p := CurrentPrivileges(); p.Known && p.UID == 0 && !p.DACOverride {
		t.Logf("root without CAP_DAC_OVERRIDE (a restricted container): %+v", p)
	}
}
