package testcapture

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// EnvVar names the directory of the captures that are not committed.
const EnvVar = "CLRDIAG_CAPTURES"

// Committed lists the captures in testdata/captures, by path relative to
// it, with the SHA-256 of their content.
var Committed = map[string]string{
	"perfview/eventpipe-dotnetcore2.1-linux-x64-tracelogging.netperf.zip":                 "bbc48698d8cc0d364f245dd9c34334566b2a6047cbebb98ced2528fbea0f8e10",
	"perfview/eventpipe-dotnetcore2.1-linux-x64-tracelogging.netperf.baseline.txt":        "93cc649301f62ceef2a7184aed133160e7fb3dd241686c8f2acaee1114109614",
	"perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip":                       "9e4a4a79acdb5f4f14bc5a8d8e2a2b086624c070a666f623669a4408e284c966",
	"perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.baseline.txt":              "8a046ceaf985a9ea7152a368d8b5d986f0e1731bb1079dd3c328038a8997d441",
	"perfview/eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace.zip":                    "ee1e1c26d3e92a6013482b1f4162a79bc2edac4954aadf1f2e9fcd848f000c2f",
	"perfview/eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace.baseline.txt":           "a289b9dcec0158ddd7722af28b81b21be8f206968052d9e5370884a4c92bb090",
	"perfview/eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip":          "f8e1562634aefbb1e3752d7f8d2e4ae31634e9ef9336e2b5d5523170d7ac2f93",
	"perfview/eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.baseline.txt": "9a1db37f315b7b6c1767df06486e14e5068ee2d529472677c5b612d337e2db86",
	"perfview/only_managed_samples.nettrace.zip":                                          "d4385370c1488a3358b922d0d3fc5c9d511502b699dd3ed94bcadf752d6bf522",
	"misc/dotnet-diagnostics-3.0-counters-truncated.nettrace":                             "b0e741082f719e1c7d106edc87e2b6936a15cc03f5e6e5666b267d42d88fe26b",
	"misc/net6.0.9-windows.nettrace":                                                      "d2862af2c1c54f3e42dafea53f896275e5c90dceefbc66af1cdb8e90d0626264",
	"clrdiag/hot-3.1.2-linux-x64.nettrace":                                                "c20620cc886374c0b79dc810e0776f5210435be5f44076d3e178d8b917b1c458",
	"clrdiag/workloads-10.0.15-linux-x64-default.clrdiag.nettrace.zip":                    "7434da51dfbeb547b1fe4f5e46858112f6371da687545bbe7fd1daaf9c8e93ef",
	"clrdiag/workloads-10.0.15-linux-x64-default.dotnet-trace.nettrace.zip":               "f45085a3c883aec694da385d41bbcec20ffbc6e08ff7fcc21af460517e2c6fec",
	"clrdiag/workloads-10.0.15-linux-x64-gc-verbose.clrdiag.nettrace.zip":                 "5df90ea2e87f2fd57631db77faf7f3465e283046e2d9071d83c874539083bfbc",
	"clrdiag/workloads-10.0.15-linux-x64-gc-verbose.dotnet-trace.nettrace.zip":            "4055255e2d052cfe9bd1c5baed8ee83c328887268bee66dc473d3c1b6c4a8d2b",
	"clrdiag/workloads-11.0.0-linux-x64-default.clrdiag.nettrace.zip":                     "adccd1b60ffabb311705dba1ad774a004578149fb6416018d91bd2f8e90e17f5",
	"clrdiag/workloads-11.0.0-linux-x64-default.dotnet-trace.nettrace.zip":                "30138c24d1bcabd7f12537fd38bfea2a0bcdcc9ec1d22b05df52024a72827732",
	"clrdiag/workloads-11.0.0-linux-x64-gc-verbose.clrdiag.nettrace.zip":                  "5381c7727e81a2ef770f6a5ea6f7b5ad04927d0c5e00c9228c6b0769f01629f3",
	"clrdiag/workloads-11.0.0-linux-x64-gc-verbose.dotnet-trace.nettrace.zip":             "643bacb3a3656b1cdde93fba388fbbe29280d377935fc2fcd78a910138e0b3a0",
	"clrdiag/workloads-8.0.34-linux-x64-default.clrdiag.nettrace.zip":                     "228b2536631bc76275a148a6881bf922986954259db11067d5c55b7261ba4d33",
	"clrdiag/workloads-8.0.34-linux-x64-default.dotnet-trace.nettrace.zip":                "803e05b47149d08b1b16f8279936f03db14f1db43e15ab199379fbebd42ff7ea",
	"clrdiag/workloads-8.0.34-linux-x64-gc-verbose.clrdiag.nettrace.zip":                  "195260536c709fba524db7f642d34ae8fd1374b8cef0ef02064d61303b3db9de",
	"clrdiag/workloads-8.0.34-linux-x64-gc-verbose.dotnet-trace.nettrace.zip":             "eb42edc708e8784d230223c136448ec27a7709f953adc97fcd710de41afa6409",
}

// External lists the captures read from $CLRDIAG_CAPTURES, with why they
// are not committed.
var External = map[string]string{
	"perfview/VoiceMemo.23092.nettrace.zip":  "29.6 MB unzipped (MIT, microsoft/perfview)",
	"zetslief/perf.nettrace":                 "no licence in zetslief/nettrace",
	"zetslief/task_trace.nettrace":           "no licence in zetslief/nettrace",
	"zetslief/perf_100ms.nettrace":           "no licence in zetslief/nettrace",
	"misc/net5-v2params-allocTrace.nettrace": "no licence in shirhatti/Nettrace",
}

// Dir returns the absolute path of testdata/captures in this module.
func Dir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return filepath.Join("testdata", "captures")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "captures")
}

// Path returns the path of the capture rel ("perfview/x.nettrace.zip"): in
// testdata/captures when it is committed, else under $CLRDIAG_CAPTURES. It
// stops the test when the file cannot be had (see the package comment).
func Path(tb testing.TB, rel string) string {
	tb.Helper()
	if _, ok := Committed[rel]; ok {
		p := filepath.Join(Dir(), filepath.FromSlash(rel))
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("committed capture %s is missing: %v", rel, err)
		}
		return p
	}
	dir := os.Getenv(EnvVar)
	if dir == "" {
		why := External[rel]
		if why == "" {
			why = "not listed in testcapture.Committed or External"
		}
		tb.Skipf("capture %s is not committed (%s): set %s=/path/to/shared/captures to run this test", rel, why, EnvVar)
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("capture %s missing under %s=%s (CI=true): %v", rel, EnvVar, dir, err)
		}
		tb.Skipf("capture %s not found under %s=%s: %v", rel, EnvVar, dir, err)
	}
	return p
}

// Available reports whether rel can be read without skipping: it is
// committed, or $CLRDIAG_CAPTURES holds it.
func Available(rel string) bool {
	if _, ok := Committed[rel]; ok {
		return true
	}
	dir := os.Getenv(EnvVar)
	if dir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
	return err == nil
}

// Load returns the trace bytes of rel, unzipping a .zip.
func Load(tb testing.TB, rel string) []byte {
	tb.Helper()
	data, err := os.ReadFile(Path(tb, rel))
	if err != nil {
		tb.Fatal(err)
	}
	if !strings.HasSuffix(rel, ".zip") {
		return data
	}
	b, err := Unzip(data)
	if err != nil {
		tb.Fatalf("%s: %v", rel, err)
	}
	return b
}

// Size returns the length of what Load returns for rel, without reading
// it: the file's size, or for a .zip the uncompressed size its directory
// gives for the trace. A test that skips large captures asks it first
// (unzipping the 30 MB one took more time than the tests of the others).
func Size(tb testing.TB, rel string) int64 {
	tb.Helper()
	p := Path(tb, rel)
	if !strings.HasSuffix(rel, ".zip") {
		fi, err := os.Stat(p)
		if err != nil {
			tb.Fatal(err)
		}
		return fi.Size()
	}
	zr, err := zip.OpenReader(p)
	if err != nil {
		tb.Fatalf("%s: %v", rel, err)
	}
	defer zr.Close()
	if f := traceFile(&zr.Reader); f != nil {
		return int64(f.UncompressedSize64)
	}
	tb.Fatalf("%s: no .nettrace or .netperf file in the archive", rel)
	return 0
}

// traceFile is the first .nettrace or .netperf file of a zip archive.
func traceFile(zr *zip.Reader) *zip.File {
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, ".nettrace") || strings.HasSuffix(f.Name, ".netperf") {
			return f
		}
	}
	return nil
}

// Unzip returns the first .nettrace or .netperf file of a zip archive.
func Unzip(data []byte) ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	f := traceFile(zr)
	if f == nil {
		return nil, fmt.Errorf("no .nettrace or .netperf file in the archive")
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// Traces lists the trace captures (.nettrace, .netperf, zipped or not),
// committed and external, sorted.
func Traces() []string {
	var out []string
	for _, m := range []map[string]string{Committed, External} {
		for rel := range m {
			if strings.HasSuffix(rel, ".zip") || strings.HasSuffix(rel, ".nettrace") || strings.HasSuffix(rel, ".netperf") {
				out = append(out, rel)
			}
		}
	}
	slices.Sort(out)
	return out
}

// AvailableTraces lists the Traces that are here: the committed ones, and
// the external ones when EnvVar is set.
func AvailableTraces() []string {
	var out []string
	for _, rel := range Traces() {
		if Available(rel) {
			out = append(out, rel)
		}
	}
	return out
}

// ShortName is a capture's name for a benchmark or subtest: its file name
// without suffixes or "eventpipe-", objver4 and counters-truncated for
// the two captures benchmarks compare most.
func ShortName(rel string) string {
	n := rel[strings.LastIndexByte(rel, '/')+1:]
	for _, s := range []string{".zip", ".nettrace", ".netperf"} {
		n = strings.TrimSuffix(n, s)
	}
	n = strings.TrimPrefix(n, "eventpipe-")
	switch {
	case strings.Contains(n, "objver4"):
		n = "objver4"
	case strings.Contains(n, "counters-truncated"):
		n = "counters-truncated"
	}
	return n
}

// LineDiff shows the first differing lines (up to 10) of two texts, for a
// test's failure message.
func LineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(wl), len(gl)) && shown < 10; i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			fmt.Fprintf(&b, "line %d\n  - %s\n  + %s\n", i+1, w, g)
			shown++
		}
	}
	if shown == 0 {
		return "(no difference)"
	}
	return b.String()
}
