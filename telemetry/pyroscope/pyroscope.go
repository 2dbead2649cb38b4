package pyroscope

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/telemetry"
	"github.com/clrdiag/clrdiag/telemetry/internal/push"
	pprof "github.com/google/pprof/profile"
)

// Config configures an Exporter. URL is required; the zero value of every
// other field is the default.
type Config struct {
	// URL is Pyroscope's base URL, e.g. "http://pyroscope:4040"; /ingest
	// is added to it.
	URL string
	// AppName replaces the resource's service.name as the application
	// name.
	AppName string
	// Labels are added to every profile's name.
	Labels map[string]string
	// TenantID is sent as X-Scope-OrgID (multi-tenant Pyroscope).
	TenantID string
	// Headers are sent with every request.
	Headers map[string]string
	// Username and Password send HTTP basic authentication; BearerToken an
	// Authorization: Bearer header.
	Username, Password string
	BearerToken        string
	// SpyName is the spyName parameter; "" is "clrdiag".
	SpyName string
	// Delivery is the queue and retry configuration; each profile is sent
	// in a request of its own (BatchSize 1), and QueueSize 0 is 16.
	Delivery telemetry.Delivery
}

// Profile is one profile to push.
type Profile struct {
	Resource *telemetry.Resource
	// Start and End are the time the profile covers.
	Start, End time.Time
	// PProf is the encoded profile (gzipped or not), e.g. from
	// weighted.WritePprof.
	PProf []byte
}

// Exporter pushes profiles. Its methods are safe for concurrent use.
type Exporter struct {
	cfg      Config
	delivery push.Config
	header   http.Header
	queue    *push.Queue[Profile]
}

// New checks the configuration and makes an Exporter; start its Run.
func New(cfg Config) (*Exporter, error) {
	u, err := url.Parse(cfg.URL)
	if cfg.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("pyroscope: URL %q is not an http or https URL (e.g. http://pyroscope:4040)", cfg.URL)
	}
	if cfg.SpyName == "" {
		cfg.SpyName = "clrdiag"
	}
	d := cfg.Delivery
	d.BatchSize = 1
	if d.QueueSize <= 0 {
		d.QueueSize = 16
	}
	e := &Exporter{cfg: cfg, delivery: d.WithDefaults(), header: http.Header{}}
	if err := push.SetHeaders(e.header, cfg.Headers); err != nil {
		return nil, fmt.Errorf("pyroscope: %w", err)
	}
	if cfg.TenantID != "" {
		e.header.Set("X-Scope-OrgID", cfg.TenantID)
	}
	if err := push.SetAuth(e.header, cfg.Username, cfg.Password, cfg.BearerToken); err != nil {
		return nil, fmt.Errorf("pyroscope: %w", err)
	}
	e.header.Set("User-Agent", "clrdiag")
	e.queue = push.NewQueue(e.delivery, e.send)
	return e, nil
}

// Run sends profiles until ctx ends, then sends what is queued one last
// time and returns.
func (e *Exporter) Run(ctx context.Context) { e.queue.Run(ctx) }

// Export queues profiles and reports how many a full queue dropped.
func (e *Exporter) Export(ps ...Profile) (dropped int) { return e.queue.Add(ps...) }

// Flush sends everything queued (Run must be running) and returns the last
// failed profile's error.
func (e *Exporter) Flush(ctx context.Context) error { return e.queue.Flush(ctx) }

// Stats counts what the exporter did.
func (e *Exporter) Stats() telemetry.Stats { return e.queue.Stats() }

func retryable(status int) bool { return status >= 500 || status == http.StatusTooManyRequests }

func (e *Exporter) send(ctx context.Context, ps []Profile) error {
	var errs []error
	for _, p := range ps {
		req, err := e.Request(p)
		if err == nil {
			_, err = push.Post(ctx, e.delivery, req)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pyroscope: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Request builds the ingest request of a profile.
func (e *Exporter) Request(p Profile) (push.Request, error) {
	parsed, err := pprof.ParseData(p.PProf)
	if err != nil {
		return push.Request{}, fmt.Errorf("the profile is not a pprof profile: %w", err)
	}
	stc, err := json.Marshal(SampleTypeConfig(parsed))
	if err != nil {
		return push.Request{}, err
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, part := range []struct {
		field, file string
		data        []byte
	}{{"profile", "profile.pprof", p.PProf}, {"sample_type_config", "sample_type_config.json", stc}} {
		w, err := mw.CreateFormFile(part.field, part.file)
		if err != nil {
			return push.Request{}, err
		}
		if _, err := w.Write(part.data); err != nil {
			return push.Request{}, err
		}
	}
	if err := mw.Close(); err != nil {
		return push.Request{}, err
	}
	start, end := p.Start, p.End
	if end.IsZero() {
		end = time.Now()
	}
	if start.IsZero() || start.After(end) {
		start = end
	}
	q := url.Values{}
	q.Set("name", e.Name(p.Resource))
	q.Set("from", strconv.FormatInt(start.Unix(), 10))
	q.Set("until", strconv.FormatInt(end.Unix(), 10))
	q.Set("format", "pprof")
	q.Set("spyName", e.cfg.SpyName)
	h := e.header.Clone()
	h.Set("Content-Type", mw.FormDataContentType())
	return push.Request{URL: strings.TrimRight(e.cfg.URL, "/") + "/ingest?" + q.Encode(), Body: body.Bytes(), Header: h, Retryable: retryable}, nil
}

// Name is the name parameter of a profile of res: APP{label=value,...},
// labels sorted.
func (e *Exporter) Name(res *telemetry.Resource) string {
	app := e.cfg.AppName
	if app == "" {
		app = res.String("service.name")
	}
	if app == "" {
		app = "clrdiag"
	}
	labels := map[string]string{}
	for k, attr := range map[string]string{"pod": "k8s.pod.name", "namespace": "k8s.namespace.name", "pid": "process.pid"} {
		if v := res.String(attr); v != "" {
			labels[k] = v
		}
	}
	for k, v := range e.cfg.Labels {
		labels[k] = v
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(clean(app, appRune))
	b.WriteByte('{')
	n := 0
	seen := map[string]bool{}
	for _, k := range keys {
		key, val := clean(k, keyRune), cleanValue(labels[k])
		if key == "" || val == "" || key == "__name__" || seen[key] {
			continue // two keys that clean to one: the first (sorted) wins
		}
		seen[key] = true
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(key)
		b.WriteByte('=')
		b.WriteString(val)
	}
	b.WriteByte('}')
	return b.String()
}

// keyRune is what Pyroscope accepts in a label name; appRune in an
// application name.
func keyRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.'
}

func appRune(r rune) bool { return keyRune(r) || r == '-' || r == '/' }

func clean(s string, ok func(rune) bool) string {
	return strings.Map(func(r rune) rune {
		if ok(r) {
			return r
		}
		return '_'
	}, s)
}

// cleanValue keeps a label value from ending early in Pyroscope's name
// parser (',' and '}' end it; spaces around it are trimmed).
func cleanValue(s string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		switch r {
		case ',', '{', '}':
			return '_'
		}
		return r
	}, s))
}

// TypeConfig is how Pyroscope reads one sample type.
type TypeConfig struct {
	Units       string `json:"units,omitempty"`
	Aggregation string `json:"aggregation,omitempty"`
	DisplayName string `json:"display-name,omitempty"`
	Sampled     bool   `json:"sampled,omitempty"`
	Cumulative  bool   `json:"cumulative,omitempty"`
}

// knownTypes configures clrdiag's sample types.
var knownTypes = map[string]TypeConfig{
	"samples":       {Units: "samples", Sampled: true},
	"wall":          {Units: "samples", Sampled: true},
	"cpu":           {Units: "samples", Sampled: true},
	"alloc_objects": {Units: "objects", Aggregation: "sum"},
	"alloc_space":   {Units: "bytes", Aggregation: "sum"},
	"contentions":   {Units: "lock_samples", Aggregation: "sum", DisplayName: "mutex_count"},
	"delay":         {Units: "lock_nanoseconds", Aggregation: "sum", DisplayName: "mutex_duration"},
	"exceptions":    {Units: "exceptions", Aggregation: "sum", DisplayName: "exceptions"},
}

// SampleTypeConfig is the sample_type_config of a profile: an entry for
// each of its sample types that clrdiag knows.
func SampleTypeConfig(p *pprof.Profile) map[string]TypeConfig {
	out := map[string]TypeConfig{}
	for _, st := range p.SampleType {
		if c, ok := knownTypes[st.Type]; ok {
			out[st.Type] = c
		}
	}
	return out
}
