package testcapture

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommittedCaptures: every committed capture is there, unaltered, and
// listed in the README with its source; nothing else is in the directory.
func TestCommittedCaptures(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(Dir(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for rel, want := range Committed {
		b, err := os.ReadFile(filepath.Join(Dir(), filepath.FromSlash(rel)))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		total += int64(len(b))
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s: sha256 %s, want %s", rel, got, want)
		}
		if !strings.Contains(string(readme), filepath.Base(rel)) {
			t.Errorf("%s is not described in testdata/captures/README.md", rel)
		}
	}
	for rel := range External {
		if _, ok := Committed[rel]; ok {
			t.Errorf("%s is both committed and external", rel)
		}
		if _, err := os.Stat(filepath.Join(Dir(), filepath.FromSlash(rel))); err == nil {
			t.Errorf("%s is external but present in testdata/captures", rel)
		}
	}
	err = filepath.WalkDir(Dir(), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "README.md" {
			return err
		}
		rel, _ := filepath.Rel(Dir(), p)
		if _, ok := Committed[filepath.ToSlash(rel)]; !ok {
			t.Errorf("%s is in testdata/captures but not in testcapture.Committed", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total > 10<<20 {
		t.Errorf("committed captures weigh %d bytes; keep them under 10 MB and put larger ones behind %s", total, EnvVar)
	}
}

func TestLoadUnzips(t *testing.T) {
	b := Load(t, "perfview/eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip")
	if !strings.HasPrefix(string(b), "Nettrace") {
		t.Fatalf("unzipped capture starts with %q", b[:min(8, len(b))])
	}
}

// TestSize: Size is the length of what Load returns, zipped or not.
func TestSize(t *testing.T) {
	for _, rel := range []string{"perfview/eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip", "misc/net6.0.9-windows.nettrace"} {
		if got, want := Size(t, rel), int64(len(Load(t, rel))); got != want {
			t.Errorf("%s: Size %d, Load gives %d bytes", rel, got, want)
		}
	}
}

func TestExternalSkipsWithoutEnv(t *testing.T) {
	t.Setenv(EnvVar, "")
	if Available("zetslief/perf.nettrace") {
		t.Fatal("an external capture is available without " + EnvVar)
	}
	if !Available("misc/net6.0.9-windows.nettrace") {
		t.Fatal("a committed capture is not available")
	}
}
