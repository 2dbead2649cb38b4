package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"
	"unicode/utf16"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/internal/procmaps"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/spf13/cobra"
)

func init() { register("attach", newAttachCmd) }

// attachOptions are the flags of 'clrdiag attach'.
type attachOptions struct {
	target      *targetFlags
	profiler    string
	clsid       string
	data        string
	dataFile    string
	gcWait      time.Duration // --attach-timeout: the runtime's AttachTimeout
	waitDetach  bool
	waitTimeout time.Duration
}

const attachLong = `Attach a CoreCLR profiler to a running .NET process (AttachProfiler, .NET Core 3.0+).

The runtime inside the target loads the library with dlopen (LoadLibrary on
Windows), asks its DllGetClassObject for the class --clsid, and calls the
profiler's ICorProfilerCallback3::InitializeForAttach with the client data,
then ProfilerAttachComplete. clrdiag reports success only after both have
returned, and explains every error the runtime answers.

--profiler must be an absolute path as the target sees it: the runtime in
the target resolves nothing against clrdiag's working directory.

--data TEXT or --data-file FILE (- for standard input) is passed to the
profiler byte for byte; its exact length is always sent.

--timeout (60 s) is one deadline for the whole request, as in the other
commands: the runtime answers only once the profiler's InitializeForAttach
has returned, so a slow profiler delays the answer (and blocks every other
diagnostic command to the process meanwhile). When it passes, clrdiag gives
up (exit 4); the profiler may still be initializing in the target.

--attach-timeout is what the runtime itself is given (AttachProfiler's
attachTimeout): it bounds only how long the profiler's SetEventMask may wait
for a concurrent background GC to finish when it enables GC events during
attach; a plain attach never waits for it. It defaults to 30 s, or half of
a shorter --timeout, and must be shorter than --timeout.

--wait-detach then waits until the library has left the target's memory map
(/proc/PID/maps, Linux only): that is, until the profiler has asked the
runtime to detach it (ICorProfilerInfo3::RequestProfilerDetach) and the
runtime has unloaded it, at least 300 ms later. It gives up after
--wait-timeout.

Only one profiler can be loaded in a process at a time. A profiler stays until
it requests detach itself or the process exits; clrdiag cannot remove it.

Exit status: 0 attached (and, with --wait-detach, unloaded); 2 bad
arguments; 3 no such .NET process; 4 the runtime or the profiler refused, or
no answer within --timeout; 1 --wait-detach gave up; 130 interrupted (the
table for every command is in 'clrdiag --help').

A minimal profiler to try this with is in examples/profiler of the clrdiag
sources.`

func newAttachCmd(e *env) *cobra.Command {
	o := &attachOptions{target: e.targetFlags()}
	cmd := &cobra.Command{
		Use:   "attach (-p PID | -n NAME | --diagnostic-port PATH) --profiler PATH --clsid GUID [--data TEXT | --data-file FILE]",
		Short: "Attach a CoreCLR profiler to a running process",
		Long:  attachLong,
		Example: `  clrdiag attach -p 4242 --profiler /opt/prof/libprof.so --clsid 2fb05c3a-1410-4825-9389-c5f72ecddf83
  clrdiag attach -n MyApp --profiler /opt/prof/libprof.so --clsid {2FB05C3A-1410-4825-9389-C5F72ECDDF83} --data-file cfg.bin
  clrdiag attach -p 4242 --profiler /opt/prof/libprof.so --clsid 2fb05c3a-1410-4825-9389-c5f72ecddf83 --data detach --wait-detach`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAttach(cmd.Context(), e, cmd, o)
		},
	}
	o.target.register(cmd) // --timeout: one deadline for the request
	fl := cmd.Flags()
	fl.StringVar(&o.profiler, "profiler", "", "absolute path of the profiler library, as the target process sees it (required)")
	fl.StringVar(&o.clsid, "clsid", "", "CLSID of the profiler class, xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (required)")
	fl.StringVar(&o.data, "data", "", "client data passed to the profiler's InitializeForAttach, as text")
	fl.StringVar(&o.dataFile, "data-file", "", "read the client data from FILE (- for standard input), byte for byte")
	if f := fl.Lookup("timeout"); f != nil {
		_ = f.Value.Set(defaultAttachDeadline.String())
		f.DefValue = defaultAttachDeadline.String()
		f.Usage = "give up when the runtime has not answered within this long (it answers once the profiler's InitializeForAttach has returned)"
	}
	fl.DurationVar(&o.gcWait, "attach-timeout", defaultAttachGCWait, "how long the runtime may wait for a concurrent background GC if the profiler enables GC events (AttachProfiler's attachTimeout; at most half of --timeout by default)")
	fl.BoolVar(&o.waitDetach, "wait-detach", false, "after attaching, wait until the profiler has detached and its library has been unloaded (Linux)")
	fl.DurationVar(&o.waitTimeout, "wait-timeout", time.Minute, "give up --wait-detach after this long")
	return cmd
}

// The defaults of attach's --timeout (the command's deadline) and
// --attach-timeout (the runtime's wait for a background GC, which must fit
// in it).
const (
	defaultAttachDeadline = time.Minute
	defaultAttachGCWait   = 30 * time.Second
)

// attachUsageErr is a bad-arguments error (exitUsage).
func attachUsageErr(format string, args ...any) error {
	return usageErrorf(format, args...)
}

func runAttach(ctx context.Context, e *env, cmd *cobra.Command, o *attachOptions) error {
	if o.profiler == "" {
		return attachUsageErr("--profiler PATH is required: the absolute path of the profiler library")
	}
	if !filepath.IsAbs(o.profiler) {
		hint := ""
		if abs, err := filepath.Abs(o.profiler); err == nil {
			hint = fmt.Sprintf(" (for the file in clrdiag's current directory: --profiler %s)", abs)
		}
		return attachUsageErr("--profiler %q is a relative path: the runtime inside the target loads the library itself and resolves nothing against clrdiag's working directory, so a relative name fails with ERROR_MOD_NOT_FOUND; pass an absolute path%s", o.profiler, hint)
	}
	if o.clsid == "" {
		return attachUsageErr("--clsid GUID is required: the class id the profiler's DllGetClassObject serves (see the profiler's documentation)")
	}
	clsid, err := ipc.ParseGUID(o.clsid)
	if err != nil {
		return attachUsageErr("--clsid: %v", err)
	}
	if cmd.Flags().Changed("data") && cmd.Flags().Changed("data-file") {
		return attachUsageErr("give only one of --data and --data-file")
	}
	if o.target.overall < 0 {
		return attachUsageErr("--timeout %v: give a positive duration", o.target.overall)
	}
	if !cmd.Flags().Changed("attach-timeout") && o.target.overall > 0 && o.gcWait > o.target.overall/2 {
		o.gcWait = o.target.overall / 2
	}
	if o.gcWait < 0 || o.gcWait.Milliseconds() > int64(^uint32(0)) {
		return attachUsageErr("--attach-timeout %v: give a duration between 0 and %v", o.gcWait, time.Duration(^uint32(0))*time.Millisecond)
	}
	if o.target.overall > 0 && o.gcWait >= o.target.overall {
		return attachUsageErr("--attach-timeout %v is not shorter than --timeout %v: clrdiag would give up before the runtime's wait for a background GC ends; shorten --attach-timeout or raise --timeout", o.gcWait, o.target.overall)
	}
	if o.waitDetach && o.waitTimeout <= 0 {
		return attachUsageErr("--wait-timeout %v: give a positive duration", o.waitTimeout)
	}
	if o.waitDetach && runtime.GOOS != "linux" {
		return attachUsageErr("--wait-detach reads /proc/PID/maps and works only on Linux")
	}
	if o.waitDetach && o.target.port != "" {
		return attachUsageErr("--wait-detach needs the process id: select the target with -p or -n, not --diagnostic-port")
	}
	data := []byte(o.data)
	if o.dataFile != "" {
		if data, err = readDataFile(e, o.dataFile); err != nil {
			return err
		}
	}
	// What one message can carry: the payload limit minus the fixed fields
	// (timeout, CLSID, path length, data length) and the UTF-16 path.
	if room := ipc.MaxPayloadSize - 4 - 16 - 4 - 2*(len(utf16.Encode([]rune(o.profiler)))+1) - 4; len(data) > room {
		if len(data) > ipc.MaxPayloadSize {
			return attachUsageErr("client data of more than %d bytes is too large: one AttachProfiler message carries at most %d bytes of it with this path", ipc.MaxPayloadSize, room)
		}
		return attachUsageErr("client data of %d bytes is too large: one AttachProfiler message carries at most %d bytes of it with this path", len(data), room)
	}

	t, err := o.target.resolve(ctx)
	if err != nil {
		return err
	}
	defer t.close()
	if t.PID != 0 && runtime.GOOS == "linux" {
		// /proc/PID/root is the target's view of the file system (it differs
		// inside a container). Only a definite "not there" is worth a warning.
		if _, err := os.Stat(filepath.Join(fmt.Sprintf("/proc/%d/root", t.PID), o.profiler)); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(e.stderr, "clrdiag: warning: %s does not exist in the file system of process %d; the runtime will most likely answer ERROR_MOD_NOT_FOUND\n", o.profiler, t.PID)
		}
	}
	err = t.Client.AttachProfiler(ctx, diag.AttachProfilerRequest{
		Path:          o.profiler,
		CLSID:         clsid,
		ClientData:    data,
		AttachTimeout: o.gcWait,
	})
	who := "the target"
	if t.PID != 0 {
		who = fmt.Sprintf("process %d", t.PID)
	}
	if err != nil {
		if ctx.Err() != nil {
			return &ExitError{Code: exitInterrupted, Err: fmt.Errorf("attach to %s interrupted: %w; the profiler may still be initializing in the target", who, err)}
		}
		advice := explainAttach(err, o.profiler, clsid)
		if isTimeout(err) {
			advice = fmt.Sprintf("No answer within --timeout %v. The runtime answers once the profiler's InitializeForAttach has returned: a slow profiler may still be initializing in the target (its log says), the runtime may be busy with another diagnostic request, or the endpoint is not a .NET runtime. Raise --timeout to wait longer.", o.target.overall)
		}
		return &ExitError{Code: exitRuntime, Err: &diag.AttachError{Path: o.profiler, Target: who, Err: err, Advice: advice}}
	}
	fmt.Fprintf(e.stdout, "Attached profiler %s (CLSID %s) to %s with %d bytes of client data.\n", o.profiler, clsid, who, len(data))
	if !o.waitDetach {
		return nil
	}
	return waitDetached(ctx, e, t.PID, o.profiler, o.waitTimeout)
}

// readDataFile reads the client data from a file or, for "-", standard
// input, reading at most one byte more than any message can carry.
func readDataFile(e *env, name string) ([]byte, error) {
	var r io.Reader = e.stdin
	what := "standard input"
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, usageErrorf("--data-file: %w", err)
		}
		defer f.Close()
		r, what = f, name
	}
	b, err := io.ReadAll(io.LimitReader(r, ipc.MaxPayloadSize+1))
	if err != nil {
		return nil, usageErrorf("--data-file: read %s: %w", what, err)
	}
	return b, nil
}

// explainAttach is diag.AttachAdvice, naming the flags where a flag is
// the fix.
func explainAttach(err error, path string, clsid ipc.GUID) string {
	var se *ipc.ServerError
	if errors.As(err, &se) {
		switch se.HRESULT {
		case ipc.HRClassNotAvailable:
			return fmt.Sprintf("The library loaded, but its DllGetClassObject does not provide the class %s. Check --clsid against the profiler's documentation.", clsid)
		case ipc.HRTimeoutWaitingForConcurrentGC:
			return "The profiler enabled GC events and a background GC did not finish within --attach-timeout. Retry, or give a longer --attach-timeout (and --timeout)."
		}
	}
	return diag.AttachAdvice(err, path, clsid)
}

// waitDetached waits until lib has left process pid
// (procmaps.WaitUnloaded), for at most limit.
func waitDetached(ctx context.Context, e *env, pid int, lib string, limit time.Duration) error {
	took, err := procmaps.WaitUnloaded(ctx, pid, lib, limit)
	switch {
	case err == nil:
		fmt.Fprintf(e.stdout, "The profiler detached: %s left process %d after %v.\n", lib, pid, took.Round(time.Millisecond))
		return nil
	case errors.Is(err, procmaps.ErrNeverMapped):
		return &ExitError{Code: exitFailure, Err: fmt.Errorf("--wait-detach: %s does not appear in /proc/%d/maps, so its unloading cannot be observed (does the target see the file under another path, e.g. in a container?)", lib, pid)}
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return &ExitError{Code: exitInterrupted, Err: fmt.Errorf("--wait-detach interrupted while %s is still loaded in process %d: %w", lib, pid, err)}
	case errors.Is(err, procmaps.ErrStillMapped):
		return &ExitError{Code: exitFailure, Err: fmt.Errorf("--wait-detach: %s is still loaded in process %d after %v: the profiler has not requested detach (ICorProfilerInfo3::RequestProfilerDetach), or the runtime still waits for its code to leave every thread's stack; the profiler stays attached", lib, pid, limit)}
	}
	return &ExitError{Code: exitFailure, Err: fmt.Errorf("--wait-detach: %w", err)}
}
