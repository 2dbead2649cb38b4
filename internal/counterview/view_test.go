package counterview

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/counters"
)

// screen applies the escape sequences View uses to a grid of lines, so the
// test checks what a person would see after several redraws.
func screen(t *testing.T, frames []byte) []string {
	t.Helper()
	var lines []string
	row, col := 0, 0
	put := func(c byte) {
		for len(lines) <= row {
			lines = append(lines, "")
		}
		l := []byte(lines[row])
		for len(l) < col {
			l = append(l, ' ')
		}
		if col < len(l) {
			l[col] = c
		} else {
			l = append(l, c)
		}
		lines[row] = string(l)
		col++
	}
	for i := 0; i < len(frames); i++ {
		switch {
		case bytes.HasPrefix(frames[i:], []byte(escHome)):
			row, col = 0, 0
			i += len(escHome) - 1
		case bytes.HasPrefix(frames[i:], []byte(escClearEOL)):
			if row < len(lines) && col < len(lines[row]) {
				lines[row] = lines[row][:col]
			}
			i += len(escClearEOL) - 1
		case bytes.HasPrefix(frames[i:], []byte(escClearDown)):
			if row < len(lines) {
				lines = lines[:row]
			}
			i += len(escClearDown) - 1
		case frames[i] == '\x1b':
			t.Fatalf("unexpected escape sequence at %d: %q", i, frames[i:min(i+6, len(frames))])
		case frames[i] == '\n':
			row++
			col = 0
		default:
			put(frames[i])
		}
	}
	return lines
}

func TestViewTerminalRefreshes(t *testing.T) {
	v := &View{Terminal: true, Title: "Press Ctrl-C to stop. Process 42 (app)", Status: "Running", NameWidth: 40}
	var out bytes.Buffer
	t0 := time.Unix(0, 0)
	if err := v.Render(&out); err != nil {
		t.Fatal(err)
	}
	first := screen(t, out.Bytes())
	if !strings.Contains(strings.Join(first, "\n"), "Waiting for the first values") {
		t.Fatalf("empty view:\n%s", strings.Join(first, "\n"))
	}
	for i := 1; i <= 3; i++ {
		v.Update(&counters.Sample{Time: t0, Provider: "System.Runtime", Name: "cpu-usage", DisplayName: "CPU Usage", Unit: "%", Value: float64(i * 10)})
		v.Update(&counters.Sample{Time: t0, Provider: "System.Runtime", Name: "working-set", DisplayName: "Working Set", Unit: "MB", Value: 1234.5678})
		v.Update(&counters.Sample{Time: t0, Provider: "Shop", Name: "req", Unit: "ms", Kind: counters.KindHistogram, Quantiles: []counters.Quantile{{Quantile: 0.5, Value: 1}, {Quantile: 0.99, Value: 2e9}}})
		if err := v.Render(&out); err != nil {
			t.Fatal(err)
		}
	}
	got := screen(t, out.Bytes())
	want := []string{
		"Press Ctrl-C to stop. Process 42 (app)",
		"    Status: Running",
		"",
		"Name                                        Current Value",
		"[Shop]",
		"    req (ms)",
		"        Percentile",
		"        50                                              1",
		"        99                                     2.0000e+09",
		"[System.Runtime]",
		"    CPU Usage (%)                                      30",
		"    Working Set (MB)                             1234.568",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("screen after 3 refreshes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Each refresh redraws in place: one home sequence per frame, never a full clear.
	if n := bytes.Count(out.Bytes(), []byte(escHome)); n != 4 {
		t.Fatalf("%d home sequences for 4 frames", n)
	}
	if bytes.Contains(out.Bytes(), []byte("\x1b[2J")) {
		t.Fatal("full-screen clear used; it flickers")
	}
}

func TestViewPlainLines(t *testing.T) {
	v := &View{}
	var out bytes.Buffer
	ts := time.Date(2026, 1, 1, 12, 0, 1, 0, time.UTC)
	v.Update(&counters.Sample{Time: ts, Provider: "System.Runtime", Name: "cpu-usage", DisplayName: "CPU Usage", Unit: "%", Value: 5})
	v.Render(&out)
	v.Render(&out) // nothing changed: nothing printed
	v.Update(&counters.Sample{Time: ts, Provider: "System.Runtime", Name: "cpu-usage", DisplayName: "CPU Usage", Unit: "%", Value: 7})
	v.Render(&out)
	want := "12:00:01  System.Runtime  CPU Usage (%)  5\n12:00:01  System.Runtime  CPU Usage (%)  7\n"
	if out.String() != want {
		t.Fatalf("plain output:\n%q\nwant\n%q", out.String(), want)
	}
	if bytes.ContainsRune(out.Bytes(), '\x1b') {
		t.Fatal("escape sequences in plain mode")
	}
}

func TestViewTerminalDeltas(t *testing.T) {
	v := &View{Terminal: true, Title: "T", Status: "Running", NameWidth: 30, ShowDeltas: true}
	var out bytes.Buffer
	t0 := time.Unix(0, 0)
	cpu := []float64{10, 30, 25}
	for i, c := range cpu {
		v.Update(&counters.Sample{Time: t0, Provider: "System.Runtime", Name: "cpu-usage", DisplayName: "CPU Usage", Unit: "%", Value: c})
		v.Update(&counters.Sample{Time: t0, Provider: "Shop", Name: "req", Unit: "ms", Kind: counters.KindHistogram, Quantiles: []counters.Quantile{{Quantile: 0.5, Value: float64(i)}, {Quantile: 0.99, Value: 2e9 * float64(i+1)}}})
		if i == 2 {
			v.Update(&counters.Sample{Time: t0, Provider: "System.Runtime", Name: "late", Value: 7})
		}
		if err := v.Render(&out); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"T",
		"    Status: Running",
		"",
		"Name                              Current Value       Last Delta",
		"[Shop]",
		"    req (ms)",
		"        Percentile",
		"        50                                    2                1",
		"        99                           6.0000e+09       2.0000e+09",
		"[System.Runtime]",
		"    CPU Usage (%)                            25               -5",
		"    late                                      7",
	}
	if got := screen(t, out.Bytes()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("screen:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Without abbreviation large numbers are printed in full.
	v.FullNumbers = true
	out.Reset()
	if err := v.Render(&out); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(screen(t, out.Bytes()), "\n"); !strings.Contains(got, "        99                           6000000000       2000000000\n") {
		t.Fatalf("full numbers:\n%s", got)
	}
}

func TestViewPlainDeltas(t *testing.T) {
	v := &View{ShowDeltas: true}
	var out bytes.Buffer
	ts := time.Date(2026, 1, 1, 12, 0, 1, 0, time.UTC)
	for _, x := range []float64{5, 7, 6.5} {
		v.Update(&counters.Sample{Time: ts, Provider: "P", Name: "c", Value: x})
		v.Render(&out)
	}
	want := "12:00:01  P  c  5\n12:00:01  P  c  7  delta 2\n12:00:01  P  c  6.5  delta -0.5\n"
	if out.String() != want {
		t.Fatalf("plain output:\n%q\nwant\n%q", out.String(), want)
	}
}

// Provider, counter and tag names come from the target: the view prints
// them escaped, so the only escape sequences left are its own.
func TestViewEscapesTargetText(t *testing.T) {
	const evil = "\x1b[2J\x1b]0;x\x07\u009b1m\u202e"
	for _, terminal := range []bool{true, false} {
		v := &View{Terminal: terminal}
		v.Update(&counters.Sample{Time: time.Unix(0, 0), Provider: "P" + evil, Name: "n" + evil, DisplayName: "D" + evil, Unit: "u" + evil,
			Tags: []counters.Tag{{Key: "k" + evil, Value: "v" + evil}}, Value: 1})
		var b bytes.Buffer
		if err := v.Render(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, own := range []string{escHome, escClearEOL, escClearDown} {
			out = strings.ReplaceAll(out, own, "")
		}
		if strings.ContainsAny(out, "\x1b\x07\u009b\u202e") {
			t.Errorf("terminal=%v: raw control characters in %q", terminal, out)
		}
		if !strings.Contains(out, `P\x1b[2J\x1b]0;x\x07\u009b1m\u202e`) {
			t.Errorf("terminal=%v: provider not shown escaped: %q", terminal, out)
		}
	}
}

// Tags are columns, as dotnet-counters shows them: the tag names once, then
// each combination's values under them, so the route, the status code and
// the percentile stay visible however many tags there are. Columns that do
// not fit are narrowed, the widest first.
func TestViewTagColumns(t *testing.T) {
	v := &View{Terminal: true, NameWidth: 60}
	t0 := time.Unix(0, 0)
	for _, tags := range [][]counters.Tag{
		{{Key: "http.request.method", Value: "GET"}, {Key: "http.response.status_code", Value: "200"}, {Key: "http.route", Value: "/items/{id}"}, {Key: "url.scheme", Value: "http"}},
		{{Key: "http.request.method", Value: "POST"}, {Key: "http.response.status_code", Value: "500"}, {Key: "http.route", Value: "/throw"}, {Key: "url.scheme", Value: "http"}},
	} {
		v.Update(&counters.Sample{Time: t0, Provider: "Microsoft.AspNetCore.Hosting", Name: "http.server.request.duration", Unit: "s", Kind: counters.KindHistogram,
			Tags: tags, Quantiles: []counters.Quantile{{Quantile: 0.5, Value: 0.001}, {Quantile: 0.99, Value: 0.25}}})
	}
	v.Update(&counters.Sample{Time: t0, Provider: "System.Runtime", Name: "dotnet.gc.collections", Unit: "{collection}", Kind: counters.KindRate, Value: 4, Elapsed: 2 * time.Second,
		Tags: []counters.Tag{{Key: "gc.heap.generation", Value: "gen0"}}})
	v.Update(&counters.Sample{Time: t0, Provider: "System.Runtime", Name: "dotnet.gc.collections", Unit: "{collection}", Kind: counters.KindRate, Value: 1, Elapsed: 2 * time.Second,
		Tags: []counters.Tag{{Key: "gc.heap.generation", Value: "gen1"}}})
	var out bytes.Buffer
	if err := v.Render(&out); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"",
		"Name                                                            Current Value",
		"[Microsoft.AspNetCore.Hosting]",
		"    http.server.request.duration (s)",
		"        ...method ...s_code http.route  url.scheme ...ntile",
		"        GET       200       /items/{id} http       50                   0.001",
		"        GET       200       /items/{id} http       99                    0.25",
		"        POST      500       /throw      http       50                   0.001",
		"        POST      500       /throw      http       99                    0.25",
		"[System.Runtime]",
		"    dotnet.gc.collections ({collection} / 1 sec)",
		"        gc.heap.generation",
		"        gen0                                                                2",
		"        gen1                                                              0.5",
	}
	if got := screen(t, out.Bytes()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("screen:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
