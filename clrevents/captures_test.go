package clrevents_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/nettrace"
)

// runtimeProviders are the manifest providers whose events carry no field
// metadata in a trace: every one of their events must be decoded from the
// table.
var runtimeProviders = []string{clrevents.ProviderRuntime, clrevents.ProviderRundown, clrevents.ProviderPrivate}

// captureFiles lists the traces of internal/testcapture: committed and, with
// CLRDIAG_CAPTURES, the external ones.
func captureFiles() []string {
	var out []string
	for _, m := range []map[string]string{testcapture.Committed, testcapture.External} {
		for rel := range m {
			if strings.HasSuffix(rel, ".zip") || strings.HasSuffix(rel, ".nettrace") || strings.HasSuffix(rel, ".netperf") {
				out = append(out, rel)
			}
		}
	}
	slices.Sort(out)
	return out
}

// eventProblem says what is wrong with one runtime event's decoding, or ""
// for nothing: an event the table has no layout for (no named fields), a
// decoding error, or a payload of a version the table knows that the
// layout does not cover exactly (bytes left over, so fields are missing).
func eventProblem(provider string, id uint32, version uint32, ptrSize int, payload []byte) string {
	if id > 0xFFFF {
		return "event id beyond the manifest's range"
	}
	info, ok := clrevents.Lookup(provider, uint16(id))
	if !ok || !info.HasLayout() {
		return "no named fields (the table has no layout)"
	}
	fs, n, err := clrevents.DecodeFieldsN(provider, uint16(id), uint8(min(version, 255)), ptrSize, payload)
	if err != nil {
		return "decode error: " + err.Error()
	}
	if len(fs) == 0 && len(payload) > 0 {
		return fmt.Sprintf("%d payload bytes, no fields", len(payload))
	}
	if version <= uint32(info.MaxVersion) && n != len(payload) {
		return fmt.Sprintf("layout v%d covers %d of %d payload bytes", version, n, len(payload))
	}
	return ""
}

// walkCaptures calls check for every event of the runtime providers in
// every capture, and fails the test for each distinct problem it reports
// (once per capture, provider, event and version).
func walkCaptures(t *testing.T) {
	total := 0
	for _, rel := range captureFiles() {
		t.Run(rel, func(t *testing.T) {
			if !testcapture.Available(rel) {
				t.Skipf("%s not available: set %s", rel, testcapture.EnvVar)
			}
			r, err := nettrace.NewReader(bytes.NewReader(testcapture.Load(t, rel)))
			if err != nil {
				t.Fatal(err)
			}
			ptrSize := int(r.Header().PointerSize)
			seen := map[string]bool{}
			events := 0
			for ev, err := range r.All() {
				if err != nil {
					// Some public captures stop early (their sessions were
					// not closed); the events before are intact. This
					// project's own captures must be complete.
					var fe *nettrace.FormatError
					if !errors.As(err, &fe) || !fe.Truncated() || strings.HasPrefix(rel, "clrdiag/") {
						t.Fatalf("after %d runtime events: %v", events, err)
					}
					t.Logf("cut short after %d runtime events: %v", events, err)
					break
				}
				md := ev.Metadata
				if !slices.ContainsFunc(runtimeProviders, func(p string) bool { return strings.EqualFold(p, md.ProviderName) }) {
					continue
				}
				events++
				problem := eventProblem(md.ProviderName, md.EventID, md.Version, ptrSize, ev.Payload)
				if problem == "" {
					continue
				}
				key := fmt.Sprintf("%s/%d v%d", md.ProviderName, md.EventID, md.Version)
				if !seen[key] {
					seen[key] = true
					name := clrevents.EventName(md.ProviderName, md.EventID, md.EventName)
					t.Errorf("%s %s (%d-byte payload): %s", key, name, len(ev.Payload), problem)
				}
			}
			t.Logf("%d runtime events", events)
			total += events
		})
	}
	if total == 0 && !t.Failed() {
		t.Error("no runtime events in any capture")
	}
}

// TestCapturesDecodeCompletely walks every runtime event (the runtime,
// rundown and private providers) of every capture — among them the ones
// recorded from .NET 8, 10 and 11 by clrdiag and by dotnet-trace — and fails
// on any event the table gives no named fields, any decoding error, and any
// payload of a known version that its layout does not cover to the last
// byte.
func TestCapturesDecodeCompletely(t *testing.T) {
	walkCaptures(t)
}

// TestEventProblem shows that the capture walk can fail: an event the table
// does not know, a payload cut short and bytes beyond the layout are each
// reported.
func TestEventProblem(t *testing.T) {
	gcEnd := []byte{1, 0, 0, 0, 2, 0, 0, 0, 9, 0} // GCEnd v1: Count, Depth, ClrInstanceID
	for _, tt := range []struct {
		name    string
		id      uint32
		ver     uint32
		payload []byte
		want    string
	}{
		{"complete", 2, 1, gcEnd, ""},
		{"unknown id", 9999, 0, nil, "no named fields"},
		{"truncated", 2, 1, gcEnd[:9], "decode error"},
		{"left over", 2, 1, append(slices.Clone(gcEnd), 7), "covers 10 of 11"},
		{"newer version", 2, 7, append(slices.Clone(gcEnd), 7), ""},
	} {
		got := eventProblem(clrevents.ProviderRuntime, tt.id, tt.ver, 8, tt.payload)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: problem %q, want %q", tt.name, got, tt.want)
		}
	}
}
