package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/clrdiag/clrdiag/ipc"
	"github.com/spf13/cobra"
)

func init() {
	register("startup-profiler", newStartupProfilerCmd)
	register("startup-hook", newStartupHookCmd)
	register("perfmap", newPerfMapCmd)
}

// suspendedHint explains the refusals of the startup-time commands: a
// runtime too old for the command (.NET Core 3.1 answers StartupProfiler
// with BAD_ENCODING), and INVALIDARG from a runtime not paused at startup.
func suspendedHint(err error, what, since string) error {
	if errors.Is(err, ipc.ErrBadEncoding) || errors.Is(err, ipc.ErrUnknownCommand) {
		return fmt.Errorf("%s needs %s or later; this runtime does not know the command: %w", what, since, err)
	}
	if errors.Is(err, ipc.ErrInvalidArgument) {
		return fmt.Errorf("%w\n%s only works while the runtime is paused at startup: start the app with DOTNET_DiagnosticPorts=<socket>,suspend (or DOTNET_DefaultDiagnosticPortSuspend=1), run this command, then 'clrdiag resume'", err, what)
	}
	return err
}

// missingInTarget reports whether path definitely does not exist in the
// file system of process pid (/proc/PID/root is its view, which differs in
// a container). Anything short of a definite "not there" (no pid, not
// Linux, /proc not readable) is false.
func missingInTarget(pid int, path string) bool {
	if pid <= 0 || runtime.GOOS != "linux" {
		return false
	}
	_, err := os.Stat(filepath.Join(fmt.Sprintf("/proc/%d/root", pid), path))
	return errors.Is(err, os.ErrNotExist)
}

func newStartupProfilerCmd(e *env) *cobra.Command {
	tf := e.targetFlags()
	var path, clsid string
	cmd := &cobra.Command{
		Use:   "startup-profiler --profiler PATH --clsid GUID",
		Short: "Register a profiler to load when a paused runtime resumes (.NET 6+)",
		Long: "Tell a runtime that is paused at startup to load a CoreCLR profiler when it resumes\n" +
			"(StartupProfiler). Start the app with DOTNET_DiagnosticPorts=<socket>,suspend, run this,\n" +
			"then 'clrdiag resume'. A running runtime accepts it but never loads it: use 'clrdiag attach' there.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !filepath.IsAbs(path) {
				return usageErrorf("--profiler %q: give an absolute path; the target resolves it, not clrdiag", path)
			}
			g, err := ipc.ParseGUID(clsid)
			if err != nil {
				return usageErrorf("--clsid: %w", err)
			}
			ctx := cmd.Context()
			t, err := tf.resolve(ctx)
			if err != nil {
				return err
			}
			defer t.close()
			if missingInTarget(t.PID, path) {
				// The runtime stores the path unchecked and, at resume,
				// logs that it cannot load it and runs without a profiler.
				fmt.Fprintf(e.stderr, "clrdiag: warning: %s does not exist in the file system of process %d; the runtime will start without a profiler\n", path, t.PID)
			}
			if err := t.Client.SetStartupProfiler(ctx, g, path); err != nil {
				return suspendedHint(err, "startup-profiler", ".NET 6")
			}
			if t.Started != nil { // connected to clrdiag's port: t.close resumes it
				fmt.Fprintf(e.stdout, "profiler %s registered; the runtime loads it as it resumes, which clrdiag makes it do as this command ends\n", path)
			} else {
				fmt.Fprintf(e.stdout, "profiler %s registered: a runtime paused at startup loads it when resumed ('clrdiag resume'); a running one never will (attach to it with 'clrdiag attach')\n", path)
			}
			return nil
		},
	}
	tf.register(cmd)
	cmd.Flags().StringVar(&path, "profiler", "", "absolute path of the profiler library (required)")
	cmd.Flags().StringVar(&clsid, "clsid", "", "CLSID of the profiler (required)")
	_ = cmd.MarkFlagRequired("profiler")
	_ = cmd.MarkFlagRequired("clsid")
	return cmd
}

func newStartupHookCmd(e *env) *cobra.Command {
	tf := e.targetFlags()
	cmd := &cobra.Command{
		Use:   "startup-hook PATH",
		Short: "Apply a startup hook assembly to a paused runtime (.NET 8+)",
		Long: "Make a runtime that is paused at startup run a startup hook assembly when it resumes\n" +
			"(ApplyStartupHook). Start the app with DOTNET_DiagnosticPorts=<socket>,suspend, run this,\n" +
			"then 'clrdiag resume'. A running runtime runs the hook at once.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			if !filepath.IsAbs(path) {
				return usageErrorf("%q: give an absolute path; the target resolves it, not clrdiag", path)
			}
			ctx := cmd.Context()
			t, err := tf.resolve(ctx)
			if err != nil {
				return err
			}
			defer t.close()
			if missingInTarget(t.PID, path) {
				// The runtime stores the path unchecked and, at resume, a
				// hook it cannot load ends the program (an unhandled
				// FileNotFoundException before Main).
				return usageErrorf("%s does not exist in the file system of process %d: a runtime resumed with a startup hook it cannot load stops with an unhandled exception, so it was not sent; give the absolute path of the hook assembly as the target sees it", path, t.PID)
			}
			if err := t.Client.ApplyStartupHook(ctx, path); err != nil {
				return suspendedHint(err, "startup-hook", ".NET 8")
			}
			// A running .NET 8+ runtime calls the hook at once; one paused
			// at startup calls it when resumed, before Main.
			if t.Started != nil { // connected to clrdiag's port: t.close resumes it
				fmt.Fprintf(e.stdout, "startup hook %s applied; the runtime runs it as it resumes, which clrdiag makes it do as this command ends\n", path)
			} else {
				fmt.Fprintf(e.stdout, "startup hook %s applied: a runtime paused at startup runs it when resumed ('clrdiag resume'); a running one has just run it\n", path)
			}
			return nil
		},
	}
	tf.register(cmd)
	return cmd
}

var perfMapTypes = map[string]ipc.PerfMapType{
	"all": ipc.PerfMapAll, "jitdump": ipc.PerfMapJitDump, "perfmap": ipc.PerfMapPerfMap,
}

func newPerfMapCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "perfmap enable|disable",
		Short: "Turn the runtime's perf map / jitdump output on or off (.NET 8+)",
		Long: "Make the runtime write /tmp/perf-PID.map and/or jit-PID.dump so that Linux perf can\n" +
			"name jitted frames (EnablePerfMap / DisablePerfMap, .NET 8+).",
	}
	on := e.targetFlags()
	var typ string
	enable := &cobra.Command{
		Use:   "enable",
		Short: "Start writing perf maps",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pt, ok := perfMapTypes[strings.ToLower(typ)]
			if !ok {
				return usageErrorf("--type %q: use all, perfmap or jitdump", typ)
			}
			ctx := cmd.Context()
			t, err := on.resolve(ctx)
			if err != nil {
				return err
			}
			defer t.close()
			if err := t.Client.EnablePerfMap(ctx, pt); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "perf map (%s) enabled in process %d\n", strings.ToLower(typ), t.PID)
			return nil
		},
	}
	on.register(enable)
	enable.Flags().StringVar(&typ, "type", "all", "what to write: all, perfmap or jitdump")
	off := e.targetFlags()
	disable := &cobra.Command{
		Use:   "disable",
		Short: "Stop writing perf maps",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			t, err := off.resolve(ctx)
			if err != nil {
				return err
			}
			defer t.close()
			if err := t.Client.DisablePerfMap(ctx); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "perf map disabled in process %d\n", t.PID)
			return nil
		},
	}
	off.register(disable)
	cmd.AddCommand(enable, disable)
	return cmd
}
