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

	"github.com/clrdiag/clrdiag/internal/safefile"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/profile"
)

func init() {
	registerTrace(newTraceConvertCmd)
	registerTrace(newTraceReportCmd)
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
	cmd.Flags().StringVar(&f.sample, "sample", "", "what to weigh: wall (every sample: thread time, running or waiting) or cpu "+
		"(Managed samples only: running managed code); default wall, cpu with --managed-only")
}

// measure checks --sample.
func (f *profileFlags) measure() (string, error) {
	m := strings.ToLower(f.sample)
	if m == "" {
		return "", nil
	}
	for _, ok := range profile.Measures() {
		if m == ok {
			return m, nil
		}
	}
	return "", usageErrorf("unknown --sample %q: use %s", f.sample, strings.Join(profile.Measures(), " or "))
}

// readProfile builds a profile from FILE ("-" reads standard input). A
// damaged or truncated trace gives the profile of what was read together
// with an *ExitError (exitDamaged) that says so: the caller uses the
// profile, then returns the error.
func readProfile(e *env, name string, cfg profile.Config) (*profile.Profile, error) {
	var r io.Reader = e.stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	p, err := profile.Read(bufio.NewReaderSize(interruptible(e.ctx, r), 1<<20), cfg)
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
	return p, err
}

// symbolSummary says how many sample frames resolved, and why not.
func symbolSummary(p *profile.Profile) string {
	s := p.Symbols
	if s.SampleFrames == 0 {
		return "no sample frames"
	}
	msg := fmt.Sprintf("%d of %d sample frames resolved (%.1f%%)", s.ResolvedSampleFrames, s.SampleFrames,
		100*float64(s.ResolvedSampleFrames)/float64(s.SampleFrames))
	if !s.Rundown && s.UnresolvedSampleFrames() > 0 {
		msg += "; the trace has no rundown, so methods jitted before the session started stay addresses"
	}
	return msg
}

// convertedName is the default output of converting the trace in to f: in
// without its .nettrace suffix, plus the format's suffix.
func convertedName(in string, f profile.Format) string {
	return strings.TrimSuffix(strings.TrimSuffix(in, ".nettrace"), ".netperf") + f.Suffix
}

// lookupFormat is profile.LookupFormat as a usage error.
func lookupFormat(name string) (profile.Format, error) {
	f, err := profile.LookupFormat(name)
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
func convertTrace(e *env, in, out string, f profile.Format, pf *profileFlags, force bool) (string, error) {
	measure, err := pf.measure()
	if err != nil {
		return "", err
	}
	if err := checkOutput(out, force); err != nil {
		return "", err
	}
	p, readErr := readProfile(e, in, pf.config(f.Timeline))
	if p == nil {
		return "", readErr
	}
	var samples int64
	for _, t := range p.Threads {
		samples += t.Managed + t.External
	}
	if samples == 0 {
		if len(pf.threads) > 0 {
			return "", fmt.Errorf("%s: no samples of thread %v: nothing to convert (clrdiag trace report %s lists the sampled threads)", in, pf.threads, in)
		}
		if readErr != nil {
			return "", readErr
		}
		return "", fmt.Errorf("%s: nothing to convert: %s", in, profile.NoSamplesAdvice)
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
	if out != "-" {
		if file, err = safefile.Create(out, safefile.Options{Overwrite: force}); err != nil {
			return "", err
		}
		w = file
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	err = f.Write(bw, wp)
	if err == nil {
		err = bw.Flush()
	}
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", out, err)
	}
	for _, n := range p.Notes() {
		fmt.Fprintf(e.stderr, "clrdiag: note: %s\n", n)
	}
	busiest := ""
	if wp.Active >= 0 && len(wp.Groups) > 1 {
		busiest = fmt.Sprintf(" (busiest: %s)", strings.ToLower(wp.Groups[wp.Active].Name))
	}
	summary := fmt.Sprintf("wrote %s: %d samples on %d threads%s, weighed by %s time, period %s; %s",
		out, samples, len(p.Threads), busiest, wp.Types[wp.Default].Type, p.Period, symbolSummary(p))
	return summary, readErr
}

func newTraceConvertCmd(e *env) *cobra.Command {
	var (
		format string
		out    string
		pf     profileFlags
		force  bool
	)
	var formats strings.Builder
	for _, f := range profile.Formats() {
		fmt.Fprintf(&formats, "  %-11s %s\n", f.Name, f.Viewers)
	}
	cmd := &cobra.Command{
		Use:   "convert FILE",
		Short: "Convert the CPU samples of a trace to " + strings.Join(profile.FormatNames(), ", "),
		Long: "Convert the SampleProfiler samples of a nettrace file (\"-\" for standard input) into a\n" +
			"profile that other tools open, with stacks symbolised from the trace's method events:\n" +
			formats.String() +
			"--sample wall (the default) weighs every sample: thread time, running or waiting;\n" +
			"--sample cpu weighs Managed samples only (the pprof file always has both).\n" +
			"The output goes to FILE with the format's suffix, or to -o (\"-\" for standard output).\n" +
			"A trace without CPU samples is an error: collect with --profile dotnet-sampled-thread-time.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := lookupFormat(format)
			if err != nil {
				return err
			}
			in := args[0]
			if out == "" {
				out = "-"
				if in != "-" {
					out = convertedName(in, f)
				}
			}
			summary, err := convertTrace(e, in, out, f, &pf, force)
			if summary != "" && out != "-" {
				fmt.Fprintln(e.stderr, summary)
			}
			return err
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", profile.FormatNames()[0], strings.Join(profile.FormatNames(), ", "))
	cmd.Flags().StringVarP(&out, "output", "o", "", "output file (\"-\" for standard output; default: FILE with the format's suffix)")
	addForceFlag(cmd, &force)
	pf.register(cmd)
	return cmd
}
