//go:build unix

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/gcdump/gcdumptest"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/ipctest"
)

func gcdumpFake(t *testing.T, n int, opt gcdumptest.Options) string {
	t.Helper()
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET3_1, Tracing: gcdumptest.Session(gcdumptest.Leaky(n), opt)})
	return port
}

type reportJSON struct {
	Types []struct {
		Name         string `json:"name"`
		Count        int64  `json:"count"`
		Size         uint64 `json:"size"`
		RetainedSize uint64 `json:"retainedSize"`
	} `json:"types"`
	TotalSize uint64 `json:"totalSize"`
	Objects   int64  `json:"objects"`
	Roots     int64  `json:"roots"`
}

func TestGCDumpFake(t *testing.T) {
	dir := t.TempDir()
	before, after := filepath.Join(dir, "before.gcdump"), filepath.Join(dir, "after")
	code, _, errOut := run(t, "gcdump", "collect", "--diagnostic-port", gcdumpFake(t, 20, gcdumptest.Options{}), "-o", before)
	if code != 0 || !strings.Contains(errOut, "Heap walked: 44 objects, 42 references") || !strings.Contains(errOut, "Wrote "+before) {
		t.Fatalf("collect: exit %d\n%s", code, errOut)
	}
	// -o without the extension gets it, as with dotnet-gcdump.
	code, _, errOut = run(t, "gcdump", "collect", "--diagnostic-port", gcdumpFake(t, 30, gcdumptest.Options{}), "-o", after)
	after += ".gcdump"
	if code != 0 {
		t.Fatalf("collect: exit %d\n%s", code, errOut)
	}
	// A snapshot may name what a process holds: 0600, as traces and dumps.
	if st, err := os.Stat(after); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("output file: %v %v", st, err)
	}
	// An existing output is refused before the target is paused; --force
	// replaces it.
	srv, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET3_1, Tracing: gcdumptest.Session(gcdumptest.Leaky(1), gcdumptest.Options{})})
	if code, _, errOut := run(t, "gcdump", "collect", "--diagnostic-port", port, "-o", after); code != 6 || !strings.Contains(errOut, "exists") {
		t.Errorf("existing output: exit %d\n%s", code, errOut)
	}
	if len(srv.Requests()) != 0 {
		t.Errorf("the target was asked for a snapshot: %v", srv.Requests())
	}
	if code, _, errOut := run(t, "gcdump", "collect", "--diagnostic-port", gcdumpFake(t, 30, gcdumptest.Options{}), "-o", after, "--force"); code != 0 {
		t.Fatalf("--force: exit %d\n%s", code, errOut)
	}

	code, out, errOut := run(t, "gcdump", "report", before, "--json")
	if code != 0 {
		t.Fatalf("report: %d %s", code, errOut)
	}
	var rep reportJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Objects != 44 || rep.Roots != 3 || len(rep.Types) != 4 || rep.Types[0].Name != "App.Item" || rep.Types[0].Count != 21 || rep.Types[0].RetainedSize != 20*70+40 {
		t.Errorf("report %+v", rep)
	}
	code, out, _ = run(t, "gcdump", "report", before, "--sort", "retained", "--top", "1")
	if code != 0 || !strings.Contains(out, "System.Collections.Generic.List<App.Item>  [System.Private.CoreLib.dll]") || !strings.Contains(out, "(3 more types") {
		t.Errorf("report text:\n%s", out)
	}

	code, out, errOut = run(t, "gcdump", "paths", after, "--type", "App.Item", "--json")
	if code != 0 {
		t.Fatalf("paths: %d %s", code, errOut)
	}
	var paths gcdump.Paths
	if err := json.Unmarshal([]byte(out), &paths); err != nil {
		t.Fatal(err)
	}
	if paths.Objects != 31 || len(paths.Paths) != 2 || paths.Paths[0].Objects != 30 || !strings.HasPrefix(paths.Paths[0].Root, "static field s_items") {
		t.Errorf("paths %+v", paths)
	}

	code, out, _ = run(t, "gcdump", "diff", before, after)
	if code != 0 || !strings.Contains(out, "  840        1,240         +400            21           31          +10            +700  App.Item") {
		t.Errorf("diff:\n%s", out)
	}

	// The flame graph in pprof opens in go tool pprof.
	code, _, errOut = run(t, "gcdump", "convert", after, "--format", "pprof")
	pb := filepath.Join(dir, "after.pb.gz")
	if code != 0 || !strings.Contains(errOut, "Wrote "+pb) {
		t.Fatalf("convert: %d %s", code, errOut)
	}
	goToolPprof(t, pb, []string{"-top"}, "App.Item", "inuse_space")
	code, out, _ = run(t, "gcdump", "convert", after, "--format", "folded", "-o", "-")
	if code != 0 || !strings.Contains(out, "[local vars];App!App.Item 40\n") {
		t.Errorf("folded:\n%s", out)
	}
	code, out, _ = run(t, "gcdump", "convert", after, "--format", "speedscope", "-o", "-")
	var ss struct {
		Schema   string `json:"$schema"`
		Profiles []struct {
			Type    string   `json:"type"`
			Unit    string   `json:"unit"`
			Samples [][]int  `json:"samples"`
			Weights []uint64 `json:"weights"`
		} `json:"profiles"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &ss) != nil || len(ss.Profiles) == 0 || ss.Profiles[0].Unit != "bytes" ||
		len(ss.Profiles[0].Samples) != len(ss.Profiles[0].Weights) || len(ss.Profiles[0].Samples) == 0 {
		t.Errorf("speedscope: %d\n%.500s", code, out)
	}

	// A nettrace of a heap session reads as well (--trace keeps it).
	trace := filepath.Join(dir, "heap.nettrace")
	code, _, errOut = run(t, "gcdump", "collect", "--diagnostic-port", gcdumpFake(t, 5, gcdumptest.Options{}), "-o", filepath.Join(dir, "c.gcdump"), "--trace", trace)
	if code != 0 {
		t.Fatalf("collect --trace: %d %s", code, errOut)
	}
	code, out, _ = run(t, "gcdump", "report", trace, "--json")
	if code != 0 || !strings.Contains(out, `"objects": 14`) {
		t.Errorf("report of the nettrace: %d\n%s", code, out)
	}
}

func TestGCDumpErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.gcdump")
	if err := os.WriteFile(garbage, []byte("\x14\x00\x00\x00!FastSerialization.1\x04\x04"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.gcdump")
	if code, _, errOut := run(t, "gcdump", "collect", "--diagnostic-port", gcdumpFake(t, 3, gcdumptest.Options{}), "-o", good); code != 0 {
		t.Fatalf("collect: %s", errOut)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"gcdump", "report"}, 2, "give a snapshot FILE"},
		{[]string{"gcdump", "report", filepath.Join(dir, "missing.gcdump")}, 6, "no such file"},
		{[]string{"gcdump", "report", garbage}, 5, "unexpected end of file"},
		{[]string{"gcdump", "report", good, "--sort", "name"}, 2, "--sort"},
		// dotnet-gcdump's -t is its --report-type: heapstat, what report
		// prints, is accepted; anything else that is not a timeout is
		// refused, naming both meanings.
		{[]string{"gcdump", "report", good, "-t", "heapstat"}, 0, ""},
		{[]string{"gcdump", "report", good, "-t", "HeapStat"}, 0, ""},
		{[]string{"gcdump", "report", good, "--report-type", "heapstat"}, 0, ""},
		{[]string{"gcdump", "report", "--diagnostic-port", gcdumpFake(t, 3, gcdumptest.Options{}), "-t", "heapstat"}, 0, ""},
		{[]string{"gcdump", "report", good, "--report-type", "dominators"}, 2, "the only report type is heapstat"},
		{[]string{"gcdump", "report", good, "-t", "stats"}, 2, "dotnet-gcdump's -t is --report-type"},
		{[]string{"gcdump", "paths", good, "--type", "App.Item", "-t", "heapstat"}, 2, "--timeout"},
		{[]string{"gcdump", "paths", good}, 2, "--type NAME is required"},
		{[]string{"gcdump", "paths", good, "--type", "Nope"}, 1, "no such type"},
		{[]string{"gcdump", "convert", good, "--format", "svg"}, 2, "--format"},
		{[]string{"gcdump", "diff", good}, 2, "accepts 2 arg"},
		{[]string{"gcdump", "collect", "--diagnostic-port", gcdumpFake(t, 3, gcdumptest.Options{NoGCEnd: true}), "-o", filepath.Join(dir, "x.gcdump"), "--timeout", "1"}, 4, "still running"},
	} {
		code, _, errOut := run(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", tc.args, code, tc.code, tc.msg, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.gcdump")); !os.IsNotExist(err) {
		t.Errorf("a failed collection left a file: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// TestGCDumpReal is the README's leak hunt on the real 3.1 runtime:
// collect, grow the leak, collect again, diff, paths, report, convert.
func TestGCDumpReal(t *testing.T) {
	rt := dotnettest.Find(t)
	tg := rt.Start(t, rt.Build(t, "Heap"), nil, nil)
	dir := t.TempDir()
	pid := func() string { return strconv.Itoa(tg.PID) }
	before, after := filepath.Join(dir, "before.gcdump"), filepath.Join(dir, "after.gcdump")
	// Heaps are walked with the main thread back in its command loop: a
	// command's temporaries still live on its stack would show as roots.
	tg.WaitReading(t, time.Minute)
	if code, _, errOut := run(t, "gcdump", "collect", "-p", pid(), "-o", before); code != 0 {
		t.Fatalf("collect: %d\n%s", code, errOut)
	}
	tg.Send(t, "grow 250")
	tg.Expect(t, "GROWN 250", 30*time.Second)
	tg.WaitReading(t, time.Minute)
	code, _, errOut := run(t, "gcdump", "collect", "-p", pid(), "-o", after)
	if code != 0 || !strings.Contains(errOut, "Heap walked:") {
		t.Fatalf("collect: %d\n%s", code, errOut)
	}
	code, out, _ := run(t, "gcdump", "diff", before, after, "--json")
	var d gcdump.Diff
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || len(d.Types) == 0 {
		t.Fatalf("diff: %d\n%s", code, out)
	}
	// The leak is what grew; the runtime's own objects may move a little
	// (strings of the commands, buffers), the target's other types not.
	rows := map[string]gcdump.TypeDiff{}
	for _, row := range d.Types {
		rows[row.Name] = row
	}
	if row := rows["Heap.Leak"]; row.CountDelta != 250 || row.SizeDelta != 250*24 || row.CountBefore != 0 {
		t.Errorf("Heap.Leak: %+v\n%s", row, out)
	}
	if row := rows["Heap.Leak[]"]; row.CountDelta != 0 || row.SizeDelta != 250*8 || row.RetainedDelta != 250*(8+24) {
		t.Errorf("Heap.Leak[]: %+v\n%s", row, out)
	}
	if len(d.Warnings) != 0 {
		t.Errorf("diff warnings: %q", d.Warnings)
	}
	for name, row := range rows {
		if strings.HasPrefix(name, "Heap.") && name != "Heap.Leak" && name != "Heap.Leak[]" {
			t.Errorf("%s changed: %+v", name, row)
		}
	}
	code, out, _ = run(t, "gcdump", "paths", after, "--type", "Heap.Leak")
	if code != 0 || !strings.Contains(out, "250 objects (6,000 bytes) held by static field s_leaks (holds Heap.Leak[])") {
		t.Errorf("paths: %d\n%s", code, out)
	}
	// A two-dimensional array's type, by its name.
	code, out, _ = run(t, "gcdump", "paths", after, "--type", "System.String[,]")
	if code != 0 || !strings.Contains(out, "1 objects (88 bytes) held by static field s_grid (holds System.String[,])" /* 16 header, 8 length, 2x8 bounds, 6x8 */) {
		t.Errorf("paths of System.String[,]: %d\n%s", code, out)
	}
	code, out, _ = run(t, "gcdump", "report", "-p", pid(), "--json")
	var rep reportJSON
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("report -p: %d\n%s", code, out)
	}
	found := false
	for _, ty := range rep.Types {
		if ty.Name == "Heap.Leak[]" {
			found = ty.Count == 1 && ty.Size == 24+8*250 && ty.RetainedSize == 24+8*250+250*24
		}
	}
	if !found {
		t.Errorf("report -p: Heap.Leak[] missing or wrong:\n%s", out)
	}
	pb := filepath.Join(dir, "after.pb.gz")
	if code, _, errOut := run(t, "gcdump", "convert", after, "--format", "pprof", "-o", pb); code != 0 {
		t.Fatalf("convert: %d %s", code, errOut)
	}
	goToolPprof(t, pb, []string{"-top"}, "Heap.Leak", "Heap.StaticItem")
	// The static field that holds the items is named, and a note says
	// that a choice of root was made.
	code, out, errOut = run(t, "gcdump", "convert", after, "--format", "folded", "-o", "-")
	if code != 0 || !strings.Contains(out, "[static vars];[static var Heap.StaticItem[].s_held];[also held by other roots];Heap!Heap.StaticItem[];Heap!Heap.StaticItem 3200\n") ||
		!strings.Contains(errOut, "are held by several kinds of roots") {
		t.Errorf("folded: %d\n%s\n%s", code, errOut, out)
	}
	// Text diff: before and after columns.
	code, out, _ = run(t, "gcdump", "diff", before, after)
	if code != 0 || !strings.Contains(out, "Bytes Before  Bytes After") || !regexp.MustCompile(`\s0\s+250\s+\+250\s+\+6,000\s+Heap\.Leak\n`).MatchString(out) {
		t.Errorf("diff text: %d\n%s", code, out)
	}
}

// TestGCDumpCollectBuffering: a runtime without Block buffering (3.1) gets
// Drop without a word by default, a warning only when Block was asked for.
func TestGCDumpCollectBuffering(t *testing.T) {
	dir := t.TempDir()
	for i, tc := range []struct {
		flag []string
		code int
		warn bool
	}{
		{nil, 0, false},
		{[]string{"--buffering", "auto"}, 0, false},
		{[]string{"--buffering", "drop"}, 0, false},
		{[]string{"--buffering", "block"}, 0, true},
		{[]string{"--buffering", "wait"}, 2, false},
	} {
		args := append([]string{"gcdump", "collect", "--diagnostic-port", gcdumpFake(t, 2, gcdumptest.Options{}), "-o", filepath.Join(dir, strconv.Itoa(i)+".gcdump")}, tc.flag...)
		code, _, errOut := run(t, args...)
		if code != tc.code || strings.Contains(errOut, "warning:") != tc.warn || tc.warn && !strings.Contains(errOut, "Block buffering (needs .NET 11") {
			t.Errorf("%v: exit %d, want %d, warning %v:\n%s", tc.flag, code, tc.code, tc.warn, errOut)
		}
	}
}

// gcdumpTypes is a per-type report: the totals, and the count of objects
// by type name.
type gcdumpTypes struct {
	objects, bytes int64
	types          map[string]int64
}

// theirReport runs dotnet-gcdump report on a file and reads its totals and
// its table ("  size  count  Type  [module]" under "Object Bytes  Count
// Type"). Its "Object Bytes" is the size the file records for the type
// (one object's), not the total of the type's objects, so only the counts
// are compared; and its "GC Heap objects" is the number of nodes, the
// root pseudo-nodes and the nodes referenced but never described
// included.
func theirReport(t *testing.T, tools *dotnettest.Tools, file string) gcdumpTypes {
	t.Helper()
	out, err := tools.Command("dotnet-gcdump", "report", file).CombinedOutput()
	if err != nil {
		t.Fatalf("dotnet-gcdump report %s: %v\n%s", file, err, out)
	}
	r := gcdumpTypes{types: map[string]int64{}}
	num := func(s string) int64 {
		n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
		if err != nil {
			t.Fatalf("dotnet-gcdump report: %q: %v\n%s", s, err, out)
		}
		return n
	}
	row := regexp.MustCompile(`^\s*([\d,]+)\s+([\d,]+)\s+(.+?)(\s+\[[^\]]*\])?$`)
	total := regexp.MustCompile(`^\s*([\d,]+)\s+GC Heap (bytes|objects)$`)
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimRight(line, "\r")
		if m := total.FindStringSubmatch(line); m != nil {
			if m[2] == "bytes" {
				r.bytes = num(m[1])
			} else {
				r.objects = num(m[1])
			}
			continue
		}
		if m := row.FindStringSubmatch(line); m != nil {
			r.types[m[3]] += num(m[2])
		}
	}
	if len(r.types) == 0 {
		t.Fatalf("dotnet-gcdump report %s: no types read from\n%s", file, out)
	}
	return r
}

// ourReport runs gcdump report --json on a file.
func ourReport(t *testing.T, file string) gcdumpTypes {
	t.Helper()
	code, out, errOut := run(t, "gcdump", "report", file, "--json")
	var rep reportJSON
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("gcdump report %s: exit %d\n%s\n%s", file, code, errOut, out)
	}
	r := gcdumpTypes{objects: rep.Objects, bytes: int64(rep.TotalSize), types: map[string]int64{}}
	for _, ty := range rep.Types {
		r.types[ty.Name] += ty.Count
	}
	return r
}

// TestRealGCDumpVsDotnetGCDump takes a snapshot of the same process on
// .NET 8 and 11 with clrdiag and with Microsoft's dotnet-gcdump, and has
// each tool report both files: the same bytes, nodes and per-type counts,
// type by type, whoever wrote the file. The two snapshots hold the same objects of
// the target's own types.
func TestRealGCDumpVsDotnetGCDump(t *testing.T) {
	dotnettest.ForEach(t, []int{8, 11}, func(t *testing.T, rt *dotnettest.Runtime) {
		tools := dotnettest.FindTools(t)
		tg := rt.Start(t, rt.Build(t, "Heap"), nil, nil)
		tg.Send(t, "grow 1000")
		tg.Expect(t, "GROWN 1000", 30*time.Second)
		dir := t.TempDir()
		ours, theirs := filepath.Join(dir, "ours.gcdump"), filepath.Join(dir, "theirs.gcdump")
		tg.WaitReading(t, time.Minute)
		if code, _, errOut := run(t, "gcdump", "collect", "-p", strconv.Itoa(tg.PID), "-o", ours); code != 0 || strings.Contains(errOut, "warning:") {
			t.Fatalf("gcdump collect: exit %d\n%s", code, errOut)
		}
		tg.WaitReading(t, time.Minute)
		if out, err := tools.Command("dotnet-gcdump", "collect", "-p", strconv.Itoa(tg.PID), "-o", theirs).CombinedOutput(); err != nil {
			t.Fatalf("dotnet-gcdump collect: %v\n%s", err, out)
		}
		counts := map[string]map[string]int64{}
		for _, file := range []string{ours, theirs} {
			a, b := ourReport(t, file), theirReport(t, tools, file)
			counts[file] = a.types
			name := filepath.Base(file)
			g, err := gcdump.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if int64(g.NumNodes()) != b.objects || a.bytes != b.bytes {
				t.Errorf("%s: clrdiag reads %d nodes (%d objects), %d bytes; dotnet-gcdump %d, %d", name, g.NumNodes(), a.objects, a.bytes, b.objects, b.bytes)
			}
			for ty, n := range b.types {
				if a.types[ty] != n {
					t.Errorf("%s: %s: clrdiag reads %d objects, dotnet-gcdump %d", name, ty, a.types[ty], n)
				}
			}
			for ty, n := range a.types {
				if _, ok := b.types[ty]; !ok {
					t.Errorf("%s: %s: clrdiag reads %d objects, dotnet-gcdump none", name, ty, n)
				}
			}
			t.Logf("%s: %d objects, %d bytes, %d types, the same in both tools", name, a.objects, a.bytes, len(a.types))
		}
		// The target's own objects, in both snapshots (dotnet-gcdump
		// names arrays over 1 KB "T[] (Bytes > 1K)": its Heap.Leak[] of
		// 1,000 references is one).
		o, th := counts[ours], counts[theirs]
		for ty, n := range map[string]int64{"Heap.StaticItem": 100, "Heap.LocalItem": 50, "Heap.HandleItem": 25, "Heap.HandlePayload": 25,
			"Heap.Leak": 1000, "Heap.StaticItem[]": 1, "Heap.LocalItem[]": 1, "Heap.HandleItem[]": 1} {
			if o[ty] != n || th[ty] != n {
				t.Errorf("%s: %d objects in clrdiag's snapshot, %d in dotnet-gcdump's; the target made %d", ty, o[ty], th[ty], n)
			}
		}
		if o["Heap.Leak[]"] != 1 || th["Heap.Leak[] (Bytes > 1K)"] != 1 {
			t.Errorf("Heap.Leak[]: %d in clrdiag's snapshot, %d in dotnet-gcdump's", o["Heap.Leak[]"], th["Heap.Leak[] (Bytes > 1K)"])
		}
	})
}

// TestGCDumpRealTargetKilled: a real 3.1 target killed during the heap
// walk. 'gcdump collect' says that the target exited, exits 7 (target gone; the runtime
// stopped answering) and writes no file.
func TestGCDumpRealTargetKilled(t *testing.T) {
	rt := dotnettest.Find(t)
	tg := rt.Start(t, rt.Build(t, "Heap"), nil, nil)
	tg.Send(t, "grow 3000000")
	tg.Expect(t, "GROWN 3000000", 2*time.Minute)
	tg.WaitReading(t, time.Minute)
	out := filepath.Join(t.TempDir(), "x.gcdump")
	r := startCLI("gcdump", "collect", "-p", strconv.Itoa(tg.PID), "-o", out)
	progress := regexp.MustCompile(`(?m)^  [\d,]+ objects, [\d,]+ references$`)
	deadline := time.After(2 * time.Minute)
	for !progress.MatchString(r.stderr.String()) {
		select {
		case <-r.done:
			t.Skipf("the walk ended before the target could be killed (exit %d):\n%s", r.code, r.stderr.String())
		case <-deadline:
			t.Fatalf("no progress after 2 minutes:\n%s", r.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	tg.Kill()
	r.wait(t, time.Minute)
	if r.code != exitTargetGone || !strings.Contains(r.stderr.String(), "the target process exited during the heap walk") {
		t.Errorf("exit %d:\n%s", r.code, r.stderr.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a file was left: %v", err)
	}
}
