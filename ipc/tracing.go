package ipc

import "fmt"

// Trace formats of CollectTracing.
const (
	FormatNetPerf  uint32 = 0
	FormatNetTrace uint32 = 1
)

// SessionType is the CollectTracing5+ session kind.
type SessionType uint32

// Session types.
const (
	SessionStreaming  SessionType = 0
	SessionUserEvents SessionType = 1 // Linux user_events; needs an fd handshake
)

// BufferMode is the CollectTracing6 buffering mode.
type BufferMode uint32

// Buffer modes.
const (
	BufferDrop  BufferMode = 0 // lossy, the default
	BufferBlock BufferMode = 1 // producers block when buffers are full
)

// EventFilter is the CollectTracing5+ per-provider event-id filter.
// Enable=false with no ids allows everything; Enable=true with no ids allows
// nothing.
type EventFilter struct {
	Enable   bool
	EventIDs []uint32
}

// TracepointSet maps event ids to one user_events tracepoint.
type TracepointSet struct {
	Name     string
	EventIDs []uint32
}

// TracepointConfig is the per-provider user_events configuration.
type TracepointConfig struct {
	// DefaultName may be empty (written as a null string).
	DefaultName string
	Sets        []TracepointSet
}

// TracingProvider is one provider_config of a CollectTracing request.
type TracingProvider struct {
	Keywords uint64
	Level    uint32
	Name     string
	// Args is the FilterData string "K=V;K=V"; empty is sent as a null
	// string, as the .NET client does.
	Args string
	// Filter is written by CollectTracing5+ (nil = allow all).
	Filter *EventFilter
	// Tracepoints is written for user_events sessions only.
	Tracepoints *TracepointConfig
}

// CollectTracingRequest is the payload of CollectTracing 1-6. Which fields
// are written depends on Version:
//
//	1: bufferMB, format, providers
//	2: bufferMB, format, requestRundown, providers
//	3: bufferMB, format, requestRundown, requestStackwalk, providers
//	4: bufferMB, format, rundownKeyword, requestStackwalk, providers
//	5: sessionType, then (streaming) bufferMB, format, rundownKeyword,
//	   requestStackwalk, providers with event filters; or (user_events)
//	   rundownKeyword, providers with filters and tracepoints
//	6: as 5, and a streaming session ends with u32 bufferMode
//
// Providers are u64 keywords, u32 level, string name, string args.
type CollectTracingRequest struct {
	// Version is 1-6 and picks the command id (CollectTracing..6).
	Version          int
	SessionType      SessionType
	CircularBufferMB uint32
	Format           uint32
	RequestRundown   bool
	RequestStackwalk bool
	RundownKeyword   uint64
	Providers        []TracingProvider
	BufferMode       BufferMode
}

// Command implements Request.
func (r *CollectTracingRequest) Command() (uint8, uint8) {
	v := r.Version
	if v < 1 || v > 6 {
		v = 1
	}
	return SetEventPipe, CmdCollectTracing + uint8(v-1)
}

func appendIDs(b []byte, ids []uint32) []byte {
	b = appendU32(b, uint32(len(ids)))
	for _, id := range ids {
		b = appendU32(b, id)
	}
	return b
}

// AppendBinary implements Request.
func (r *CollectTracingRequest) AppendBinary(b []byte) ([]byte, error) {
	if r.Version < 1 || r.Version > 6 {
		return b, fmt.Errorf("CollectTracing version %d: want 1 to 6", r.Version)
	}
	if len(r.Providers) == 0 {
		return b, fmt.Errorf("%s: no providers; enable at least one: %w", CommandName(r.Command()), ErrInvalidArgument)
	}
	userEvents := r.Version >= 5 && r.SessionType == SessionUserEvents
	if r.SessionType != SessionStreaming && !userEvents {
		return b, fmt.Errorf("%s: session type %d needs CollectTracing5 or later: %w", CommandName(r.Command()), r.SessionType, ErrInvalidArgument)
	}
	if r.Version >= 5 {
		b = appendU32(b, uint32(r.SessionType))
	}
	if !userEvents {
		b = appendU32(b, r.CircularBufferMB)
		b = appendU32(b, r.Format)
	}
	switch r.Version {
	case 2:
		b = appendBool(b, r.RequestRundown)
	case 3:
		b = appendBool(b, r.RequestRundown)
		b = appendBool(b, r.RequestStackwalk)
	case 4, 5, 6:
		b = appendU64(b, r.RundownKeyword)
		if !userEvents {
			b = appendBool(b, r.RequestStackwalk)
		}
	}
	b = appendU32(b, uint32(len(r.Providers)))
	for i := range r.Providers {
		p := &r.Providers[i]
		if p.Name == "" {
			return b, fmt.Errorf("%s: provider %d has no name: %w", CommandName(r.Command()), i, ErrInvalidArgument)
		}
		b = appendU64(b, p.Keywords)
		b = appendU32(b, p.Level)
		b = appendString(b, p.Name)
		b = appendOptionalString(b, p.Args)
		if r.Version >= 5 {
			if p.Filter == nil {
				b = appendBool(b, false)
				b = appendU32(b, 0)
			} else {
				b = appendBool(b, p.Filter.Enable)
				b = appendIDs(b, p.Filter.EventIDs)
			}
			if userEvents {
				tp := p.Tracepoints
				if tp == nil || (tp.DefaultName == "" && len(tp.Sets) == 0) {
					return b, fmt.Errorf("%s: user_events provider %q needs a default tracepoint or tracepoint sets: %w", CommandName(r.Command()), p.Name, ErrInvalidArgument)
				}
				b = appendOptionalString(b, tp.DefaultName)
				b = appendU32(b, uint32(len(tp.Sets)))
				for _, s := range tp.Sets {
					b = appendString(b, s.Name)
					b = appendIDs(b, s.EventIDs)
				}
			}
		}
	}
	if r.Version >= 6 && !userEvents {
		b = appendU32(b, uint32(r.BufferMode))
	}
	return b, nil
}

// MarshalBinary returns the payload.
func (r *CollectTracingRequest) MarshalBinary() ([]byte, error) { return r.AppendBinary(nil) }

func (d *decoder) ids(field string) []uint32 {
	n := d.count(field, 4)
	if n == 0 {
		return nil
	}
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = d.u32(field)
	}
	return ids
}

// UnmarshalBinary decodes the payload of the command given by r.Version
// (which must be set).
func (r *CollectTracingRequest) UnmarshalBinary(b []byte) error {
	v := r.Version
	if v < 1 || v > 6 {
		return fmt.Errorf("CollectTracing version %d: want 1 to 6", v)
	}
	*r = CollectTracingRequest{Version: v}
	d := newDecoder(CommandName(r.Command())+" request", b)
	if v >= 5 {
		r.SessionType = SessionType(d.u32("session type"))
		if d.err == nil && r.SessionType > SessionUserEvents {
			d.err = &ProtocolError{What: d.what, Reason: fmt.Sprintf("unknown session type %d", r.SessionType)}
		}
	}
	userEvents := r.SessionType == SessionUserEvents
	if !userEvents {
		r.CircularBufferMB = d.u32("circular buffer size")
		r.Format = d.u32("format")
	}
	switch v {
	case 2:
		r.RequestRundown = d.boolean("request rundown")
	case 3:
		r.RequestRundown = d.boolean("request rundown")
		r.RequestStackwalk = d.boolean("request stackwalk")
	case 4, 5, 6:
		r.RundownKeyword = d.u64("rundown keyword")
		if !userEvents {
			r.RequestStackwalk = d.boolean("request stackwalk")
		}
	}
	// A provider is at least 8+4+4+4 bytes.
	n := d.count("providers", 20)
	if n > 0 {
		r.Providers = make([]TracingProvider, n)
	}
	for i := 0; i < n && d.err == nil; i++ {
		p := &r.Providers[i]
		p.Keywords = d.u64("provider keywords")
		p.Level = d.u32("provider level")
		p.Name = d.str("provider name")
		p.Args = d.str("provider args")
		if v >= 5 {
			p.Filter = &EventFilter{Enable: d.boolean("event filter enable"), EventIDs: d.ids("event filter ids")}
			if userEvents {
				tp := &TracepointConfig{DefaultName: d.str("default tracepoint")}
				ns := d.count("tracepoint sets", 8)
				for j := 0; j < ns && d.err == nil; j++ {
					tp.Sets = append(tp.Sets, TracepointSet{Name: d.str("tracepoint name"), EventIDs: d.ids("tracepoint ids")})
				}
				p.Tracepoints = tp
			}
		}
	}
	if v >= 6 && !userEvents {
		r.BufferMode = BufferMode(d.u32("buffer mode"))
	}
	return trailing(d)
}
