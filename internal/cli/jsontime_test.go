package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/nettrace"
)

// TestYearOutOfRange: a header whose clock says year 30000 (damaged or
// hostile) still gives JSON from stats and events, with the raw year.
func TestYearOutOfRange(t *testing.T) {
	var buf bytes.Buffer
	w, err := nettrace.NewWriter(&buf, nettrace.WriterConfig{SyncTimeUTC: time.Date(30000, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	md := &nettrace.Metadata{ID: 1, ProviderName: "P", EventID: 1, EventName: "E",
		Fields: []nettrace.Field{{Name: "When", Type: nettrace.TypeDateTime}}}
	if err := w.AddMetadata(md); err != nil {
		t.Fatal(err)
	}
	// A DateTime field far beyond year 9999 (FILETIME near its maximum).
	payload, err := nettrace.AppendPayload(nil, md.Fields, nettrace.Object{{Name: "When", Value: time.Date(29000, 1, 1, 0, 0, 0, 0, time.UTC)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteEvent(&nettrace.Event{Metadata: md, SequenceNumber: 1, ThreadID: 1, CaptureThreadID: 1, Timestamp: 10, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "y30000.nettrace")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "trace", "stats", path, "--json")
	var st map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || !strings.HasPrefix(st["startTime"].(string), "30000-01-02T03:04:05") {
		t.Fatalf("stats --json: exit %d %s\n%s", code, errOut, out)
	}
	code, out, errOut = run(t, "trace", "events", path, "--json")
	var ev map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &ev) != nil || !strings.HasPrefix(ev["timestamp"].(string), "30000-01-02T03:04:05") {
		t.Fatalf("events --json: exit %d %s\n%s", code, errOut, out)
	}
	if p, _ := ev["payload"].(map[string]any); p == nil || !strings.HasPrefix(p["When"].(string), "29000-01-01") {
		t.Errorf("payload DateTime: %v", ev["payload"])
	}
}

// TestDamagedInputRule: every file command prints what could be read, then
// exits exitDamaged naming the byte offset of the damage.
func TestDamagedInputRule(t *testing.T) {
	in := filepath.Join(t.TempDir(), "cut.nettrace")
	whole := testcaptureBytes(t)
	if err := os.WriteFile(in, whole[:len(whole)*2/3], 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"trace", "stats", in},
		{"trace", "events", in, "--limit", "0"},
		{"trace", "report", in},
		{"trace", "convert", in, "--format", "folded", "-o", "-"},
	} {
		code, out, errOut := run(t, args...)
		if code != exitDamaged || !strings.Contains(errOut, "at byte ") || out == "" {
			t.Errorf("%v: exit %d, %d bytes of output, stderr %q; want exitDamaged, output, and the offset", args[:2], code, len(out), errOut)
		}
	}
}

// testcaptureBytes is the committed .NET 5 sample capture, unzipped.
func testcaptureBytes(t *testing.T) []byte {
	t.Helper()
	return testcapture.Load(t, "perfview/only_managed_samples.nettrace.zip")
}
