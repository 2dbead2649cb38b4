package counters

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func testSamples() []*Sample {
	t0 := time.Date(2026, 11, 21, 10, 30, 0, 123456789, time.UTC)
	return []*Sample{
		{Time: t0, Provider: "System.Runtime", Name: "cpu-usage", DisplayName: "CPU Usage", Unit: "%", Kind: KindMean, Value: 12.5},
		{Time: t0, Provider: "System.Runtime", Name: "exception-count", DisplayName: "Exception Count", Kind: KindRate, Value: 3, Interval: time.Second},
		{Time: t0.Add(time.Second), Provider: "Shop", Name: "req.duration", Unit: "ms", Kind: KindHistogram,
			Tags: []Tag{{"route", "/a,b"}}, Quantiles: []Quantile{{0.5, 10}, {0.95, 20}, {0.99, 30}},
			MeterTags: []Tag{{"region", "eu"}, {"tier", "1"}}, InstrumentTags: []Tag{{"kind", "web"}}},
		{Time: t0, Provider: "Shop", Name: "gone", Kind: KindGauge, NoValue: true},
	}
}

// cet is a local time zone one hour ahead of UTC: the files show that the
// timestamps are converted.
var cet = time.FixedZone("CET", 3600)

func TestCSVExporter(t *testing.T) {
	var buf bytes.Buffer
	e := NewCSVExporter(&buf)
	e.Location = cet
	for _, s := range testSamples() {
		if err := e.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v", err)
	}
	want := [][]string{
		{"Timestamp", "Provider", "Counter Name", "Counter Type", "Mean/Increment"},
		{"11/21/2026 11:30:00", "System.Runtime", "CPU Usage (%)", "Metric", "12.5"},
		{"11/21/2026 11:30:00", "System.Runtime", "Exception Count (Count / 1 sec)", "Rate", "3"},
		{"11/21/2026 11:30:01", "Shop", "req.duration (ms)[route=/a;b;Percentile=50]", "Metric", "10"},
		{"11/21/2026 11:30:01", "Shop", "req.duration (ms)[route=/a;b;Percentile=95]", "Metric", "20"},
		{"11/21/2026 11:30:01", "Shop", "req.duration (ms)[route=/a;b;Percentile=99]", "Metric", "30"},
	}
	if len(recs) != len(want) || e.Rows() != len(want)-1 {
		t.Fatalf("got %d records (Rows %d):\n%v", len(recs), e.Rows(), recs)
	}
	for i := range want {
		if strings.Join(recs[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d = %q, want %q", i, recs[i], want[i])
		}
	}
}

func TestJSONExporterValidWhenInterrupted(t *testing.T) {
	for n := 0; n <= 3; n++ {
		var buf bytes.Buffer
		e := NewJSONExporter(&buf, "app", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		for _, s := range testSamples()[:n] {
			if err := e.Write(s); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			TargetProcess string
			StartTime     string
			Events        []jsonEvent
		}
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatalf("after %d samples the JSON does not parse: %v\n%s", n, err, buf.String())
		}
		wantEvents := []int{0, 1, 2, 5}[n]
		if doc.TargetProcess != "app" || len(doc.Events) != wantEvents || e.Rows() != wantEvents {
			t.Fatalf("after %d samples (Rows %d): %+v", n, e.Rows(), doc)
		}
		if n >= 2 && (doc.Events[1].CounterType != "Rate" || doc.Events[1].Value != 3) {
			t.Fatalf("rate event = %+v", doc.Events[1])
		}
	}
}

func TestJSONExporterKeys(t *testing.T) {
	var buf bytes.Buffer
	e := NewJSONExporter(&buf, "app", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	e.Location = cet
	for _, s := range testSamples()[:3] {
		if err := e.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	want := map[int]string{
		0: `{"TargetProcess": "app", "StartTime": "2026-01-02T04:04:05.0000000+01:00", "Events": [`,
		1: `  {"timestamp":"2026-11-21T10:30:00.1234567Z","provider":"System.Runtime","name":"CPU Usage (%)","tags":"","counterType":"Metric","meterTags":"","instrumentTags":"","value":12.5},`,
		3: `  {"timestamp":"2026-11-21T10:30:01.1234567Z","provider":"Shop","name":"req.duration (ms)","tags":"route=/a,b,Percentile=50","counterType":"Metric","meterTags":"region=eu,tier=1","instrumentTags":"kind=web","value":10},`,
	}
	for i, w := range want {
		if i >= len(lines) || lines[i] != w {
			t.Errorf("line %d of\n%s\nwant %s", i, buf.String(), w)
		}
	}
}

// TestJSONExporterJQ reads the JSON file with jq, as people do: every event
// timestamp goes through fromdateiso8601 (after jq's documented removal of
// the fraction, which it cannot read) to the sample's second, and the
// StartTime too.
func TestJSONExporterJQ(t *testing.T) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("jq not found (CI=true, so this fails instead of skipping): install Debian's jq (scripts/test.sh does)")
		}
		t.Skip("SKIPPING: jq not found; install Debian's jq (make test does) to check the JSON file in it")
	}
	var buf bytes.Buffer
	start := time.Now()
	e := NewJSONExporter(&buf, "app", start)
	e.Location = time.UTC
	for _, s := range testSamples() {
		if err := e.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(jq, "-r", `.TargetProcess, (.StartTime | sub("\\.[0-9]+"; "") | sub("\\+00:00$"; "Z") | fromdateiso8601), `+
		`(.Events[] | .timestamp | sub("\\.[0-9]+"; "") | fromdateiso8601)`)
	cmd.Stdin = &buf
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("jq: %v\n%s", err, out)
	}
	t0 := testSamples()[0].Time.Unix()
	want := fmt.Sprintf("app\n%d\n%d\n%d\n%d\n%d\n%d\n", start.Unix(), t0, t0, t0+1, t0+1, t0+1)
	if string(out) != want {
		t.Errorf("jq read\n%s\nwant\n%s", out, want)
	}
}
