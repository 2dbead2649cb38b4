package stacks

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/profile"
)

// Snapshot is the managed stack of every thread at one moment.
type Snapshot struct {
	ProcessID int      `json:"process_id"`
	Threads   []Thread `json:"threads"`
	// NamesNote says why threads have no names, when none has one.
	NamesNote string `json:"thread_names_note,omitempty"`
	// Unresolved counts frames no method covered.
	Unresolved int `json:"unresolved_frames"`
	// Rundown is true when the rundown (method names) arrived.
	Rundown bool `json:"rundown"`
}

// Thread is one thread's stack, leaf first.
type Thread struct {
	// ID is the OS thread id.
	ID   uint64 `json:"id"`
	Name string `json:"name,omitempty"`
	// State is "managed" when the sample found the thread running managed
	// code, "external" when it was blocked, waiting or in native code.
	State  string  `json:"state"`
	Frames []Frame `json:"frames"`
}

// Frame is one stack frame.
type Frame struct {
	// Method is the method's full name, or the address when unresolved.
	Method    string `json:"method"`
	Module    string `json:"module,omitempty"`
	Signature string `json:"signature,omitempty"`
	Resolved  bool   `json:"resolved"`
	// Address is the instruction pointer in hexadecimal ("0x...").
	Address string `json:"address"`
}

// Thread states.
const (
	StateManaged  = "managed"
	StateExternal = "external"
)

// FromProfile takes the first sample of every thread of p, in order of
// appearance. pid, when positive, is the target's process id in this
// machine's /proc: on Linux the OS thread names are read from there, and it
// is the snapshot's ProcessID when the trace has none.
func FromProfile(p *profile.Profile, pid int) *Snapshot {
	snap := &Snapshot{ProcessID: p.ProcessID, Rundown: p.Symbols.Rundown, Threads: []Thread{}}
	if snap.ProcessID == 0 {
		snap.ProcessID = pid
	}
	ids := make([]uint64, len(p.Threads))
	for i, th := range p.Threads {
		ids[i] = th.ID
	}
	names, why := osThreadNames(pid, ids)
	for _, th := range p.Threads {
		ts := Thread{ID: th.ID, Name: names[th.ID], State: StateExternal, Frames: []Frame{}}
		if th.FirstKind == clrevents.SampleManaged {
			ts.State = StateManaged
		}
		if th.FirstStack >= 0 && th.FirstStack < len(p.Stacks) {
			for _, fi := range p.Stacks[th.FirstStack].Frames {
				fr := p.Frames[fi]
				ts.Frames = append(ts.Frames, Frame{Method: fr.Name, Module: fr.Module, Signature: fr.Signature,
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

// WriteText writes the snapshot as dotnet-stack prints it: a block per
// thread, frames leaf first as Module!Method. NamesNote is not written.
func (s *Snapshot) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for i, th := range s.Threads {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		if th.Name != "" {
			fmt.Fprintf(bw, "Thread (0x%X) %s:\n", th.ID, termsafe.String(th.Name))
		} else {
			fmt.Fprintf(bw, "Thread (0x%X):\n", th.ID)
		}
		if len(th.Frames) == 0 {
			fmt.Fprintln(bw, "  (no managed frames)")
		}
		for _, f := range th.Frames {
			switch {
			case !f.Resolved:
				fmt.Fprintf(bw, "  %s (unresolved)\n", termsafe.String(f.Method))
			case f.Module != "":
				fmt.Fprintf(bw, "  %s!%s\n", termsafe.String(f.Module), termsafe.String(f.Method))
			default:
				fmt.Fprintf(bw, "  %s\n", termsafe.String(f.Method))
			}
		}
	}
	if s.Unresolved > 0 && !s.Rundown {
		fmt.Fprintln(bw, "\nSome frames stayed addresses: the rundown (method names) did not arrive.")
	}
	return bw.Flush()
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
		return names, "no thread of the target has an OS name of its own (threads keep the process's name unless the runtime or the app names them, as .NET Core 3.1 never does) and EventPipe does not carry managed thread names"
	}
	return names, ""
}
