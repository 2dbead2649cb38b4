package profile_test

import (
	"archive/zip"
	"fmt"
	"os"

	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/weighted"
)

// Convert a trace to a speedscope file through the format registry, say
// where it came from and print its hottest methods (at most five).
// The trace is a .NET 5 capture committed in testdata/captures (zipped).
func Example() {
	z, err := zip.OpenReader("../testdata/captures/perfview/only_managed_samples.nettrace.zip")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer z.Close()
	f, err := z.File[0].Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	format, err := weighted.LookupFormat("speedscope")
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := profile.Read(f, profile.Config{Timeline: format.Timeline})
	if err != nil {
		fmt.Println(err)
		return
	}
	wp, err := p.Weighted(profile.MeasureCPU)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := os.CreateTemp("", "*"+format.Suffix)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.Remove(out.Name())
	defer out.Close()
	if err := format.Write(out, wp); err != nil {
		fmt.Println(err)
		return
	}
	r := profile.BuildReport(p, profile.ReportConfig{Top: 5, Measure: profile.MeasureCPU})
	fmt.Println(r.ProcessName, "on .NET", r.Runtime, "rundown", p.Symbols.Rundown)
	fmt.Printf("%d of %d sample frames resolved\n", p.Symbols.ResolvedSampleFrames, p.Symbols.SampleFrames)
	for _, m := range r.Methods {
		fmt.Printf("%5.1f%% %s\n", m.ExclusivePct, m.Method)
	}
	// Output:
	// NoNativeStacks on .NET 5.0 rundown true
	// 27273 of 27273 sample frames resolved
	//  67.4% NoNativeStacks.Program.FindByte
	//  32.6% NoNativeStacks.Program.InnerLoop
	//   0.0% NoNativeStacks.Program.Main
	//   0.0% NoNativeStacks.Program.Test
}
