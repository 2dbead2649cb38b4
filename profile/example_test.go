package profile_test

import (
	"fmt"
	"os"

	"github.com/clrdiag/clrdiag/profile"
)

// Convert a trace to a speedscope file and print the five hottest methods.
func Example() {
	f, err := os.Open("../../shared/captures/zetslief/perf.nettrace")
	if err != nil {
		fmt.Println("capture not available")
		return
	}
	defer f.Close()
	p, err := profile.Read(f, profile.Config{ManagedOnly: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := os.CreateTemp("", "*.speedscope.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.Remove(out.Name())
	defer out.Close()
	if err := profile.WriteSpeedscope(out, p, "perf"); err != nil {
		fmt.Println(err)
		return
	}
	r := profile.BuildReport(p, profile.ReportConfig{Top: 5})
	fmt.Println("runtime", r.Runtime, "rundown", p.Symbols.Rundown)
	fmt.Printf("%d of %d event frames resolved\n", p.Symbols.ResolvedEventFrames, p.Symbols.EventFrames)
	// Output:
	// runtime 8.0.1024.46610 rundown true
	// 308 of 308 event frames resolved
}
