package nettrace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/internal/testcapture"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// captureFiles are the real traces the golden tests decode.
var captureFiles = []string{
	"perfview/eventpipe-dotnetcore2.1-linux-x64-tracelogging.netperf.zip",
	"perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip",
	"perfview/eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace.zip",
	"perfview/eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip",
	"perfview/only_managed_samples.nettrace.zip",
	"perfview/VoiceMemo.23092.nettrace.zip",
	"zetslief/perf.nettrace",
	"zetslief/task_trace.nettrace",
	"zetslief/perf_100ms.nettrace",
	"misc/dotnet-diagnostics-3.0-counters-truncated.nettrace",
	"misc/net5-v2params-allocTrace.nettrace",
	"misc/net6.0.9-windows.nettrace",
}

// loadCapture returns the bytes of a real capture (see internal/testcapture),
// unzipping .zip files. It skips the test when the capture is not committed
// and CLRDIAG_CAPTURES does not provide it.
func loadCapture(tb testing.TB, rel string) []byte {
	tb.Helper()
	return testcapture.Load(tb, rel)
}

// summarize decodes a whole trace into a canonical text form: header,
// statistics, counts per provider and event, and the first two events of
// every kind with their decoded payloads.
func summarize(data []byte) (string, map[string]int, error) {
	var b strings.Builder
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		return "", nil, err
	}
	h := r.Header()
	fmt.Fprintf(&b, "format %v version %d pointer %d pid %d processors %d sampling %d\n",
		h.Format, h.Version, h.PointerSize, h.ProcessID, h.ProcessorCount, h.ExpectedCPUSamplingRate)
	fmt.Fprintf(&b, "sync %s ticks %d frequency %d\n", h.SyncTimeUTC.Format("2006-01-02T15:04:05.000Z"), h.SyncTimeTicks, h.TickFrequency)
	counts := map[string]int{}
	byName := map[string]int{}
	var samples []string
	var ev Event
	var first, last int64
	n := 0
	for {
		err = r.ReadEvent(&ev)
		if err != nil {
			break
		}
		md := ev.Metadata
		if n == 0 || ev.Timestamp < first {
			first = ev.Timestamp
		}
		last = max(last, ev.Timestamp)
		n++
		key := fmt.Sprintf("%s/%d", md.ProviderName, md.EventID)
		counts[key]++
		byName[md.ProviderName+"/"+md.EventName]++
		if counts[key] <= 2 {
			payload := fmt.Sprintf("%d bytes", len(ev.Payload))
			if len(md.Fields) > 0 {
				if v, perr := ev.Fields(); perr != nil {
					payload = "decode error: " + perr.Error()
				} else {
					j, _ := json.Marshal(v)
					payload = string(j)
				}
			}
			samples = append(samples, fmt.Sprintf("%s %q v%d op%d t=%s thread=%d capture=%d seq=%d proc=%d stack=%d frames=%d sorted=%v payload=%s",
				key, md.EventName, md.Version, md.Opcode, ev.Time().Format("15:04:05.0000000"), ev.ThreadID, ev.CaptureThreadID,
				ev.SequenceNumber, ev.ProcessorNumber, ev.StackID, ev.StackLen(), ev.IsSorted, payload))
		}
	}
	st := r.Stats()
	fmt.Fprintf(&b, "events %d metadata %d stacks %d sequencePoints %d dropped %d complete %v span %v\n",
		st.Events, st.Metadata, st.Stacks, st.SequencePoints, st.DroppedEvents, st.Complete, h.DurationOf(last-first))
	if err != io.EOF {
		fmt.Fprintf(&b, "error: %v\n", err)
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "count %s %d\n", k, counts[k])
	}
	for _, s := range samples {
		b.WriteString("event " + s + "\n")
	}
	return b.String(), byName, nil
}

func TestCapturesGolden(t *testing.T) {
	for _, rel := range captureFiles {
		name := strings.TrimSuffix(filepath.Base(rel), ".zip")
		t.Run(name, func(t *testing.T) {
			data := loadCapture(t, rel)
			got, byName, err := summarize(data)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "golden", name+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestCapturesGolden -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("summary differs from %s (rerun with -update if the change is intended):\n%s", golden, testcapture.LineDiff(string(want), got))
			}
			if baseline := strings.TrimSuffix(rel, ".zip") + ".baseline.txt"; testcapture.Available(baseline) {
				crossCheckBaseline(t, testcapture.Path(t, baseline), data, byName)
			}
		})
	}
}

var (
	baselineLine = regexp.MustCompile(`^\x{feff}?([^,]+), (\d+), <Event (.*?)/?>`)
	xmlAttr      = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// crossCheckBaseline compares TraceEvent's expected output with what the
// reader decodes: the count of every self-describing event kind (names
// "Provider/EventName" that both sides know) and the scalar payload fields
// of the earliest such event. Runtime events are named by TraceEvent from
// its manifest, which the trace does not carry, so they are not compared.
func crossCheckBaseline(t *testing.T, baseline string, data []byte, byName map[string]int) {
	t.Helper()
	f, err := os.Open(baseline)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	first := firstEvents(t, data)
	compared, fields := 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := baselineLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		key, count := m[1], 0
		fmt.Sscan(m[2], &count)
		if key == "Microsoft-DotNETCore-SampleProfiler/Thread/Sample" {
			key = "Microsoft-DotNETCore-SampleProfiler/"
		}
		got, ok := byName[key]
		if !ok {
			continue
		}
		compared++
		if got != count {
			t.Errorf("baseline %s: %s has %d events, reader found %d", filepath.Base(baseline), key, count, got)
		}
		obj, ok := first[key]
		if !ok {
			continue
		}
		for _, a := range xmlAttr.FindAllStringSubmatch(m[3], -1) {
			v, ok := obj.Get(a[1])
			if !ok {
				continue
			}
			want := strings.ReplaceAll(html.UnescapeString(a[2]), ",", "")
			var gotS string
			switch x := v.(type) {
			case string:
				gotS = strings.ReplaceAll(x, ",", "")
			case int8, int16, int32, int64, uint8, uint16, uint32, uint64:
				gotS = fmt.Sprint(x)
			default:
				continue
			}
			fields++
			if gotS != want {
				t.Errorf("baseline %s: %s field %s = %q, reader decoded %q", filepath.Base(baseline), key, a[1], want, gotS)
			}
		}
	}
	selfDescribing := false
	for k := range byName {
		selfDescribing = selfDescribing || !strings.HasSuffix(k, "/")
	}
	if compared == 0 && selfDescribing {
		t.Errorf("baseline %s: no event kind could be compared", filepath.Base(baseline))
	}
	t.Logf("baseline %s: %d event kinds and %d payload fields agree", filepath.Base(baseline), compared, fields)
}

// firstEvents decodes the earliest event of every self-describing kind.
func firstEvents(t *testing.T, data []byte) map[string]Object {
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Object{}
	ts := map[string]int64{}
	var ev Event
	for r.ReadEvent(&ev) == nil {
		if len(ev.Metadata.Fields) == 0 {
			continue
		}
		key := ev.Metadata.ProviderName + "/" + ev.Metadata.EventName
		if old, ok := ts[key]; ok && old <= ev.Timestamp {
			continue
		}
		if v, err := ev.Fields(); err == nil {
			out[key], ts[key] = v, ev.Timestamp
		}
	}
	return out
}

func TestCaptureFacts(t *testing.T) {
	read := func(t *testing.T, rel string) (*Reader, []Event, error) {
		r, err := NewReader(bytes.NewReader(loadCapture(t, rel)))
		if err != nil {
			t.Fatal(err)
		}
		var evs []Event
		var ev Event
		for {
			if err = r.ReadEvent(&ev); err != nil {
				break
			}
			ev.Payload = bytes.Clone(ev.Payload)
			evs = append(evs, ev)
		}
		return r, evs, err
	}

	t.Run("truncated mid-block keeps complete events", func(t *testing.T) {
		r, evs, err := read(t, "misc/dotnet-diagnostics-3.0-counters-truncated.nettrace")
		var fe *FormatError
		if !errors.As(err, &fe) || !fe.Truncated() || fe.Offset != 4174144 {
			t.Fatalf("error %v; want a truncation FormatError at the end of the file (4174144)", err)
		}
		if r.Stats().Complete {
			t.Error("reported complete")
		}
		// EventCounters payloads become readable.
		n := 0
		for i := range evs {
			md := evs[i].Metadata
			if md.ProviderName != "System.Runtime" || md.EventName != "EventCounters" {
				continue
			}
			obj, err := evs[i].Fields()
			if err != nil {
				t.Fatal(err)
			}
			inner, _ := obj[0].Value.(Object)
			p, _ := inner.Get("Payload")
			po, _ := p.(Object)
			name, _ := po.Get("Name")
			typ, _ := po.Get("CounterType")
			if s, _ := name.(string); s == "" || (typ != "Mean" && typ != "Sum") {
				t.Errorf("EventCounters payload %v: want a Name and CounterType Mean/Sum", obj)
			}
			n++
		}
		if n != 3 {
			t.Errorf("found %d EventCounters events, want 3", n)
		}
	})

	t.Run("no end tag", func(t *testing.T) {
		r, evs, err := read(t, "zetslief/perf_100ms.nettrace")
		var fe *FormatError
		if !errors.As(err, &fe) || !fe.Truncated() || len(evs) != 302 || r.Stats().Complete {
			t.Errorf("got %d events, err %v; want 302 events then a truncation error", len(evs), err)
		}
	})

	t.Run("32-bit pointers", func(t *testing.T) {
		r, evs, err := read(t, "perfview/VoiceMemo.23092.nettrace.zip")
		if err != io.EOF || r.Header().PointerSize != 4 {
			t.Fatalf("err %v pointer size %d", err, r.Header().PointerSize)
		}
		withStack := 0
		for i := range evs {
			if evs[i].StackLen() > 0 {
				withStack++
				for a := range evs[i].Frames() {
					if a>>32 != 0 {
						t.Fatalf("frame %#x exceeds 32 bits", a)
					}
				}
			}
		}
		if withStack == 0 {
			t.Error("no event has a stack")
		}
	})

	t.Run("negative timestamp deltas", func(t *testing.T) {
		_, evs, err := read(t, "perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip")
		if err != io.EOF {
			t.Fatal(err)
		}
		back := 0
		for i := 1; i < len(evs); i++ {
			if evs[i].Timestamp < evs[i-1].Timestamp {
				back++
				if evs[i].CaptureThreadID == evs[i-1].CaptureThreadID {
					t.Fatalf("event %d goes back in time on the same capture thread", i)
				}
			}
			if evs[i].Timestamp < 0 {
				t.Fatalf("event %d has negative timestamp %d", i, evs[i].Timestamp)
			}
		}
		if back == 0 {
			t.Error("expected some events to go back in time across capture threads")
		}
	})
}
