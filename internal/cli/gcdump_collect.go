package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/internal/safefile"
)

func init() { registerGCDump("collect", newGCDumpCollectCmd) }

func newGCDumpCollectCmd(e *env) *cobra.Command {
	var output, timeout, tracePath, buffering string
	var noFlush, force bool
	tf := e.sessionTargetFlags(&force)
	tf.ownTimeout = true // -t bounds the heap walk
	cmd := &cobra.Command{
		Use:   "collect",
		Short: "Take a heap snapshot of a running process into a .gcdump file",
		Long: "Take a heap snapshot as dotnet-gcdump collect does: an EventPipe session with the GC\n" +
			"heap-dump keywords makes the runtime run a blocking gen 2 collection and report every live\n" +
			"object, its type, size and references, and the roots. The process is paused for the\n" +
			"collection (about a second per million objects). The file opens in PerfView, Visual\n" +
			"Studio and dotnet-gcdump report, and in 'clrdiag gcdump report|paths|diff|convert'.\n" +
			"Progress goes to stderr. Needs .NET Core 3.0 or later.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := parseGCDumpTimeout(timeout)
			if err != nil {
				return err
			}
			mode, err := gcdump.ParseBuffering(buffering)
			if err != nil {
				return usageError(fmt.Errorf("--buffering: %w", err))
			}
			ctx := cmd.Context()
			path := output
			if path != "" && path != "-" && !isDir(path) && !strings.HasSuffix(path, ".gcdump") {
				path += ".gcdump"
			}
			// Check the output before the target is paused.
			out, err := planOutput(path, force)
			if err != nil {
				return err
			}
			tf.timeout = d // also bounds each request: starting the session, stopping it
			cfg := gcdump.CollectConfig{Timeout: d, NoFlush: noFlush, Buffering: mode}
			if tracePath != "" {
				traceFile, err := safefile.Create(tracePath, safefile.Options{Overwrite: force, Private: true})
				if err != nil {
					return err
				}
				defer traceFile.Close()
				cfg.Trace = traceFile
			}
			start := time.Now()
			g, err := collectHeap(ctx, e, tf, cfg)
			if err != nil {
				return err
			}
			// collectHeap looked the process name up once, for the graph.
			if path, err = out.name(defaultGCDumpName(g.Info.ProcessName)); err != nil {
				return err
			}
			if path != "-" {
				if abs, err := filepath.Abs(path); err == nil {
					path = abs
				}
			}
			n, err := writeOutput(e, path, true, force, func(w io.Writer) error { return gcdump.Write(w, g) })
			if err != nil {
				return err
			}
			if path != "-" {
				fmt.Fprintf(e.stderr, "Wrote %s: %s objects, %s bytes of heap (%s bytes of file) in %v.\n", path,
					groupInt(int64(countObjects(g))), groupInt(int64(g.TotalSize())), groupInt(n), time.Since(start).Round(time.Millisecond))
			}
			return nil
		},
	}
	tf.register(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&output, "output", "o", "", "output file (default <name>_<yyyyMMdd>_<HHmmss>.gcdump; - for standard output)")
	fl.StringVarP(&timeout, "timeout", "t", "30s", "give up when the heap walk takes longer (a Go duration, or seconds as dotnet-gcdump)")
	fl.StringVar(&tracePath, "trace", "", "also save the session's raw events to this .nettrace file")
	fl.StringVar(&buffering, "buffering", "auto", "the session's buffers when full: block (the runtime waits; .NET 11+, a warning on older runtimes), drop (events are lost and the snapshot refused), or auto (block where the runtime has it)")
	cmd.Flags().BoolVar(&force, "force", false, forceSessionUsage)
	fl.BoolVar(&noFlush, "no-flush", false, "skip the short session that makes the runtime name every type again")
	_ = fl.MarkHidden("no-flush")
	return cmd
}

// defaultGCDumpName is <name>_<yyyyMMdd>_<HHmmss>.gcdump, name being the
// target's process name.
func defaultGCDumpName(name string) string {
	if name == "" {
		name = "heap"
	}
	return fmt.Sprintf("%s_%s.gcdump", safeName(name), time.Now().Format("20060102_150405"))
}

func countObjects(g *gcdump.Graph) int {
	n := 0
	for v := range g.NumNodes() {
		if g.IsObject(gcdump.NodeID(v)) {
			n++
		}
	}
	return n
}

// groupInt formats n with thousands separators.
func groupInt(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + groupInt(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
