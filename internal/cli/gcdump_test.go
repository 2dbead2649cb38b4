//go:build unix

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
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
	if code != 0 || !strings.Contains(out, "+400          +10           1,240           31  App.Item") {
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
	if row := rows["Heap.Leak[]"]; row.CountDelta != 0 || row.SizeDelta != 250*8 {
		t.Errorf("Heap.Leak[]: %+v\n%s", row, out)
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
}
