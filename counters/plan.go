package counters

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/internal/wire"
)

// MetricsProvider is the EventSource through which .NET 6 and later publish
// System.Diagnostics.Metrics instruments (MetricsEventSource).
const MetricsProvider = "System.Diagnostics.Metrics"

// SharedSessionID is the SessionId that joins the one aggregation of
// MetricsEventSource that every tool shares on .NET 8 and later.
const SharedSessionID = "SHARED"

// metricsKeywordTimeSeriesValues is MetricsEventSource's keyword for the
// value events (and the limit and error events).
const metricsKeywordTimeSeriesValues uint64 = 0x2

// Defaults of Config, the same as dotnet-counters. They are also the
// settings of the shared Metrics session (.NET 8+) that dotnet-counters
// joins with its defaults: a client that asks for other settings is left
// out of it.
const (
	DefaultRefreshInterval = time.Second
	DefaultMaxTimeSeries   = 1000
	DefaultMaxHistograms   = 10
)

// Config describes a counters session. The zero value reads the
// System.Runtime counters every second, as dotnet-counters does by default.
type Config struct {
	// Specs select the providers and counters (see ParseSpecs); nil means
	// System.Runtime.
	Specs []Spec
	// RefreshInterval is how often the runtime publishes values; 0 means
	// one second. It must be a whole number of milliseconds, at least 1 ms.
	RefreshInterval time.Duration
	// MaxTimeSeries and MaxHistograms bound what MetricsEventSource tracks;
	// 0 means 1000 and 10.
	MaxTimeSeries int
	MaxHistograms int
	// RuntimeMajor is the target's .NET major version when known (it
	// decides whether the shared Metrics session is used: .NET 8 and
	// later). 0 makes Start ask the process (ProcessInfo2 and later carry
	// the version; runtimes without it get a private session).
	RuntimeMajor int
	// SessionID overrides the Metrics SessionId ("" picks SHARED on .NET 8+
	// and a new GUID otherwise). ClientID overrides the ClientId ("" means
	// a new GUID).
	SessionID string
	ClientID  string
	// NewID makes the ids SessionID and ClientID leave to chance; nil
	// means random GUIDs. A client that replays a recorded session gives
	// back the recorded ids, so its requests are the recorded ones.
	NewID func() string
	// BufferSizeMB is the EventPipe buffer; 0 means the eventpipe default.
	BufferSizeMB uint32
	// StallTimeout is how long a session that has published values may
	// publish none before Run reports it stalled (ErrStalled); 0 means two
	// refresh intervals plus two seconds, a negative value never. Counter
	// payloads at another session's interval, and the Metrics session's
	// collections, count as published: only a runtime that stopped
	// publishing altogether is stalled. Stalls are detected only in .NET
	// Core 3.x (and runtimes whose version is unknown), the one runtime
	// that stops a session's counters when another session ends; a later
	// runtime's session is never reopened.
	StallTimeout time.Duration
	// MetricsRefreshInterval is the refresh interval asked of the
	// System.Diagnostics.Metrics provider; 0 means RefreshInterval. On
	// .NET 8 and later every tool shares one Metrics session, and only
	// tools asking for the same interval, MaxHistograms and MaxTimeSeries
	// get their meters into it: a long-lived client (the monitor) asks for
	// dotnet-counters' defaults (DefaultRefreshInterval,
	// DefaultMaxHistograms, DefaultMaxTimeSeries) so that dotnet-counters
	// keeps working next to it.
	MetricsRefreshInterval time.Duration
	// MetersOnly enables the System.Diagnostics.Metrics provider alone:
	// the specs are read as Meters, their EventCounters are not enabled
	// (a session for the Meters next to one for the EventCounters, which
	// names its specs with the EventCounters\ prefix).
	MetersOnly bool
}

// Plan is a resolved Config: the EventPipe providers to enable and what the
// decoder filters events by. NewPlan builds it; Start uses it; a Decoder
// needs it to read a saved trace.
type Plan struct {
	Specs     []Spec
	Providers []eventpipe.Provider
	// Interval is the refresh interval; EventCounters published for other
	// intervals (by other sessions) are ignored.
	Interval time.Duration
	// MetricsInterval is the Metrics provider's refresh interval
	// (Config.MetricsRefreshInterval, or Interval).
	MetricsInterval time.Duration
	// SessionID and ClientID are the Metrics session's ids ("" when no
	// Meter is asked for).
	SessionID string
	ClientID  string
}

// ErrConfig is wrapped by every error about an invalid Config.
var ErrConfig = errors.New("invalid counters configuration")

// NewPlan checks cfg and turns it into providers: one per EventSource with
// EventCounterIntervalSec (keywords 0, level Informational) and, when a
// provider is not forced to EventCounters with the EventCounters\ prefix,
// the System.Diagnostics.Metrics provider (keyword TimeSeriesValues) with
// SessionId, Metrics, RefreshInterval, MaxTimeSeries, MaxHistograms and
// ClientId, exactly as dotnet-counters configures them.
func NewPlan(cfg Config) (*Plan, error) {
	p := &Plan{Specs: cfg.Specs, Interval: cfg.RefreshInterval}
	if len(p.Specs) == 0 {
		p.Specs = []Spec{{Provider: DefaultProvider}}
	}
	if p.Interval == 0 {
		p.Interval = DefaultRefreshInterval
	}
	if p.Interval < time.Millisecond || p.Interval%time.Millisecond != 0 {
		return nil, fmt.Errorf("%w: refresh interval %v: use a whole number of milliseconds, at least 1ms", ErrConfig, cfg.RefreshInterval)
	}
	if p.Interval > 24*time.Hour {
		return nil, fmt.Errorf("%w: refresh interval %v is longer than a day", ErrConfig, cfg.RefreshInterval)
	}
	maxTS, maxH := cfg.MaxTimeSeries, cfg.MaxHistograms
	if maxTS == 0 {
		maxTS = DefaultMaxTimeSeries
	}
	if maxH == 0 {
		maxH = DefaultMaxHistograms
	}
	if maxTS < 0 || maxH < 0 {
		return nil, fmt.Errorf("%w: MaxTimeSeries %d and MaxHistograms %d must not be negative", ErrConfig, cfg.MaxTimeSeries, cfg.MaxHistograms)
	}
	for _, id := range []string{cfg.SessionID, cfg.ClientID} {
		if strings.ContainsAny(id, ";=\"") {
			return nil, fmt.Errorf("%w: id %q contains ';', '=' or '\"'", ErrConfig, id)
		}
	}
	secs := strconv.FormatFloat(p.Interval.Seconds(), 'f', -1, 64)
	p.MetricsInterval = cmp.Or(cfg.MetricsRefreshInterval, p.Interval)
	if p.MetricsInterval < time.Millisecond || p.MetricsInterval%time.Millisecond != 0 || p.MetricsInterval > 24*time.Hour {
		return nil, fmt.Errorf("%w: Metrics refresh interval %v: use a whole number of milliseconds, at least 1ms and at most a day", ErrConfig, p.MetricsInterval)
	}
	metricsSecs := strconv.FormatFloat(p.MetricsInterval.Seconds(), 'f', -1, 64)
	var meters []string
	for _, sp := range p.Specs {
		if sp.Provider == "" || strings.ContainsAny(sp.Provider, ",;=\"") {
			return nil, fmt.Errorf("%w: provider name %q", ErrConfig, sp.Provider)
		}
		if !cfg.MetersOnly {
			p.Providers = append(p.Providers, eventpipe.Provider{
				Name:  sp.Provider,
				Level: eventpipe.LevelInformational,
				Args:  []eventpipe.Arg{{Key: "EventCounterIntervalSec", Value: secs}},
			})
		}
		if !sp.EventCountersOnly {
			meters = append(meters, sp.Provider)
		}
	}
	if cfg.MetersOnly && len(meters) == 0 {
		return nil, fmt.Errorf("%w: a Meters-only session with no Meter (every provider has the EventCounters\\ prefix)", ErrConfig)
	}
	if len(meters) > 0 {
		newID := wire.RandomGUID
		if cfg.NewID != nil {
			newID = cfg.NewID
		}
		p.SessionID = cfg.SessionID
		if p.SessionID == "" {
			if cfg.RuntimeMajor >= 8 {
				p.SessionID = SharedSessionID
			} else {
				p.SessionID = newID()
			}
		}
		p.ClientID = cfg.ClientID
		if p.ClientID == "" {
			p.ClientID = newID()
		}
		for _, id := range []string{p.SessionID, p.ClientID} {
			if id == "" || strings.ContainsAny(id, ";=\"") {
				return nil, fmt.Errorf("%w: id %q is empty or contains ';', '=' or '\"'", ErrConfig, id)
			}
		}
		p.Providers = append(p.Providers, eventpipe.Provider{
			Name:     MetricsProvider,
			Keywords: metricsKeywordTimeSeriesValues,
			Level:    eventpipe.LevelInformational,
			Args: []eventpipe.Arg{
				{Key: "SessionId", Value: p.SessionID},
				{Key: "Metrics", Value: strings.Join(meters, ",")},
				{Key: "RefreshInterval", Value: metricsSecs},
				{Key: "MaxTimeSeries", Value: strconv.Itoa(maxTS)},
				{Key: "MaxHistograms", Value: strconv.Itoa(maxH)},
				{Key: "ClientId", Value: p.ClientID},
			},
		})
	}
	return p, nil
}

// spec returns the spec naming provider (case-insensitively), or nil.
func (p *Plan) spec(provider string) *Spec {
	for i := range p.Specs {
		if strings.EqualFold(p.Specs[i].Provider, provider) {
			return &p.Specs[i]
		}
	}
	return nil
}

// RuntimeMajor extracts the major version from a ClrProductVersion such as
// "8.0.1+abc" or "9.0.0-rc.2.24473.5"; 0 when the text is not a version.
func RuntimeMajor(clrProductVersion string) int {
	s := strings.TrimSpace(clrProductVersion)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 4 || (i < len(s) && s[i] != '.') {
		return 0
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil || n > math.MaxInt16 {
		return 0
	}
	return n
}
