package record

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var guidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestIDsRecordThenReplay: the ids made while recording are saved in
// order and a replay gives them back in that order, then random ones.
func TestIDsRecordThenReplay(t *testing.T) {
	dir := t.TempDir()
	rec := RecordIDs(dir)
	var made []string
	for range 3 {
		id := rec.NewID()
		if !guidRE.MatchString(id) {
			t.Fatalf("recorded id %q is not a version 4 GUID", id)
		}
		made = append(made, id)
	}
	if made[0] == made[1] || made[1] == made[2] {
		t.Fatalf("ids repeat: %q", made)
	}
	b, err := os.ReadFile(filepath.Join(dir, IDsFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(b)); strings.Join(got, ",") != strings.Join(made, ",") {
		t.Fatalf("%s holds %q, want %q", IDsFile, got, made)
	}
	st, err := os.Stat(filepath.Join(dir, IDsFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: mode %v, want 0600", IDsFile, st.Mode().Perm())
	}

	rep := ReplayIDs(dir)
	for i, want := range made {
		if got := rep.NewID(); got != want {
			t.Fatalf("replayed id %d = %q, want %q", i, got, want)
		}
	}
	extra := rep.NewID()
	if !guidRE.MatchString(extra) || extra == made[2] {
		t.Fatalf("id past the recording = %q, want a new random GUID", extra)
	}
}

// TestReplayIDsWithoutFile: a recording made without the ids replays
// random ones; blank lines are skipped and at most 1024 ids are read.
func TestReplayIDsWithoutFile(t *testing.T) {
	if id := ReplayIDs(t.TempDir()).NewID(); !guidRE.MatchString(id) {
		t.Fatalf("NewID without %s = %q, want a random GUID", IDsFile, id)
	}
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("\n  a  \n\n")
	for range maxReplayIDs + 10 {
		b.WriteString("x\n")
	}
	if err := os.WriteFile(filepath.Join(dir, IDsFile), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	l := ReplayIDs(dir)
	if len(l.ids) != maxReplayIDs {
		t.Fatalf("read %d ids, want %d", len(l.ids), maxReplayIDs)
	}
	if l.ids[0] != "a" {
		t.Fatalf("read ids starting %q, want \"a\"", l.ids[0])
	}
}
