package clrevents_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/nettrace"
)

// runtimeProviders are the manifest providers whose events carry no field
// metadata in a trace: every one of their events must be decoded from the
// table.
var runtimeProviders = []string{clrevents.ProviderRuntime, clrevents.ProviderRundown, clrevents.ProviderPrivate}

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

// shortWalkMax is the largest external capture walkCaptures walks with
// -short (but shortWalkAlso): full mode checks that each runtime event of
// the larger ones, by provider, id, version and pointer size, is in a
// capture -short walks.
const shortWalkMax = 2 << 20

// shortWalkAlso lists the external captures over shortWalkMax that -short
// walks all the same, with why: each has runtime events, by provider, id,
// version and pointer size, that no smaller capture has.
var shortWalkAlso = map[string]string{
	// 0.9 s of the walk; the rundown events 144-187 with 4-byte
	// pointers are in no other capture.
	"perfview/VoiceMemo.23092.nettrace.zip": "the only capture with 4-byte pointers",
}

// walkCaptures calls check for every event of the runtime providers in
// every capture, and fails the test for each distinct problem it reports
// (once per capture, provider, event and version). With -short it leaves
// out the external captures over shortWalkMax but those in shortWalkAlso.
func walkCaptures(t *testing.T) {
	total := 0
	// The runtime events of the captures -short walks, and of the others,
	// by provider, id, version and pointer size (with a capture that has
	// it): decoding depends on the pointer size, so a 64-bit capture does
	// not cover a 32-bit one's layouts.
	shortKeys, otherKeys := map[string]bool{}, map[string]string{}
	var mu sync.Mutex // total and the keys: the captures are walked two at a time
	t.Run("captures", func(t *testing.T) {
		for _, rel := range testcapture.Traces() {
			t.Run(rel, func(t *testing.T) {
				t.Parallel()
				walkCapture(t, rel, &mu, &total, shortKeys, otherKeys)
			})
		}
	})
	if total == 0 && !t.Failed() {
		t.Error("no runtime events in any capture")
	}
	for key, rel := range otherKeys {
		if !shortKeys[key] {
			t.Errorf("%s of %s is in no capture walked with -short: raise shortWalkMax, or add the smallest capture that has it to shortWalkAlso", key, rel)
		}
	}
}

// walkCapture is walkCaptures' walk of one capture: it adds its runtime
// events to total, and their keys to shortKeys or otherKeys, under mu.
func walkCapture(t *testing.T, rel string, mu *sync.Mutex, total *int, shortKeys map[string]bool, otherKeys map[string]string) {
	if !testcapture.Available(rel) {
		t.Skipf("%s not available: set %s", rel, testcapture.EnvVar)
	}
	_, external := testcapture.External[rel]
	_, also := shortWalkAlso[rel]
	short := !external || also || testcapture.Size(t, rel) <= shortWalkMax
	if testing.Short() && !short {
		t.Skipf("%s: over %d bytes, full mode only (its runtime events are in the others: full mode checks)", rel, shortWalkMax)
	}
	r, err := nettrace.NewReader(bytes.NewReader(testcapture.Load(t, rel)))
	if err != nil {
		t.Fatal(err)
	}
	ptrSize := int(r.Header().PointerSize)
	seen, keys := map[string]bool{}, map[string]bool{}
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
		key := fmt.Sprintf("%s/%d v%d", md.ProviderName, md.EventID, md.Version)
		keys[fmt.Sprintf("%s (%d-byte pointers)", key, ptrSize)] = true
		problem := eventProblem(md.ProviderName, md.EventID, md.Version, ptrSize, ev.Payload)
		if problem == "" {
			continue
		}
		if !seen[key] {
			seen[key] = true
			name := clrevents.EventName(md.ProviderName, md.EventID, md.EventName)
			t.Errorf("%s %s (%d-byte payload): %s", key, name, len(ev.Payload), problem)
		}
	}
	t.Logf("%d runtime events", events)
	mu.Lock()
	defer mu.Unlock()
	*total += events
	for key := range keys {
		if short {
			shortKeys[key] = true
		} else if otherKeys[key] == "" {
			otherKeys[key] = rel
		}
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
