package eventpipe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/clrdiag/clrdiag/ipc"
)

// BufferingMode is how the runtime behaves when a session's buffers are
// full (CollectTracing6, .NET 11).
type BufferingMode uint8

// The buffering modes.
const (
	// Drop discards events when the buffers are full (every runtime).
	Drop BufferingMode = iota
	// Block makes the writing threads wait for room (.NET 11 and later).
	Block
)

// DefaultBufferSizeMB is the circular buffer size used when Config leaves
// it at zero, as dotnet-trace.
const DefaultBufferSizeMB = 256

// Config describes an EventPipe session. The zero value plus providers is
// what dotnet-trace does by default: a 256 MB buffer, stacks, and rundown
// with the default keyword.
type Config struct {
	Providers []Provider
	// BufferSizeMB is the runtime's circular buffer; 0 means 256.
	BufferSizeMB uint32
	// RundownKeyword is the rundown keyword; 0 means DefaultRundownKeyword.
	// A custom keyword needs CollectTracing4 (.NET 9).
	RundownKeyword uint64
	// NoRundown asks for no rundown at the end of the session (then stacks
	// cannot be symbolized unless methods were jitted during the session).
	NoRundown bool
	// DropRundownOnFallback: if the runtime cannot take the custom rundown
	// keyword, drop rundown altogether rather than use the default one.
	DropRundownOnFallback bool
	// NoStackwalk asks the runtime not to collect stacks (.NET 8+).
	NoStackwalk bool
	// Buffering selects Drop (default) or Block (.NET 11+).
	Buffering BufferingMode
}

func (c *Config) rundownKeyword() uint64 {
	if c.NoRundown {
		return 0
	}
	if c.RundownKeyword == 0 {
		return DefaultRundownKeyword
	}
	return c.RundownKeyword
}

func (c *Config) hasFilters() bool {
	for _, p := range c.Providers {
		if p.EventIDs != nil {
			return true
		}
	}
	return false
}

// Version returns the CollectTracing version the configuration needs: the
// lowest command that can express it, as the .NET client chooses.
func (c *Config) Version() int {
	switch {
	case c.Buffering == Block:
		return 6
	case c.hasFilters():
		return 5
	case !c.NoRundown && c.rundownKeyword() != DefaultRundownKeyword:
		return 4
	case c.NoStackwalk:
		return 3
	default:
		return 2
	}
}

// Request builds the CollectTracing request of the configuration.
func (c *Config) Request() (*ipc.CollectTracingRequest, error) {
	if len(c.Providers) == 0 {
		return nil, errors.New("session has no providers; enable at least one")
	}
	buf := c.BufferSizeMB
	if buf == 0 {
		buf = DefaultBufferSizeMB
	}
	req := &ipc.CollectTracingRequest{
		Version:          c.Version(),
		CircularBufferMB: buf,
		Format:           1, // NetTrace
		RequestRundown:   !c.NoRundown,
		RequestStackwalk: !c.NoStackwalk,
		RundownKeyword:   c.rundownKeyword(),
	}
	if c.Buffering == Block {
		req.BufferMode = ipc.BufferBlock
	}
	for _, p := range c.Providers {
		tp := ipc.TracingProvider{Keywords: p.Keywords, Level: uint32(p.Level), Name: p.Name, Args: p.ArgString()}
		if p.EventIDs != nil {
			tp.Filter = &ipc.EventFilter{Enable: !p.EventIDsDeny, EventIDs: p.EventIDs}
			if p.EventIDsDeny && len(p.EventIDs) == 0 {
				tp.Filter = nil // deny nothing = allow all
			}
		}
		req.Providers = append(req.Providers, tp)
	}
	return req, nil
}

// fallback turns c into what an older runtime can take, after it refused
// version v with UNKNOWN_COMMAND. It returns a warning for the user, or
// false when nothing can be given up.
func (c *Config) fallback(v int) (string, bool) {
	switch {
	case v == 6 && c.Buffering == Block:
		c.Buffering = Drop
		return "the runtime does not support Block buffering (needs .NET 11 or later); falling back to Drop: events may be lost when the buffer fills", true
	case v == 5 && c.hasFilters():
		return "", false
	case v == 4 && !c.NoRundown && c.rundownKeyword() != DefaultRundownKeyword:
		if c.DropRundownOnFallback {
			c.NoRundown = true
			return fmt.Sprintf("the runtime does not support a custom rundown keyword (0x%X; needs .NET 9 or later); collecting without rundown", c.RundownKeyword), true
		}
		kw := c.RundownKeyword
		c.RundownKeyword = 0
		return fmt.Sprintf("the runtime does not support a custom rundown keyword (0x%X; needs .NET 9 or later); using the default rundown", kw), true
	case v == 3 && c.NoStackwalk:
		c.NoStackwalk = false
		return "the runtime cannot turn stack collection off (needs .NET 8 or later); stacks will be collected", true
	}
	return "", false
}

// Tracer is what a session needs from a diagnostic client; *diag.Client
// implements it.
type Tracer interface {
	StartTracing(ctx context.Context, req *ipc.CollectTracingRequest) (uint64, net.Conn, error)
	StopTracing(ctx context.Context, sessionID uint64) error
}

// Session is a running EventPipe session. Drain runs its whole lifecycle
// (copy, stop, rundown, all bounded); the parts are there too: read it (or
// Stream) for the nettrace bytes, Stop asks the runtime to end it, after
// which the stream carries the rundown and then ends, Close abandons it.
type Session struct {
	ID uint64
	// Version is the CollectTracing version that started the session.
	Version int
	// Warnings lists what was given up to fit an older runtime.
	Warnings []string
	// Config is the configuration the runtime accepted (after fallbacks).
	Config Config

	t      Tracer
	conn   net.Conn
	mu     sync.Mutex
	stop   bool
	closed bool
}

// Start starts a session. When the runtime answers UNKNOWN_COMMAND to a
// newer CollectTracing version, Start gives up the feature that needed it
// (Block buffering, a custom rundown keyword, turning stacks off) with a
// warning and tries again with the older command.
func Start(ctx context.Context, t Tracer, cfg Config) (*Session, error) {
	var warnings []string
	for {
		req, err := cfg.Request()
		if err != nil {
			return nil, err
		}
		id, conn, err := t.StartTracing(ctx, req)
		if err == nil {
			return &Session{ID: id, Version: req.Version, Warnings: warnings, Config: cfg, t: t, conn: conn}, nil
		}
		if !errors.Is(err, ipc.ErrUnknownCommand) || req.Version <= 2 {
			return nil, err
		}
		w, ok := cfg.fallback(req.Version)
		if !ok {
			if req.Version == 5 {
				return nil, fmt.Errorf("event id filters need .NET 10 or later (CollectTracing5); remove them to trace this runtime: %w", err)
			}
			return nil, err
		}
		warnings = append(warnings, w)
	}
}

// Read reads the nettrace stream.
func (s *Session) Read(p []byte) (int, error) { return s.conn.Read(p) }

// Stream returns the connection carrying the nettrace stream.
func (s *Session) Stream() net.Conn { return s.conn }

// Stop sends StopTracing on a new connection. It is idempotent: only the
// first call talks to the runtime. The stream stays open: read it to the
// end to get the rundown.
func (s *Session) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stop {
		s.mu.Unlock()
		return nil
	}
	s.stop = true
	s.mu.Unlock()
	if err := s.t.StopTracing(ctx, s.ID); err != nil {
		return fmt.Errorf("stop session %#x: %w", s.ID, err)
	}
	return nil
}

// Close closes the stream connection, abandoning whatever the runtime has
// not sent yet. It does not stop the session: a runtime ends a session
// whose reader went away by itself.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.conn.Close()
}
