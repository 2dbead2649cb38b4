package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clrdiag/clrdiag/internal/ctxio"
	"github.com/clrdiag/clrdiag/internal/safefile"
	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/weighted"
)

func init() {
	registerTrace("convert", newTraceConvertCmd)
	registerTrace("report", newTraceReportCmd)
}

type profileFlags struct {
	threads     []uint
	managedOnly bool
	sample      string
}

func (f *profileFlags) config(timeline bool) profile.Config {
	cfg := profile.Config{ManagedOnly: f.managedOnly, Timeline: timeline}
	for _, t := range f.threads {
		cfg.Threads = append(cfg.Threads, uint64(t))
	}
	return cfg
}

func (f *profileFlags) register(cmd *cobra.Command) {
	cmd.Flags().UintSliceVar(&f.threads, "thread", nil, "keep only these OS thread ids (repeatable or comma-separated)")
	cmd.Flags().BoolVar(&f.managedOnly, "managed-only", false, "drop External samples (threads blocked or in native code)")
	cmd.Flags().StringVar(&f.sample, "sample", "", "what to weigh: "+strings.Join(profile.Measures(), ", ")+
		" (see the command's help); default wall, cpu with --managed-only")
}

// sampleHelp lists the --sample values for a command's long help.
func sampleHelp() string {
	var b strings.Builder
	for _, m := range profile.MeasureInfos() {
		fmt.Fprintf(&b, "  --sample %-11s %s\n", m.Name, m.Help)
	}
	return b.String()
}

// measure checks --sample: "" (the default) or a measure's name.
func (f *profileFlags) measure() (string, error) {
	if f.sample == "" {
		return "", nil
	}
	m, err := profile.LookupMeasure(f.sample)
	if err != nil {
		names := profile.Measures()
		return "", usageErrorf("unknown --sample %q: use %s or %s", f.sample, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
	}
	if f.managedOnly && m.Name != profile.MeasureCPU && m.Name != profile.MeasureWall {
		return "", usageErrorf("--managed-only drops CPU samples; it does not apply to --sample %s", m.Name)
	}
	return m.Name, nil
}

// measureInfo is the measure --sample names (its default: wall, or cpu
// with --managed-only).
func (f *profileFlags) measureInfo(measure string) profile.MeasureInfo {
	if measure == "" {
		measure = profile.MeasureWall
		if f.managedOnly {
			measure = profile.MeasureCPU
		}
	}
	m, _ := profile.LookupMeasure(measure)
	return m
}

// checkMeasured fails when the profile has nothing of the measure (after
// the --thread filter), saying how to collect it; readErr (the trace was
// damaged) wins over the advice when the trace had nothing to give.
func checkMeasured(p *profile.Profile, m profile.MeasureInfo, in, verb string, pf *profileFlags, readErr error) error {
	err := p.Check(m.Name)
	if err == nil {
		return nil
	}
	if len(pf.threads) > 0 {
		return fmt.Errorf("%s: no %s of thread %v: nothing to %s (clrdiag trace report %s lists the threads)", in, m.Noun, pf.threads, verb, in)
	}
	if readErr != nil {
		return readErr
	}
	return fmt.Errorf("%s: nothing to %s: %w", in, verb, err)
}

// readProfile builds a profile from FILE ("-" reads standard input). A
// damaged or truncated trace gives the profile of what was read together
// with an *ExitError (exitDamaged) that says so: the caller uses the
// profile, then returns the error.
func readProfile(e *env, name string, cfg profile.Config) (*profile.Profile, error) {
	var r io.Reader = e.stdin
	if name != "-" {
		f, err := openInput(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	// The decoder buffers what it reads itself: no bufio on top (a second
	// copy of every byte, and a 1 MiB buffer to clear).
	p, err := profile.Read(ctxio.Cancelable(e.ctx, r), cfg)
	var fe *nettrace.FormatError
	switch {
	case interruptedError(e.ctx, name, err) != nil:
		return nil, interruptedError(e.ctx, name, err)
	case err == nil:
	case p != nil && errors.As(err, &fe):
		fmt.Fprintf(e.stderr, "clrdiag: warning: %s: %v; using the events before it\n", name, err)
		err = &ExitError{Code: exitDamaged, Err: fmt.Errorf("%s: %w (the output covers the events before the damage)", name, err)}
	default:
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if p.DecodeErrors > 0 {
		fmt.Fprintf(e.stderr, "clrdiag: warning: %d runtime events did not decode (first: %v)\n", p.DecodeErrors, p.FirstDecodeError)
	}
	if n := p.CapNote(); n != "" {
		fmt.Fprintf(e.stderr, "clrdiag: warning: %s\n", n)
	}
	return p, err
}

// convertedName is the default output of converting the trace in to f: in
// without its .nettrace suffix, plus the format's suffix.
func convertedName(in string, f weighted.Format) string {
	return strings.TrimSuffix(strings.TrimSuffix(in, ".nettrace"), ".netperf") + f.Suffix
}

// lookupFormat is weighted.LookupFormat as a usage error.
func lookupFormat(name string) (weighted.Format, error) {
	f, err := weighted.LookupFormat(name)
	if err != nil {
		return f, usageErrorf("--format: %w", err)
	}
	return f, nil
}

// convertTrace converts the samples of the trace in ("-" for standard input)
// to format f, written to out ("-" for standard output), prints the
// profile's notes on stderr and returns a one-line summary of what it
// wrote. A trace without samples (after the --thread filter) is an error
// that says how to collect samples, and nothing is written.
func convertTrace(e *env, in, out string, f weighted.Format, pf *profileFlags, force bool) (string, error) {
	measure, err := pf.measure()
	if err != nil {
		return "", err
	}
	m := pf.measureInfo(measure)
	if err := m.CheckFormat(f); err != nil {
		return "", usageErrorf("--format %s: %w", f.Name, err)
	}
	if err := checkOutput(out, force); err != nil {
		return "", err
	}
	// Only what the measure needs is built (Config.Measure).
	cfg := pf.config(f.Timeline)
	cfg.Measure = m.Name
	p, readErr := readProfile(e, in, cfg)
	if p == nil {
		return "", readErr
	}
	if err := checkMeasured(p, m, in, "convert", pf, readErr); err != nil {
		return "", err
	}
	if p.TimelineTruncated {
		fmt.Fprintln(e.stderr, "clrdiag: warning: timeline too long; later samples are aggregated only")
	}
	wp, err := p.Weighted(measure)
	if err != nil {
		return "", usageError(err)
	}
	if wp.Name == "" && in != "-" {
		wp.Name = filepath.Base(in)
	}
	var w io.Writer = e.stdout
	var file *os.File
	var esc *termsafe.LineWriter
	if out == "-" && isTerminal(e.stdout) {
		// Method and type names come from the trace: escape what a
		// terminal would obey, as every other command does.
		if !strings.HasPrefix(f.ContentType, "text/") && f.ContentType != "application/json" {
			return "", usageErrorf("--format %s is binary: give -o FILE, or pipe the output (standard output is a terminal)", f.Name)
		}
		esc = &termsafe.LineWriter{W: w, JSON: f.ContentType == "application/json"}
		w = esc
	}
	if out != "-" {
		if file, err = safefile.Create(out, safefile.Options{Overwrite: force}); err != nil {
			return "", ioError(fmt.Errorf("create %s: %w", out, unwrapPath(err)))
		}
		w = file
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	err = f.Write(bw, wp)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && esc != nil {
		err = esc.Flush()
	}
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(out)
			return "", ioError(fmt.Errorf("write %s: %w; the partial file was removed", out, unwrapPath(err)))
		}
	}
	if err != nil {
		return "", ioError(fmt.Errorf("write the output: %w", unwrapPath(err)))
	}
	for _, n := range p.NotesFor(m.Name) {
		if n != p.CapNote() { // readProfile warned
			fmt.Fprintf(e.stderr, "clrdiag: note: %s\n", n)
		}
	}
	return fmt.Sprintf("wrote %s: %s", out, p.WeightedSummary(wp, m, f.Name == "pprof")), readErr
}

func newTraceConvertCmd(e *env) *cobra.Command {
	var (
		format string
		out    string
		pf     profileFlags
		force  bool
	)
	var formats strings.Builder
	for _, f := range weighted.Formats() {
		fmt.Fprintf(&formats, "  %-11s %s\n", f.Name, f.Viewers)
	}
	cmd := &cobra.Command{
		Use:   "convert FILE",
		Short: "Convert the CPU samples (or allocations, lock waits, exceptions) of a trace to " + strings.Join(weighted.FormatNames(), ", "),
		Long: "Convert the SampleProfiler samples of a nettrace file (\"-\" for standard input) into a\n" +
			"profile that other tools open, with stacks symbolised from the trace's method events:\n" +
			formats.String() +
			"--sample picks what the profile weighs:\n" + sampleHelp() +
			"wall is the default (the pprof file of wall or cpu has both). alloc, contention and\n" +
			"exceptions weigh the runtime's events on their stacks; the allocated or thrown type is\n" +
			"the leaf frame. chromium draws time: it takes wall, cpu and contention.\n" +
			"The output goes to FILE with the format's suffix (and .alloc, .contention or .exceptions\n" +
			"before it for those), or to -o (\"-\" for standard output).\n" +
			"A trace without the events of the --sample is an error that says how to collect them\n" +
			"(CPU samples: --profile dotnet-sampled-thread-time; allocations: --profile gc-verbose;\n" +
			"lock waits: --clrevents contention).",
		Example: "  clrdiag trace convert app.nettrace --format pprof\n" +
			"  clrdiag trace convert app.nettrace --sample alloc --format pprof   # go tool pprof -sample_index=alloc_space\n" +
			"  clrdiag trace convert app.nettrace --sample contention --format chromium",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := lookupFormat(format)
			if err != nil {
				return err
			}
			in := args[0]
			measure, err := pf.measure()
			if err != nil {
				return err
			}
			def := "-"
			if in != "-" {
				def = convertedName(in, f)
				if measure != "" && measure != profile.MeasureWall && measure != profile.MeasureCPU {
					// app.alloc.pb.gz beside the CPU profile's app.pb.gz.
					def = convertedName(in, weighted.Format{Suffix: "." + measure + f.Suffix})
				}
			}
			switch {
			case out == "":
				out = def
			case out != "-" && isDir(out):
				// -o DIR: the default name, in DIR.
				base := filepath.Base(def)
				if def == "-" {
					base = "trace" + f.Suffix
				}
				out = filepath.Join(out, base)
			}
			if out != "-" {
				if _, err := planOutput(out, force); err != nil {
					return err
				}
			}
			summary, err := convertTrace(e, in, out, f, &pf, force)
			if summary != "" && out != "-" {
				fmt.Fprintln(e.stderr, summary)
			}
			return err
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", weighted.FormatNames()[0], strings.Join(weighted.FormatNames(), ", "))
	cmd.Flags().StringVarP(&out, "output", "o", "", "output file (\"-\" for standard output; default: FILE with the format's suffix)")
	addForceFlag(cmd, &force)
	pf.register(cmd)
	return cmd
}
