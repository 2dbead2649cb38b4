//go:build linux

package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pprofile "github.com/google/pprof/profile"

	"github.com/clrdiag/clrdiag/profile"
)

// TestRealCPUProfileHot collects 4 s of SampleProfiler samples from the Hot
// target, whose worker thread spends 3/4 of its time in MostlyHot and 1/4 in
// SometimesHot, and checks that the report, the pprof conversion done by
// trace collect --format and go tool pprof all say so.
func TestRealCPUProfileHot(t *testing.T) {
	tg := startHot(t)
	// The report marks the main thread as waiting only when every sample
	// caught it in Console.ReadLine: under load, a sample taken on its way
	// there from printing READY would be Managed.
	tg.WaitReading(t, time.Minute)
	dir := t.TempDir()
	trace := filepath.Join(dir, "hot.nettrace")
	code, _, errOut := run(t, "trace", "collect", "-p", fmt.Sprint(tg.PID), "--profile", "dotnet-sampled-thread-time",
		"--duration", "4s", "-o", trace, "--format", "pprof")
	if code != 0 {
		t.Fatalf("collect: exit %d\n%s", code, errOut)
	}
	pb := filepath.Join(dir, "hot.pb.gz")
	if !strings.Contains(errOut, "Converted: wrote "+pb) || !strings.Contains(errOut, "rundown completed") {
		t.Errorf("collect did not report the conversion:\n%s", errOut)
	}
	if _, err := os.Stat(trace); err != nil {
		t.Fatalf("the .nettrace was not kept: %v", err)
	}

	// pprof: parse it, find the worker thread by its stacks, and rank the
	// leaves of its samples. All samples count, not only Managed ones:
	// .NET Core 3.1's sampler suspends the runtime to take a sample, so it
	// labels nearly every sample External, even the worker's, which never
	// leaves managed code.
	f, err := os.Open(pb)
	if err != nil {
		t.Fatal(err)
	}
	pp, err := pprofile.Parse(f)
	f.Close()
	if err != nil {
		t.Fatalf("%s does not parse as pprof: %v", pb, err)
	}
	workers := map[int64]bool{}
	for _, s := range pp.Sample {
		for _, loc := range s.Location {
			if len(loc.Line) > 0 && loc.Line[0].Function.Name == "Hot.Burner.Loop" {
				workers[s.NumLabel["thread"][0]] = true
			}
		}
	}
	if len(workers) != 1 {
		t.Fatalf("threads with Hot.Burner.Loop on their stacks: %v, want exactly the HotWorker thread", workers)
	}
	var worker int64
	for id := range workers {
		worker = id
	}
	if worker == int64(tg.PID) {
		t.Errorf("the worker thread is the main thread %d", worker)
	}
	var types []string
	for _, st := range pp.SampleType {
		types = append(types, st.Type)
	}
	// The main thread waits the whole trace: pprof's default is then the
	// wall time of the threads that ran, as the report ranks.
	if strings.Join(types, ",") != "samples,wall,cpu,wall_ran" || pp.DefaultSampleType != "wall_ran" {
		t.Errorf("pprof sample types %v (default %q), want samples, wall, cpu, wall_ran (default wall_ran)", types, pp.DefaultSampleType)
	}
	if len(pp.Mapping) != 1 || pp.Mapping[0].File != "Hot" || !pp.Mapping[0].HasFunctions {
		t.Errorf("pprof mappings %+v, want one named Hot with functions", pp.Mapping)
	}
	flat := map[string]int64{}
	cpuFlat := map[string]int64{} // the worker's Managed samples per leaf method
	var wall, cpu int64
	for _, s := range pp.Sample {
		if s.NumLabel["thread"][0] != worker || len(s.Location) == 0 || len(s.Location[0].Line) == 0 {
			continue
		}
		flat[s.Location[0].Line[0].Function.Name] += s.Value[1]
		cpuFlat[s.Location[0].Line[0].Function.Name] += s.Value[2]
		wall += s.Value[1]
		cpu += s.Value[2]
	}
	top, topV := "", int64(-1)
	for name, v := range flat {
		if v > topV {
			top, topV = name, v
		}
	}
	if top != "Hot.Burner.MostlyHot" || flat["Hot.Burner.SometimesHot"] == 0 {
		t.Errorf("worker's largest flat value: %s (%d); SometimesHot %d; all %v", top, topV, flat["Hot.Burner.SometimesHot"], flat)
	}
	t.Logf("worker: wall %v, cpu (Managed samples) %v", time.Duration(wall), time.Duration(cpu))

	// The report of the worker thread's samples: 3/4 and 1/4.
	code, out, errOut := run(t, "trace", "report", trace, "--json", "--thread", fmt.Sprint(worker))
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errOut)
	}
	var rep profile.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report --json: %v\n%s", err, out)
	}
	rank := map[string]int{}
	pct := map[string]float64{}
	for i, m := range rep.Methods {
		rank[m.Method], pct[m.Method] = i+1, m.ExclusivePct
	}
	mostly, sometimes := "Hot.Burner.MostlyHot", "Hot.Burner.SometimesHot"
	t.Logf("worker 0x%X: %d samples (%d managed), period %v; MostlyHot %.1f%% (rank %d), SometimesHot %.1f%% (rank %d); %s",
		worker, rep.Samples, rep.Managed, rep.Period, pct[mostly], rank[mostly], pct[sometimes], rank[sometimes], fmt.Sprintf("%d/%d sample frames resolved", rep.Symbols.ResolvedSampleFrames, rep.Symbols.SampleFrames))
	if rep.Samples < 500 {
		t.Errorf("only %d samples of the worker in 4 s", rep.Samples)
	}
	if rank[mostly] != 1 || rank[sometimes] == 0 || rank[sometimes] < rank[mostly] {
		t.Errorf("ranks: MostlyHot %d, SometimesHot %d; methods %+v", rank[mostly], rank[sometimes], rep.Methods)
	}
	// About 75% and 25% on a quiet machine. Under CPU load the split skews
	// towards MostlyHot (90.8%/9.2% was seen with two CPU hogs on two
	// cores): the bounds keep both methods present and MostlyHot dominant.
	if p := pct[mostly]; p < 55 || p > 95 {
		t.Errorf("MostlyHot has %.1f%% of the worker's samples, want about 75%%", p)
	}
	if p := pct[sometimes]; p < 5 || p > 45 {
		t.Errorf("SometimesHot has %.1f%% of the worker's samples, want about 25%%", p)
	}

	// go tool pprof -top lists the hot methods.
	goTool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("go not on PATH (CI=true): %v", err)
		}
		t.Logf("skipping go tool pprof: %v", err)
		return
	}
	for _, args := range [][]string{{"-top"}, {"-top", "-sample_index=cpu"}, {"-traces"}, {"-raw"}} {
		cmd := exec.Command(goTool, append(append([]string{"tool", "pprof"}, args...), pb)...)
		cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+dir)
		txt, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go tool pprof %v: %v\n%s", args, err, txt)
		}
		if strings.Contains(string(txt), "Main binary filename not available") {
			t.Errorf("go tool pprof %v looks for a binary:\n%s", args, txt)
		}
		// By wall time both hot methods are listed. By cpu, only those
		// the 3.1 sampler caught in managed code (often one or two
		// samples in all, see the report's note): each method with cpu
		// samples in the profile is listed, and one without is not.
		for _, m := range []string{mostly, sometimes} {
			want := len(args) == 1 || args[1] != "-sample_index=cpu" || cpuFlat[m] > 0
			if got := strings.Contains(string(txt), m); got != want {
				t.Errorf("go tool pprof %v lists %s: %v, want %v (its cpu value %d):\n%s", args, m, got, want, cpuFlat[m], txt)
			}
		}
		if args[0] == "-top" && !strings.Contains(string(txt), "File: Hot") {
			t.Errorf("go tool pprof %v does not name the application:\n%s", args, txt)
		}
	}

	// The whole report: the main thread, blocked in Console.ReadLine, is
	// listed apart as waiting (marked so with --include-waiting), the
	// worker's MostlyHot ranks first, and the 3.1 note is there.
	code, out, errOut = run(t, "trace", "report", trace)
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"(Hot), .NET 3.1.2", "Waiting the whole trace", "System.Console!System.ConsolePal.Read\n",
		fmt.Sprintf("%d ", tg.PID), "waited in System.Console!System.ConsolePal.Read",
		"Top methods by exclusive wall time of the threads that ran (1 of 2 threads", "Method\n  "} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if _, after, _ := strings.Cut(out, "Method\n  "); !strings.Contains(strings.SplitN(after, "\n", 2)[0], "Hot!Hot.Burner.MostlyHot") {
		t.Errorf("the report does not rank MostlyHot first:\n%s", out)
	}
	if _, waiting, _ := run(t, "trace", "report", trace, "--include-waiting"); !strings.Contains(waiting, "System.Console!System.ConsolePal.Read  (waiting)") {
		t.Errorf("report --include-waiting does not mark ConsolePal.Read as waiting:\n%s", waiting)
	}
	if rep.Managed*10 < rep.Samples && !strings.Contains(out, ".NET Core 3.x labels a thread External") {
		t.Errorf("the worker's samples are mostly External but the report does not say why:\n%s", out)
	}
	// By cpu, the report ranks first the worker's method with the most
	// Managed samples, when the sampler caught any.
	code, out, _ = run(t, "trace", "report", trace, "--sample", "cpu", "--top", "1")
	if code != 0 || !strings.Contains(out, "Top methods by exclusive cpu time") {
		t.Errorf("report --sample cpu (exit %d) does not rank by cpu time:\n%s", code, out)
	}
	if c := cpuFlat[mostly]; c > cpuFlat[sometimes] && !strings.Contains(out, "Hot!Hot.Burner.MostlyHot") {
		t.Errorf("report --sample cpu does not rank MostlyHot (cpu %d, SometimesHot %d) first:\n%s", c, cpuFlat[sometimes], out)
	} else if c := cpuFlat[sometimes]; c > cpuFlat[mostly] && !strings.Contains(out, "Hot!Hot.Burner.SometimesHot") {
		t.Errorf("report --sample cpu does not rank SometimesHot (cpu %d, MostlyHot %d) first:\n%s", c, cpuFlat[mostly], out)
	}
}
