package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
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

// convertFormats maps --format values to the default output suffix.
var convertFormats = map[string]string{
	"speedscope": ".speedscope.json",
	"chromium":   ".chromium.json",
	"pprof":      ".pb.gz",
	"folded":     ".folded",
}

type profileFlags struct {
	threads     []uint
	managedOnly bool
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
}

// readProfile builds a profile from FILE ("-" reads standard input). A
// damaged or truncated trace still gives the profile of what was read, with
// a warning.
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
	p, err := profile.Read(r, cfg)
	var fe *nettrace.FormatError
	switch {
	case err == nil:
	case p != nil && errors.As(err, &fe):
		fmt.Fprintf(e.stderr, "clrdiag: warning: %s: %v; using the events before it\n", name, err)
	default:
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if p.DecodeErrors > 0 {
		fmt.Fprintf(e.stderr, "clrdiag: warning: %d runtime events did not decode (first: %v)\n", p.DecodeErrors, p.FirstDecodeError)
	}
	return p, nil
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

// convertedName is the default output of converting the trace in to format:
// in without its .nettrace suffix, plus the format's suffix.
func convertedName(in, format string) string {
	return strings.TrimSuffix(strings.TrimSuffix(in, ".nettrace"), ".netperf") + convertFormats[format]
}

// convertTrace converts the samples of the trace in ("-" for standard input)
// to format (a convertFormats key), written to out ("-" for standard
// output), and returns a one-line summary of what it wrote.
func convertTrace(e *env, in, out, format string, pf *profileFlags, force bool) (string, error) {
	if _, ok := convertFormats[format]; !ok {
		return "", usageErrorf("unknown --format %q: use speedscope, chromium, pprof or folded", format)
	}
	if err := checkOutput(out, force); err != nil {
		return "", err
	}
	p, err := readProfile(e, in, pf.config(format == "chromium" || format == "speedscope"))
	if err != nil {
		return "", err
	}
	if p.TimelineTruncated {
		fmt.Fprintln(e.stderr, "clrdiag: warning: timeline too long; later samples are aggregated only")
	}
	var w io.Writer = e.stdout
	var f *os.File
	if out != "-" {
		if f, err = safefile.Create(out, safefile.Options{Overwrite: force}); err != nil {
			return "", err
		}
		w = f
	}
	switch format {
	case "speedscope":
		err = profile.WriteSpeedscope(w, p, in)
	case "chromium":
		err = profile.WriteChromium(w, p)
	case "pprof":
		err = profile.WritePprof(w, p)
	case "folded":
		err = profile.WriteFolded(w, p)
	}
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", out, err)
	}
	var samples int64
	for _, t := range p.Threads {
		samples += t.Managed + t.External
	}
	return fmt.Sprintf("wrote %s: %d samples on %d threads, period %s; %s",
		out, samples, len(p.Threads), p.Period, symbolSummary(p)), nil
}

func newTraceConvertCmd(e *env) *cobra.Command {
	var (
		format string
		out    string
		pf     profileFlags
		force  bool
	)
	cmd := &cobra.Command{
		Use:   "convert FILE",
		Short: "Convert the CPU samples of a trace to speedscope, Chromium, pprof or folded stacks",
		Long: "Convert the SampleProfiler samples of a nettrace file (\"-\" for standard input) into a\n" +
			"profile that other tools open, with stacks symbolised from the trace's method events:\n" +
			"  speedscope  https://www.speedscope.app (one sampled profile per thread, in time order)\n" +
			"  chromium    chrome://tracing or https://ui.perfetto.dev (B/E events per thread)\n" +
			"  pprof       go tool pprof (gzipped protobuf, values in nanoseconds)\n" +
			"  folded      flamegraph.pl / inferno (root;...;leaf nanoseconds)\n" +
			"The output goes to FILE with the format's suffix, or to -o (\"-\" for standard output).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, ok := convertFormats[format]; !ok {
				return usageErrorf("unknown --format %q: use speedscope, chromium, pprof or folded", format)
			}
			in := args[0]
			if out == "" {
				out = "-"
				if in != "-" {
					out = convertedName(in, format)
				}
			}
			summary, err := convertTrace(e, in, out, format, &pf, force)
			if err != nil {
				return err
			}
			if out != "-" {
				fmt.Fprintln(e.stderr, summary)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "speedscope", "speedscope, chromium, pprof or folded")
	cmd.Flags().StringVarP(&out, "output", "o", "", "output file (\"-\" for standard output; default: FILE with the format's suffix)")
	addForceFlag(cmd, &force)
	pf.register(cmd)
	return cmd
}
