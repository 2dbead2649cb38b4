package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	pprofile "github.com/google/pprof/profile"

	"github.com/clrdiag/clrdiag/weighted"
)

// sampleTrace extracts the committed only_managed_samples capture into a
// temp directory.
func sampleTrace(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "samples.nettrace")
	if err := os.WriteFile(path, testcapture.Load(t, "perfview/only_managed_samples.nettrace.zip"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTraceConvert(t *testing.T) {
	in := sampleTrace(t)
	for _, f := range weighted.Formats() {
		format := f.Name
		code, _, stderr := run(t, "trace", "convert", in, "--format", format)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", format, code, stderr)
		}
		out := strings.TrimSuffix(in, ".nettrace") + f.Suffix
		if !strings.Contains(stderr, "wrote "+out+": 7423 samples on 1 threads, weighed by wall time") || !strings.Contains(stderr, "27273 of 27273 sample frames resolved") {
			t.Errorf("%s: stderr %q", format, stderr)
		}
		file, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		// What the output is follows from the format's content type.
		switch ct, _, _ := strings.Cut(f.ContentType, ";"); {
		case format == "pprof":
			if _, err := pprofile.Parse(file); err != nil {
				t.Errorf("pprof: %v", err)
			}
		case ct == "application/json":
			var v map[string]any
			if err := json.NewDecoder(file).Decode(&v); err != nil {
				t.Errorf("%s: %v", format, err)
			}
		case strings.HasPrefix(ct, "text/"):
			b, _ := io.ReadAll(file)
			// The trace's frames, whatever the text format shows of them.
			if !strings.Contains(string(b), "NoNativeStacks!NoNativeStacks.Program.") {
				t.Errorf("%s output:\n%s", format, b)
			}
		default:
			t.Errorf("%s: no check for content type %q", format, f.ContentType)
		}
		file.Close()
	}
	// To standard output, keeping one thread that does not exist: an
	// error, nothing written.
	code, stdout, stderr := run(t, "trace", "convert", in, "-f", "folded", "-o", "-", "--thread", "1")
	if code != exitFailure || stdout != "" || !strings.Contains(stderr, "no samples of thread [1]") {
		t.Errorf("--thread 1: exit %d, output %q, stderr %q", code, stdout, stderr)
	}
	// --sample cpu weighs Managed samples (all of this trace's).
	code, stdout, _ = run(t, "trace", "convert", in, "-f", "folded", "-o", "-", "--sample", "cpu")
	if code != 0 || !strings.Contains(stdout, "NoNativeStacks!NoNativeStacks.Program.Main;") {
		t.Errorf("--sample cpu: exit %d, output %q", code, stdout)
	}
	if code, _, stderr := run(t, "trace", "convert", in, "--sample", "heap"); code != exitUsage || !strings.Contains(stderr, "unknown --sample") {
		t.Errorf("bad --sample: exit %d, %q", code, stderr)
	}
	if code, _, stderr := run(t, "trace", "convert", in, "-f", "svg"); code != exitUsage || !strings.Contains(stderr, `--format: unknown format "svg"`) {
		t.Errorf("bad format: exit %d, %q", code, stderr)
	}
	if code, _, _ := run(t, "trace", "convert", filepath.Join(t.TempDir(), "missing.nettrace")); code != exitIO {
		t.Errorf("missing file: exit %d", code)
	}
}

func TestTraceReport(t *testing.T) {
	in := sampleTrace(t)
	code, stdout, stderr := run(t, "trace", "report", in, "--top", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Samples int64 `json:"samples"`
		Methods []struct {
			Method string `json:"method"`
		} `json:"methods"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if r.Samples != 7423 || len(r.Methods) != 2 || r.Methods[0].Method != "NoNativeStacks.Program.FindByte" {
		t.Errorf("report: %+v", r)
	}
	code, stdout, _ = run(t, "trace", "report", in, "--inclusive", "--top", "1")
	if code != 0 || !strings.Contains(stdout, "Top methods") || !strings.Contains(stdout, "10424.0ms  100.0  100        NoNativeStacks!") {
		t.Errorf("text report (exit %d):\n%s", code, stdout)
	}
}

// A trace without CPU samples (a .NET 6 trace of runtime events only):
// convert fails, writes nothing and names the profile to collect with;
// report says there are no samples; both name the .NET version.
func TestTraceWithoutSamples(t *testing.T) {
	in := filepath.Join(t.TempDir(), "events.nettrace")
	if err := os.WriteFile(in, testcapture.Load(t, "misc/net6.0.9-windows.nettrace"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, "trace", "convert", in, "--format", "pprof")
	if code != exitFailure || stdout != "" || !strings.Contains(stderr, "no CPU samples") || !strings.Contains(stderr, "--profile dotnet-sampled-thread-time") {
		t.Errorf("convert: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(strings.TrimSuffix(in, ".nettrace") + ".pb.gz"); err == nil {
		t.Error("convert wrote a file for a trace without samples")
	}
	code, stdout, stderr = run(t, "trace", "report", in)
	if code != 0 || !strings.Contains(stdout, "Note: the trace has no CPU samples") || !strings.Contains(stdout, "(RememberCalendar), .NET 6.0.9") {
		t.Errorf("report: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
}
