package egress_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/egress"
	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/nettrace"
)

// nettraceArtifact is a real capture as an artifact with a local copy.
func nettraceArtifact(t *testing.T) (egress.Artifact, []byte) {
	t.Helper()
	path := testcapture.Path(t, "clrdiag/hot-3.1.2-linux-x64.nettrace")
	a, f, err := egress.File(path, "trace_4242_20261128_060000.nettrace", "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return a, want
}

// decodeAll checks that b is a nettrace that decodes to its end, and
// returns its event count.
func decodeAll(t *testing.T, b []byte) int {
	t.Helper()
	r, err := nettrace.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the shipped artifact is not a nettrace: %v", err)
	}
	n := 0
	for _, err := range r.All() {
		if err != nil {
			t.Fatalf("the shipped nettrace fails to decode after %d events: %v", n, err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("the shipped nettrace has no events")
	}
	return n
}

func TestValidateName(t *testing.T) {
	for _, name := range []string{"dump_1_20260101.dmp", "trace.nettrace", "a b", "ünïcode.txt", strings.Repeat("x", 255)} {
		if err := egress.ValidateName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", ".", "..", "a/b", `a\b`, "../x", "a\x00b", "a\nb", strings.Repeat("x", 256), "\xff"} {
		if err := egress.ValidateName(name); !errors.Is(err, egress.ErrInvalidName) {
			t.Errorf("%q: err = %v, want ErrInvalidName", name, err)
		}
	}
}

func TestErrorSaysWhereTheArtifactIs(t *testing.T) {
	e := &egress.Error{Provider: "s3", Artifact: "d.dmp", Destination: "s3://b/d.dmp", LocalPath: "/dumps/d.dmp", Attempts: 5, Err: io.ErrUnexpectedEOF}
	want := "egress s3: d.dmp to s3://b/d.dmp failed after 5 attempts: unexpected EOF; the artifact is kept at /dumps/d.dmp"
	if e.Error() != want {
		t.Errorf("got  %s\nwant %s", e.Error(), want)
	}
	if !errors.Is(e, io.ErrUnexpectedEOF) {
		t.Error("Unwrap")
	}
	e.LocalPath = ""
	if !strings.HasSuffix(e.Error(), "; the artifact has no local copy") {
		t.Error(e.Error())
	}
}

func TestFileRefusesADirectory(t *testing.T) {
	if _, _, err := egress.File(t.TempDir(), "", ""); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("err = %v", err)
	}
}
