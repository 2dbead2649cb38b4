package ipctest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipc"
)

// Runtime is the runtime version a Server imitates; it decides which
// commands exist. The zero value means NET8.
type Runtime int

// Runtime profiles, valued major*10+minor.
const (
	NET3_1 Runtime = 31
	NET5   Runtime = 50
	NET6   Runtime = 60
	NET7   Runtime = 70
	NET8   Runtime = 80
	NET9   Runtime = 90
	NET10  Runtime = 100
	NET11  Runtime = 110
)

// Runtimes lists the runtime profiles, oldest first. A command of the ipc
// table newer than the last is an error of the table (TestEveryCommandHasARuntime):
// add its runtime here first.
func Runtimes() []Runtime { return []Runtime{NET3_1, NET5, NET6, NET7, NET8, NET9, NET10, NET11} }

func (r Runtime) String() string {
	if r == NET3_1 {
		return ".NET Core 3.1"
	}
	return fmt.Sprintf(".NET %d", int(r)/10)
}

// Supports reports whether runtime r knows a command.
func (r Runtime) Supports(set, id uint8) bool {
	if r == 0 {
		r = NET8
	}
	if r == NET3_1 && set == ipc.SetProfiler {
		return true // 3.1 ignores the id in the profiler set: every id attaches
	}
	c, ok := ipc.LookupCommand(set, id)
	return ok && int(r) >= c.Major*10+c.Minor
}

// Fault is a misbehaviour injected into the reply to a command.
type Fault int

// Faults.
const (
	// FaultNone answers normally.
	FaultNone Fault = iota
	// FaultCloseEarly reads the request and closes without answering.
	FaultCloseEarly
	// FaultShortReply sends the reply header and half of the payload, then
	// closes.
	FaultShortReply
	// FaultNeverAnswer reads the request and then waits, holding the
	// connection open, until the client or the server closes it.
	FaultNeverAnswer
	// FaultOversizeReply sends a reply whose lengths exceed what follows:
	// ProcessEnvironment announces a 4 GiB block, ProcessInfo* a string of
	// 2^31-1 code units, other commands a header claiming 65535 bytes.
	FaultOversizeReply
	// FaultError answers with an Error reply carrying E_FAIL, as a runtime
	// that refuses the request.
	FaultError
	// FaultDelay waits Config.Delay (or until the client or Close ends the
	// connection) and then answers as it would have at once: a runtime
	// that answers slowly.
	FaultDelay
)

// Received is one request the server read.
type Received struct {
	Header ipc.Header
	// Request is the decoded payload (*ipc.RawRequest for unknown commands,
	// nil for a bad magic).
	Request ipc.Request
	// Err is the decoding error, if the payload was malformed.
	Err error
	// Reverse is true for a command served on a reverse connection.
	Reverse bool
}

// TracingSession is handed to Config.Tracing for every CollectTracing*.
type TracingSession struct {
	ID      uint64
	Request *ipc.CollectTracingRequest
	// Stream is the client's connection, after the OK reply: write the
	// nettrace bytes here.
	Stream io.Writer
	// Stopped is closed when StopTracing names this session or the server
	// closes. Finish writing (rundown) and return then.
	Stopped <-chan struct{}
}

// Config describes the imitated runtime. The zero value is a running .NET 8
// process with the test's own pid.
type Config struct {
	Runtime Runtime
	// PID is used in the socket name and ProcessInfo; 0 means os.Getpid().
	PID int
	// Key is the socket name's disambiguation key (the process start time
	// on Linux); 0 means the current Unix time in milliseconds.
	Key uint64
	// Dir is where the socket is created; "" means a new temporary
	// directory removed by Close.
	Dir string
	// ProcessInfo overrides reported fields; zero fields get defaults
	// (PID, a random cookie, "/usr/bin/dotnet app.dll", "Linux", "x64",
	// "app", a version matching Runtime, "linux-x64").
	ProcessInfo ipc.ProcessInfo
	// Environment is the initial environment ("NAME=value").
	Environment []string
	// Suspended imitates a runtime paused at startup by a suspending port.
	Suspended bool
	// DumpHRESULT, when non-zero, fails every dump with that HRESULT;
	// DumpMessage is the text GenerateCoreDump3 adds.
	DumpHRESULT uint32
	DumpMessage string
	// DumpContent, when non-nil, is written at the path of each dump that
	// succeeds (mode 0644, as createdump leaves it); a path that cannot be
	// written fails with E_FAIL, as the runtime does.
	DumpContent []byte
	// ProfilerHRESULT, when non-zero, fails AttachProfiler and
	// StartupProfiler with that HRESULT.
	ProfilerHRESULT uint32
	// Fault, when set, picks a misbehaviour for each request.
	Fault func(set, id uint8) Fault
	// Delay is how long FaultDelay waits before answering.
	Delay time.Duration
	// Tracing streams a session's bytes. nil writes nothing and waits for
	// StopTracing. The server closes the stream when it returns.
	Tracing func(ctx context.Context, s *TracingSession) error
}

// Server is a fake .NET diagnostic server on a real Unix socket.
type Server struct {
	// Path is the socket's path, named dotnet-diagnostic-{pid}-{key}-socket.
	Path string
	// Dir is the socket's directory.
	Dir string

	cfg     Config
	ln      net.Listener
	ownDir  bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	state   state
	closing bool
}

// state is the imitated runtime's mutable state, guarded by Server.mu.
type state struct {
	info        ipc.ProcessInfo
	env         []string
	suspended   bool
	profiler    bool
	startupProf *ipc.StartupProfilerRequest
	hooks       []string
	perfMap     ipc.PerfMapType
	dumps       []ipc.GenerateCoreDumpRequest
	received    []Received
	nextSession uint64
	sessions    map[uint64]chan struct{}
}

// NewServer starts listening. Close it when done.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Runtime == 0 {
		cfg.Runtime = NET8
	}
	if cfg.PID == 0 {
		cfg.PID = os.Getpid()
	}
	if cfg.Key == 0 {
		cfg.Key = uint64(time.Now().UnixMilli())
	}
	s := &Server{cfg: cfg, Dir: cfg.Dir, conns: map[net.Conn]struct{}{}}
	if s.Dir == "" {
		d, err := os.MkdirTemp("", "ipct")
		if err != nil {
			return nil, fmt.Errorf("ipctest: creating a socket directory: %w", err)
		}
		s.Dir, s.ownDir = d, true
	}
	s.Path = filepath.Join(s.Dir, fmt.Sprintf("dotnet-diagnostic-%d-%d-socket", cfg.PID, cfg.Key))
	ln, err := net.Listen("unix", s.Path)
	if err != nil {
		if s.ownDir {
			os.RemoveAll(s.Dir)
		}
		return nil, fmt.Errorf("ipctest: listening on %s (socket paths are limited to about 104-108 bytes; choose a shorter Config.Dir): %w", s.Path, err)
	}
	s.ln = ln
	s.state = newState(cfg)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

func newState(cfg Config) state {
	info := cfg.ProcessInfo
	if info.PID == 0 {
		info.PID = uint64(cfg.PID)
	}
	if info.RuntimeCookie.IsZero() && cfg.Runtime != NET3_1 {
		_, _ = rand.Read(info.RuntimeCookie[:])
	}
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&info.CommandLine, "/usr/bin/dotnet app.dll")
	def(&info.OS, "Linux")
	def(&info.Arch, "x64")
	def(&info.ManagedEntrypointAssemblyName, "app")
	ver := strconv.Itoa(int(cfg.Runtime)/10) + ".0.0"
	if cfg.Runtime == NET3_1 {
		ver = "3.1.2"
	}
	def(&info.ClrProductVersion, ver)
	def(&info.RuntimeIdentifier, "linux-x64")
	info.PayloadVersion = 1
	return state{
		info:        info,
		env:         append([]string(nil), cfg.Environment...),
		suspended:   cfg.Suspended,
		nextSession: 0x7f0000001000,
		sessions:    map[uint64]chan struct{}{},
	}
}

// Dial connects to the server; it makes *Server a diag.Dialer.
func (s *Server) Dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", s.Path)
}

// Close stops the server, ends every connection and session, and removes
// the socket (and the directory if the server created it).
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	for c := range s.conns {
		c.Close()
	}
	for id, ch := range s.state.sessions {
		close(ch)
		delete(s.state.sessions, id)
	}
	s.mu.Unlock()
	s.cancel()
	err := s.ln.Close()
	s.wg.Wait()
	os.Remove(s.Path)
	if s.ownDir {
		os.RemoveAll(s.Dir)
	}
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Requests returns a copy of the log of requests received.
func (s *Server) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.state.received...)
}

// CountRequests counts the requests of type T the server received, such
// as CountRequests[*ipc.StopTracingRequest](srv).
func CountRequests[T any](s *Server) int {
	n := 0
	for _, r := range s.Requests() {
		if _, ok := r.Request.(T); ok {
			n++
		}
	}
	return n
}

// CountCommand counts the requests the server received with command set
// and id, such as (ipc.SetProcess, ipc.CmdResumeRuntime): for commands
// that share a request type (ipc.EmptyRequest), where CountRequests
// cannot tell them apart.
func (s *Server) CountCommand(set, id uint8) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Header.CommandSet == set && r.Header.CommandID == id {
			n++
		}
	}
	return n
}

// Environment returns the imitated process's current environment.
func (s *Server) Environment() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.state.env...)
}

// Suspended reports whether the imitated runtime is still paused at startup.
func (s *Server) Suspended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.suspended
}

// ProfilerAttached reports whether an AttachProfiler succeeded (a second
// attach then fails with PROFILER_ALREADY_ACTIVE until DetachProfiler).
func (s *Server) ProfilerAttached() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.profiler
}

// DetachProfiler imitates the attached profiler having detached.
func (s *Server) DetachProfiler() {
	s.mu.Lock()
	s.state.profiler = false
	s.mu.Unlock()
}

// StartupHooks returns the paths given to ApplyStartupHook.
func (s *Server) StartupHooks() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.state.hooks...)
}

// PerfMap returns the perf map type last enabled (PerfMapDisabled after
// DisablePerfMap).
func (s *Server) PerfMap() ipc.PerfMapType {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.perfMap
}

// Dumps returns the dump requests received.
func (s *Server) Dumps() []ipc.GenerateCoreDumpRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ipc.GenerateCoreDumpRequest(nil), s.state.dumps...)
}

// Info returns the ProcessInfo the server reports (all fields set).
func (s *Server) Info() ipc.ProcessInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.info
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		if !s.track(c) {
			c.Close()
			return
		}
		go func() {
			defer s.untrack(c)
			if session := s.serve(c, false); session != nil {
				session()
			}
		}()
	}
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1) // Done in untrack
	return true
}

func (s *Server) untrack(c net.Conn) {
	c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// SocketPath returns a path for a Unix domain socket in a new ShortDir.
func SocketPath(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(ShortDir(tb), "s.sock")
}

// ShortDir returns a new temporary directory that is removed when the
// test ends. Unlike t.TempDir, whose paths grow with the test's name, it
// leaves room for socket names under the 107 bytes AF_UNIX allows.
func ShortDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "ipc")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
