package diag

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clrdiag/clrdiag/ipc"
)

// ProcessInfo is what the runtime reports about itself; Version says which
// ProcessInfo command answered (3, 2 or 1).
type ProcessInfo = ipc.ProcessInfo

// PerfMapType selects EnablePerfMap's output.
type PerfMapType = ipc.PerfMapType

// DumpType is the kind of dump to write.
type DumpType = ipc.DumpType

// DumpRequest describes a dump. The zero Type means ipc.DumpFull, the
// dotnet-dump default.
type DumpRequest struct {
	// Path is where the runtime (createdump) writes the dump. It is
	// interpreted by the target, so give an absolute path valid inside the
	// target's file system.
	Path string
	Type DumpType
	// Diagnostics logs dump generation in the target's output.
	Diagnostics bool
	// VerboseDiagnostics and CrashReport need GenerateCoreDump2 (.NET 6+).
	VerboseDiagnostics bool
	CrashReport        bool
}

// WriteDump asks the runtime to write a dump, trying GenerateCoreDump3
// (whose errors carry the runtime's message), then 2, then 1 when the
// runtime answers UNKNOWN_COMMAND. Version 1 knows only the Diagnostics flag;
// asking an old runtime for more fails with a clear error.
func (c *Client) WriteDump(ctx context.Context, req DumpRequest) error {
	if req.Path == "" {
		return fmt.Errorf("GenerateCoreDump: empty dump path; give an absolute path the target can write: %w", ipc.ErrInvalidArgument)
	}
	r := ipc.GenerateCoreDumpRequest{Path: req.Path, Type: req.Type}
	if r.Type == 0 {
		r.Type = ipc.DumpFull
	}
	if req.Diagnostics {
		r.Flags |= ipc.DumpLoggingEnabled
	}
	if req.VerboseDiagnostics {
		r.Flags |= ipc.DumpVerboseLoggingEnabled
	}
	if req.CrashReport {
		r.Flags |= ipc.DumpCrashReportEnabled
	}
	var err error
	for v := 3; v >= 1; v-- {
		r.Version = v
		if v == 1 && r.Flags&^ipc.DumpLoggingEnabled != 0 {
			return fmt.Errorf("GenerateCoreDump: this runtime only knows version 1 of the dump command (.NET Core 3.x or 5), which cannot do verbose diagnostics or crash reports; drop those options: %w", err)
		}
		p, perr := r.MarshalBinary()
		if perr != nil {
			return perr
		}
		set, id := r.Command()
		err = c.callHR(ctx, set, id, p)
		if errors.Is(err, ipc.ErrUnknownCommand) {
			continue
		}
		return err
	}
	return err
}

// AttachProfilerRequest describes a profiler to attach.
type AttachProfilerRequest struct {
	// Path is the absolute path of the profiler library in the target's
	// file system (a relative path fails with ERROR_MOD_NOT_FOUND).
	Path string
	// CLSID is the class the library's DllGetClassObject serves.
	CLSID ipc.GUID
	// ClientData is passed to InitializeForAttach; its exact length is sent.
	ClientData []byte
	// AttachTimeout is sent in milliseconds, as the protocol spec says and
	// the runtime interprets it (the .NET client sends whole seconds, which
	// the runtime then reads as milliseconds). It is not an overall limit:
	// it only bounds how long the runtime waits for a background GC when the
	// profiler enables GC events during attach. 0 means 30 s.
	AttachTimeout time.Duration
}

// AttachProfiler loads a profiler into the running process. The reply comes
// after the profiler's InitializeForAttach and ProfilerAttachComplete have
// returned, so a slow profiler needs a long enough Config.Timeout or ctx;
// the reply is awaited at least the attach timeout plus 30 s (the runtime
// may spend the attach timeout waiting for a background GC first).
func (c *Client) AttachProfiler(ctx context.Context, req AttachProfilerRequest) error {
	if req.Path == "" {
		return fmt.Errorf("AttachProfiler: empty profiler path; give the absolute path of the library: %w", ipc.ErrInvalidArgument)
	}
	ms, err := attachTimeoutMS(req.AttachTimeout)
	if err != nil {
		return err
	}
	p, err := (&ipc.AttachProfilerRequest{AttachTimeoutMS: ms, CLSID: req.CLSID, Path: req.Path, ClientData: req.ClientData}).MarshalBinary()
	if err != nil {
		return err
	}
	// The runtime itself may wait up to the attach timeout (for a
	// background GC) before it loads the profiler: the reply deadline must
	// outlast it, with room for loading and initializing the profiler.
	cl := c
	if need := time.Duration(ms)*time.Millisecond + attachReplySlack; c.cfg.Timeout > 0 && c.cfg.Timeout < need {
		cc := *c
		cc.cfg.Timeout = need
		cl = &cc
	}
	return cl.callHR(ctx, ipc.SetProfiler, ipc.CmdAttachProfiler, p)
}

// attachReplySlack is added to the runtime's attach timeout to make the
// reply deadline of AttachProfiler when Config.Timeout is shorter.
const attachReplySlack = 30 * time.Second

// SetStartupProfiler registers a profiler to load when a runtime suspended
// at startup resumes (.NET 6+). A running runtime answers
// ipc.ErrInvalidArgument.
func (c *Client) SetStartupProfiler(ctx context.Context, clsid ipc.GUID, path string) error {
	if path == "" {
		return fmt.Errorf("StartupProfiler: empty profiler path; give the absolute path of the library: %w", ipc.ErrInvalidArgument)
	}
	p, _ := (&ipc.StartupProfilerRequest{CLSID: clsid, Path: path}).MarshalBinary()
	return c.callHR(ctx, ipc.SetProfiler, ipc.CmdStartupProfiler, p)
}
