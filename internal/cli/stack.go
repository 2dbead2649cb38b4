package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/profile"
)

func init() { register(newStackCmd) }

// errNoSamples is returned when a stack session ends without any sample.
var errNoSamples = errors.New("the runtime sent no thread samples")

func newStackCmd(e *env) *cobra.Command {
	tf := e.targetFlags()
	s := &stackRun{e: e, slowNote: 5 * time.Second, attempts: 3}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stack",
		Short: "Print the current managed stack of every thread of a running process",
		Long: "Take a snapshot of the managed stacks of every thread, as dotnet-stack does: a very short\n" +
			"SampleProfiler session (about 10 ms) whose first sample of each thread is printed,\n" +
			"symbolised with the rundown the runtime sends when the session stops. The rundown lists\n" +
			"every loaded method, so in a large application it can take several seconds.\n" +
			"Threads are named when the operating system knows their names (not on .NET Core 3.1).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if s.duration <= 0 {
				return &ExitError{Code: 3, Err: errors.New("--duration must be positive")}
			}
			ctx := cmd.Context()
			t, err := tf.resolve(ctx)
			if err != nil {
				return err
			}
			defer t.close()
			s.t = t
			p, err := s.capture(ctx)
			if err != nil {
				return err
			}
			snap := buildSnapshot(p, t.PID)
			if asJSON {
				return writeJSON(e.stdout, snap)
			}
			snap.writeText(e.stdout)
			if snap.NamesNote != "" {
				fmt.Fprintf(e.stderr, "note: %s\n", snap.NamesNote)
			}
			return nil
		},
	}
	tf.register(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, "write JSON")
	fl.DurationVar(&s.duration, "duration", 10*time.Millisecond, "how long to sample before stopping the session")
	_ = fl.MarkHidden("duration")
	fl.DurationVar(&s.stopTimeout, "stop-timeout", 30*time.Second, "how long to wait for the runtime to acknowledge the stop")
	fl.DurationVar(&s.rundownTimeout, "rundown-timeout", 5*time.Minute, "how long to wait for the rundown (method names) after the stop")
	return cmd
}

// stackRun takes one stack snapshot.
type stackRun struct {
	e              *env
	t              *target
	duration       time.Duration // sampling time before the stop
	slowNote       time.Duration // drain time after which the large-app note is printed
	attempts       int           // sessions to try, each 10 times longer, until one has samples
	stopTimeout    time.Duration
	rundownTimeout time.Duration
}

// stackSessionConfig is the session dotnet-stack runs: the SampleProfiler
// at Informational level, with the default rundown for method names.
func stackSessionConfig() eventpipe.Config {
	return eventpipe.Config{
		Providers: []eventpipe.Provider{{Name: eventpipe.ProviderSampleProfiler, Level: eventpipe.LevelInformational}},
	}
}

// capture samples the threads for s.duration. The runtime's sampler may not
// have run yet when so short a session stops (its thread starts with the
// session), so a session without samples is retried for ten times as long,
// up to s.attempts sessions.
func (s *stackRun) capture(ctx context.Context) (*profile.Profile, error) {
	d := s.duration
	for i := 1; ; i++ {
		p, err := s.session(ctx, d)
		if err == nil || !errors.Is(err, errNoSamples) || i >= s.attempts {
			return p, err
		}
		d *= 10
		fmt.Fprintf(s.e.stderr, "No samples arrived; sampling again for %v.\n", d)
	}
}

// session runs one session into a temporary file, stops it after d, drains
// the rundown and builds the profile of the file.
func (s *stackRun) session(ctx context.Context, d time.Duration) (*profile.Profile, error) {
	sess, err := eventpipe.Start(ctx, s.t.Client, stackSessionConfig())
	if err != nil {
		return nil, &ExitError{Code: 1, Err: fmt.Errorf("start the session: %w", err)}
	}
	defer sess.Close()
	for _, w := range sess.Warnings {
		fmt.Fprintf(s.e.stderr, "warning: %s\n", w)
	}
	f, err := os.CreateTemp("", "clrdiag-stack-*.nettrace")
	if err != nil {
		_ = sess.Close()
		return nil, &ExitError{Code: 2, Err: fmt.Errorf("create the temporary trace file: %w", err)}
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	copyDone := make(chan struct{})
	var copyErr error
	go func() {
		_, copyErr = io.Copy(f, sess)
		close(copyDone)
	}()
	if err := s.t.started(ctx); err != nil {
		fmt.Fprintf(s.e.stderr, "warning: resuming the runtime: %v\n", err)
	}

	// abandon closes the session and waits for the copy to end.
	abandon := func() {
		sess.Close()
		<-copyDone
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		abandon()
		return nil, fmt.Errorf("stack: %w", ctx.Err())
	case <-copyDone:
		return nil, &ExitError{Code: 1, Err: fmt.Errorf("the target ended the session before it was stopped (did it exit?): %v", copyErr)}
	case <-timer.C:
	}

	stopStart := time.Now()
	sctx, cancel := context.WithTimeout(ctx, s.stopTimeout)
	err = sess.Stop(sctx)
	cancel()
	if err != nil {
		abandon()
		return nil, &ExitError{Code: 1, Err: fmt.Errorf("stop the session: %w", err)}
	}
	note := time.NewTimer(max(s.slowNote-time.Since(stopStart), 0))
	defer note.Stop()
	rundown := time.NewTimer(s.rundownTimeout)
	defer rundown.Stop()
	complete := false
drain:
	for {
		select {
		case <-copyDone:
			complete = true
			break drain
		case <-note.C:
			fmt.Fprintf(s.e.stderr, "Waiting for the rundown (method names) for %v: it lists every loaded method, which takes a while in a large application.\n", s.slowNote)
		case <-rundown.C:
			fmt.Fprintf(s.e.stderr, "warning: no end of the rundown after %v; using what arrived (frames may stay addresses). Raise --rundown-timeout for a large application.\n", s.rundownTimeout)
			abandon()
			break drain
		case <-ctx.Done():
			abandon()
			return nil, fmt.Errorf("stack: waiting for the rundown: %w", ctx.Err())
		}
	}
	if complete && copyErr != nil {
		fmt.Fprintf(s.e.stderr, "warning: the session stream ended with: %v\n", copyErr)
	}

	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, &ExitError{Code: 2, Err: fmt.Errorf("read back the temporary trace: %w", err)}
	}
	p, err := profile.Read(bufio.NewReaderSize(f, 1<<20), profile.Config{})
	var fe *nettrace.FormatError
	switch {
	case err == nil:
	case p != nil && errors.As(err, &fe):
		// A cut stream (an abandoned rundown) still has its samples.
		fmt.Fprintf(s.e.stderr, "warning: the session stream is incomplete (%v); using the events before the cut\n", err)
	default:
		return nil, &ExitError{Code: 1, Err: fmt.Errorf("decode the session stream: %w", err)}
	}
	if len(p.Threads) == 0 {
		return nil, &ExitError{Code: 1, Err: fmt.Errorf("%w in %v (a process with no managed threads has no stacks)", errNoSamples, d)}
	}
	return p, nil
}

// stackSnapshot is the output of clrdiag stack.
type stackSnapshot struct {
	ProcessID int           `json:"process_id"`
	Threads   []threadStack `json:"threads"`
	// NamesNote says why threads have no names, when none has one.
	NamesNote string `json:"thread_names_note,omitempty"`
	// Unresolved counts frames no method covered.
	Unresolved int  `json:"unresolved_frames"`
	Rundown    bool `json:"rundown"`
}

type threadStack struct {
	ID   uint64 `json:"id"`
	Name string `json:"name,omitempty"`
	// State is "managed" when the sample found the thread running managed
	// code, "external" when it was blocked, waiting or in native code.
	State  string       `json:"state"`
	Frames []stackFrame `json:"frames"`
}

type stackFrame struct {
	Method    string `json:"method"`
	Module    string `json:"module,omitempty"`
	Signature string `json:"signature,omitempty"`
	Resolved  bool   `json:"resolved"`
	Address   string `json:"address"`
}

// buildSnapshot takes the first sample of every thread of p, with OS
// thread names when the target is a local Linux process.
func buildSnapshot(p *profile.Profile, pid int) *stackSnapshot {
	snap := &stackSnapshot{ProcessID: p.ProcessID, Rundown: p.Symbols.Rundown, Threads: []threadStack{}}
	if snap.ProcessID == 0 {
		snap.ProcessID = pid
	}
	ids := make([]uint64, len(p.Threads))
	for i, th := range p.Threads {
		ids[i] = th.ID
	}
	names, why := osThreadNames(pid, ids)
	for _, th := range p.Threads {
		ts := threadStack{ID: th.ID, Name: names[th.ID], State: "external", Frames: []stackFrame{}}
		if th.FirstKind == clrevents.SampleManaged {
			ts.State = "managed"
		}
		if th.FirstStack >= 0 && th.FirstStack < len(p.Stacks) {
			for _, fi := range p.Stacks[th.FirstStack].Frames {
				fr := p.Frames[fi]
				ts.Frames = append(ts.Frames, stackFrame{Method: fr.Name, Module: fr.Module, Signature: fr.Signature,
					Resolved: fr.Resolved, Address: "0x" + strconv.FormatUint(fr.Address, 16)})
				if !fr.Resolved {
					snap.Unresolved++
				}
			}
		}
		snap.Threads = append(snap.Threads, ts)
	}
	if len(names) == 0 {
		snap.NamesNote = "thread names are not available (" + why + "); threads are shown by OS thread id"
	}
	return snap
}

func (s *stackSnapshot) writeText(w io.Writer) {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	for i, th := range s.Threads {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		if th.Name != "" {
			fmt.Fprintf(bw, "Thread (0x%X) %s:\n", th.ID, th.Name)
		} else {
			fmt.Fprintf(bw, "Thread (0x%X):\n", th.ID)
		}
		if len(th.Frames) == 0 {
			fmt.Fprintln(bw, "  (no managed frames)")
		}
		for _, f := range th.Frames {
			switch {
			case !f.Resolved:
				fmt.Fprintf(bw, "  %s (unresolved)\n", f.Method)
			case f.Module != "":
				fmt.Fprintf(bw, "  %s!%s\n", f.Module, f.Method)
			default:
				fmt.Fprintf(bw, "  %s\n", f.Method)
			}
		}
	}
	if s.Unresolved > 0 && !s.Rundown {
		fmt.Fprintln(bw, "\nSome frames stayed addresses: the rundown (method names) did not arrive.")
	}
}

// osThreadNames reads the names of the target's threads from /proc on
// Linux. A thread that never got a name shows the executable's name, so only
// names that differ from the main thread's count. It returns the names it
// found and, when there are none, why.
func osThreadNames(pid int, ids []uint64) (map[uint64]string, string) {
	names := map[uint64]string{}
	if runtime.GOOS != "linux" {
		return names, "EventPipe does not carry them and this system has no /proc"
	}
	if pid <= 0 {
		return names, "the target's process id is unknown"
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return names, "/proc of the target is not readable"
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok && len(strings.Fields(rest)) > 1 {
			// Its thread ids in the events are those of another namespace.
			return names, "the target runs in another PID namespace"
		}
	}
	comm := func(tid uint64) string {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.FormatUint(tid, 10) + "/comm")
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	main := comm(uint64(pid))
	for _, id := range ids {
		if n := comm(id); n != "" && n != main {
			names[id] = n
		}
	}
	if len(names) == 0 {
		return names, "the runtime did not name its OS threads (.NET Core 3.1 does not) and EventPipe does not carry managed thread names"
	}
	return names, ""
}
