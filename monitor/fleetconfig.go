package monitor

import (
	"cmp"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/egress"
	"github.com/clrdiag/clrdiag/logs"
	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/rules"
	"github.com/clrdiag/clrdiag/telemetry/otlp"
	"github.com/clrdiag/clrdiag/telemetry/pyroscope"
	"github.com/clrdiag/clrdiag/telemetry/remotewrite"
)

// FleetConfig is what the monitor reads from its configuration file
// (clrdiag monitor --config) and environment besides its flags: collection
// rules, egress providers and the telemetry it pushes. LoadFleetConfig
// reads and checks it whole; New builds every provider and exporter before
// anything starts, so a configuration that cannot be used stops the
// monitor with the key at fault.
type FleetConfig struct {
	// Rules are the collection rules (package rules), with their
	// CollectionRuleDefaults.
	Rules *rules.Config
	// Egress are the egress providers actions may name.
	Egress []EgressSpec
	// Telemetry is what the monitor pushes.
	Telemetry TelemetryConfig
	// MetricsCounters are the providers /metrics reads besides
	// Config.MetricsCounters, from dotnet-monitor's Metrics:Providers
	// (ProviderName, CounterNames) and Metrics:Meters (MeterName,
	// InstrumentNames), in the syntax of counters.ParseSpecs
	// ("MyApp.Meter[requests,latency],My-EventSource"); "" for none.
	MetricsCounters string
	// Ignored are the top-level sections nobody read (the rest of a
	// dotnet-monitor settings file).
	Ignored []string
}

// EgressSpec is one provider of Egress:<Kind>:<Name>: exactly one of
// FileSystem and S3 is set.
type EgressSpec struct {
	Name       string
	FileSystem *egress.FileSystemConfig
	S3         *egress.S3Config
	// path is the key that declared it, for errors at start.
	path string
}

// TelemetryConfig says what the monitor pushes to the systems a team runs.
// The zero value pushes nothing.
type TelemetryConfig struct {
	// ExportInterval is how often the latest value of every counter
	// series is pushed (OTLP metrics, remote write); 0 means
	// DefaultExportInterval.
	ExportInterval time.Duration
	// OTLP, when set, pushes over OTLP/HTTP: metrics (OTLPMetrics),
	// the processes' logs (OTLPLogs) and, behind OTLPProfiles, the
	// continuous profiles.
	OTLP         *otlp.Config
	OTLPMetrics  bool
	OTLPLogs     *logs.Config
	OTLPProfiles bool
	// RemoteWrite, when set, pushes the metrics by Prometheus remote
	// write.
	RemoteWrite *remotewrite.Config
	// Pyroscope, when set, pushes the continuous profiles to Pyroscope.
	Pyroscope *pyroscope.Config
	// Profiling is the continuous profiler of Pyroscope and OTLP
	// profiles.
	Profiling ProfilingConfig
}

// ProfilingConfig is the continuous profiler: every Interval, a profile of
// each process over Duration, for each measure of Samples.
type ProfilingConfig struct {
	// Interval is how often each process is profiled; 0 means
	// DefaultProfilingInterval.
	Interval time.Duration
	// Duration is how long each profile lasts; 0 means
	// DefaultProfilingDuration.
	Duration time.Duration
	// Samples are the measures of package profile (wall, cpu, alloc,
	// contention, exceptions); nil means wall.
	Samples []string
}

// Defaults of the telemetry configuration.
const (
	DefaultExportInterval    = 15 * time.Second
	DefaultProfilingInterval = time.Minute
	DefaultProfilingDuration = 10 * time.Second
)

// metricsOn tells whether samples are pushed anywhere.
func (t *TelemetryConfig) metricsOn() bool {
	return t.OTLP != nil && t.OTLPMetrics || t.RemoteWrite != nil
}

// profilingOn tells whether the continuous profiler runs.
func (t *TelemetryConfig) profilingOn() bool {
	return t.Pyroscope != nil || t.OTLP != nil && t.OTLPProfiles
}

// LoadFleetConfig reads the monitor's configuration: the file at path
// (YAML, or JSON when it ends in .json; "" for none) and then the
// variables of environ (os.Environ()) that belong to its sections, which
// override single keys of the file. Every key is checked; a configuration
// with any mistake is refused whole with a *rules.ConfigError (matching
// rules.ErrConfig) that names each wrong key by its path. A file that
// cannot be read gives a plain error.
func LoadFleetConfig(path string, environ []string) (*FleetConfig, error) {
	fc := &FleetConfig{}
	opt := rules.LoadOptions{Sections: map[string]func(*rules.Settings){
		"Egress":    func(s *rules.Settings) { fc.Egress = readEgressSpecs(s) },
		"Telemetry": func(s *rules.Settings) { fc.Telemetry = readTelemetry(s, environ) },
		"Metrics":   func(s *rules.Settings) { fc.MetricsCounters = readMetrics(s) },
	}}
	var srcs []rules.Source
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read the monitor configuration: %w", err)
		}
		format := "yaml"
		if strings.HasSuffix(strings.ToLower(path), ".json") {
			format = "json"
		}
		srcs = append(srcs, rules.Source{Name: path, Data: data, Format: format})
	}
	srcs = append(srcs, rules.Source{Name: "environment", Format: "env", Environ: environ})
	cfg, err := rules.Load(srcs, opt)
	if err != nil {
		return nil, err
	}
	fc.Rules, fc.Ignored = cfg, cfg.Ignored
	return fc, nil
}

// Empty tells whether the configuration asks the fleet agent for nothing:
// no rule, no egress, no telemetry (MetricsCounters, which only widens
// /metrics, does not count).
func (fc *FleetConfig) Empty() bool {
	t := fc.Telemetry
	return (fc.Rules == nil || len(fc.Rules.Rules) == 0) && len(fc.Egress) == 0 &&
		t.OTLP == nil && t.RemoteWrite == nil && t.Pyroscope == nil
}

// readMetrics reads dotnet-monitor's Metrics:Providers (ProviderName,
// CounterNames: an EventSource's EventCounters or a Meter's instruments)
// and Metrics:Meters (MeterName, InstrumentNames) as counters.ParseSpecs
// text; no names means every counter of the provider.
func readMetrics(s *rules.Settings) string {
	var specs []string
	add := func(list []*rules.Settings, nameKey, namesKey string) {
		for _, ps := range list {
			name := ps.String(nameKey, true)
			names := ps.Strings(namesKey)
			ps.Done()
			if name == "" {
				continue
			}
			spec := name
			if len(names) > 0 {
				spec += "[" + strings.Join(names, ",") + "]"
			}
			if _, err := counters.ParseSpecs(spec); err != nil {
				ps.Errorf(nameKey, "%q with %s %q is not a provider name and a list of its counters: names cannot hold '[', ']' or ','", name, namesKey, names)
				continue
			}
			specs = append(specs, spec)
		}
	}
	add(s.List("Providers"), "ProviderName", "CounterNames")
	add(s.List("Meters"), "MeterName", "InstrumentNames")
	s.Done()
	return strings.Join(specs, ",")
}

// readEgressSpecs reads Egress:FileSystem:<name> and Egress:S3Storage:<name>
// with dotnet-monitor's setting names.
func readEgressSpecs(s *rules.Settings) []EgressSpec {
	var out []EgressSpec
	seen := map[string]string{}
	for _, kind := range s.Keys() {
		switch {
		case strings.EqualFold(kind, "Properties"):
			s.Section(kind) // shared values for providers; none are read
			continue
		case strings.EqualFold(kind, "FileSystem"), strings.EqualFold(kind, "S3Storage"):
		default:
			s.Errorf(kind, "unknown egress provider kind: give FileSystem or S3Storage (Azure Blob Storage is not supported)")
			s.Section(kind)
			continue
		}
		ks := s.Section(kind)
		for _, name := range ks.Keys() {
			ps := ks.Section(name)
			if prev, dup := seen[strings.ToLower(name)]; dup {
				ps.Errorf("", "egress provider %q is declared twice (also under %s): provider names must be unique", name, prev)
			}
			seen[strings.ToLower(name)] = ps.Path()
			spec := EgressSpec{Name: name, path: ps.Path()}
			if strings.EqualFold(kind, "FileSystem") {
				spec.FileSystem = &egress.FileSystemConfig{Name: name, Directory: ps.String("DirectoryPath", true)}
			} else {
				spec.S3 = readS3(ps, name)
			}
			ps.Done()
			out = append(out, spec)
		}
		ks.Done()
	}
	s.Done()
	return out
}

// readS3 reads an S3Storage provider: dotnet-monitor's names (BucketName,
// Endpoint, RegionName, AccessKeyId, SecretAccessKey, AwsProfileName,
// AwsProfilePath, ForcePathStyle) and clrdiag's (Prefix, SessionToken,
// DisableInstanceMetadata).
func readS3(s *rules.Settings, name string) *egress.S3Config {
	c := &egress.S3Config{
		Name:                    name,
		Bucket:                  s.String("BucketName", true),
		Prefix:                  s.String("Prefix", false),
		Endpoint:                s.String("Endpoint", false),
		Region:                  s.String("RegionName", false),
		AccessKeyID:             s.String("AccessKeyId", false),
		SecretAccessKey:         s.String("SecretAccessKey", false),
		SessionToken:            s.String("SessionToken", false),
		Profile:                 s.String("AwsProfileName", false),
		SharedCredentialsFile:   s.String("AwsProfilePath", false),
		UsePathStyle:            s.Bool("ForcePathStyle", false),
		DisableInstanceMetadata: s.Bool("DisableInstanceMetadata", false),
	}
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			s.Errorf("Endpoint", "%q is not an http or https URL (e.g. https://minio.example:9000)", c.Endpoint)
		}
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		s.Errorf("SecretAccessKey", "give AccessKeyId and SecretAccessKey together, or neither (then the environment, AwsProfilePath or the AWS chain provide them)")
	}
	return c
}

// readTelemetry reads the Telemetry section.
func readTelemetry(s *rules.Settings, environ []string) TelemetryConfig {
	t := TelemetryConfig{
		ExportInterval: s.Duration("ExportInterval", DefaultExportInterval, time.Second, time.Hour),
	}
	if s.Has("Otlp") {
		o := s.Section("Otlp")
		// OTEL_EXPORTER_OTLP_* fill what the section leaves out.
		cfg := otlp.ConfigFromEnv(envLookup(environ))
		if v := o.String("Endpoint", false); v != "" {
			cfg.Endpoint, cfg.MetricsURL, cfg.LogsURL = v, "", ""
		}
		if h := o.Map("Headers"); len(h) > 0 {
			cfg.Headers = h
		}
		switch strings.ToLower(o.Enum("Compression", "", "gzip", "none")) {
		case "gzip":
			cfg.Gzip = true
		case "none":
			cfg.Gzip = false
		}
		t.OTLPMetrics = o.Bool("Metrics", true)
		t.OTLPProfiles = o.Bool("Profiles", false)
		cfg.Profiles = t.OTLPProfiles
		if o.Has("Logs") {
			lc := readLogsConfig(o.Section("Logs"))
			t.OTLPLogs = &lc
		}
		if cfg.Endpoint == "" && cfg.MetricsURL == "" {
			o.Errorf("Endpoint", "required: give the collector's OTLP/HTTP base URL (e.g. http://otel-collector:4318), or set OTEL_EXPORTER_OTLP_ENDPOINT")
		} else if _, err := otlp.New(cfg); err != nil {
			o.Errorf("Endpoint", "%v", err)
		}
		o.Done()
		t.OTLP = &cfg
	}
	if s.Has("RemoteWrite") {
		r := s.Section("RemoteWrite")
		cfg := remotewrite.Config{
			URL:            r.String("Url", true),
			Headers:        r.Map("Headers"),
			Username:       r.String("Username", false),
			Password:       r.String("Password", false),
			BearerToken:    r.String("BearerToken", false),
			ExternalLabels: r.Map("ExternalLabels"),
		}
		if cfg.URL != "" {
			if _, err := remotewrite.New(cfg); err != nil {
				r.Errorf("Url", "%v", err)
			}
		}
		r.Done()
		t.RemoteWrite = &cfg
	}
	if s.Has("Pyroscope") {
		p := s.Section("Pyroscope")
		cfg := pyroscope.Config{
			URL:         p.String("Url", true),
			AppName:     p.String("AppName", false),
			Labels:      p.Map("Labels"),
			TenantID:    p.String("TenantId", false),
			Headers:     p.Map("Headers"),
			Username:    p.String("Username", false),
			Password:    p.String("Password", false),
			BearerToken: p.String("BearerToken", false),
		}
		if cfg.URL != "" {
			if _, err := pyroscope.New(cfg); err != nil {
				p.Errorf("Url", "%v", err)
			}
		}
		p.Done()
		t.Pyroscope = &cfg
	}
	pr := s.Section("Profiling")
	t.Profiling = ProfilingConfig{
		Interval: pr.Duration("Interval", DefaultProfilingInterval, 10*time.Second, 24*time.Hour),
		Duration: pr.Duration("Duration", DefaultProfilingDuration, time.Second, 10*time.Minute),
		Samples:  pr.Strings("Samples"),
	}
	if len(t.Profiling.Samples) == 0 {
		t.Profiling.Samples = []string{profile.MeasureWall}
	}
	for i, m := range t.Profiling.Samples {
		info, err := profile.LookupMeasure(m)
		if err != nil {
			pr.Errorf(fmt.Sprintf("Samples[%d]", i), "%v", err)
			continue
		}
		t.Profiling.Samples[i] = info.Name
	}
	t.Profiling.Samples = slices.Compact(t.Profiling.Samples)
	if t.Profiling.Duration >= t.Profiling.Interval {
		pr.Errorf("Duration", "%s is not shorter than Interval %s: each process would always be profiled", rules.FormatDuration(t.Profiling.Duration), rules.FormatDuration(t.Profiling.Interval))
	}
	pr.Done()
	s.Done()
	return t
}

// readLogsConfig reads a logs section: LogLevel (default Information),
// UseAppFilters, and FilterSpecs as a map of category (or prefix*) to
// level.
func readLogsConfig(s *rules.Settings) logs.Config {
	var c logs.Config
	c.DefaultLevel = logs.Information
	if v := s.String("LogLevel", false); v != "" {
		l, err := logs.ParseLevel(v)
		if err != nil {
			s.Errorf("LogLevel", "%v", err)
		} else {
			c.DefaultLevel = l
		}
	}
	c.UseAppFilters = s.Bool("UseAppFilters", false)
	specs := s.Map("FilterSpecs")
	cats := make([]string, 0, len(specs))
	for k := range specs {
		cats = append(cats, k)
	}
	slices.Sort(cats)
	for _, cat := range cats {
		if strings.ContainsAny(cat, ";:") {
			s.Errorf("FilterSpecs."+cat, "a category must not contain ';' or ':'")
			continue
		}
		l, err := logs.ParseLevel(specs[cat])
		if err != nil {
			s.Errorf("FilterSpecs."+cat, "%v", err)
			continue
		}
		c.Filters = append(c.Filters, logs.Filter{Category: cat, Level: l})
	}
	s.Done()
	return c
}

// envLookup is getenv over environ.
func envLookup(environ []string) func(string) string {
	return func(key string) string {
		for i := len(environ) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(environ[i], "="); ok && k == key {
				return v
			}
		}
		return ""
	}
}

// WriteListing writes what the configuration sets up, one line each: the
// rules (rules.Config.WriteListing), the egress providers and the
// telemetry, for clrdiag monitor --check-config and the monitor's start.
func (fc *FleetConfig) WriteListing(w io.Writer) error {
	var b strings.Builder
	rc := fc.Rules
	if rc == nil {
		rc = &rules.Config{}
	}
	// The rules' listing names the declared providers; the details are
	// below.
	listed := *rc
	listed.Egress = nil
	if err := listed.WriteListing(&b); err != nil {
		return err
	}
	for _, e := range fc.Egress {
		switch {
		case e.FileSystem != nil:
			fmt.Fprintf(&b, "egress provider %s (FileSystem): %s\n", e.Name, e.FileSystem.Directory)
		case e.S3 != nil:
			where := "s3://" + e.S3.Bucket
			if p := strings.Trim(e.S3.Prefix, "/"); p != "" {
				where += "/" + p
			}
			if e.S3.Endpoint != "" {
				where += " at " + e.S3.Endpoint
			}
			fmt.Fprintf(&b, "egress provider %s (S3Storage): %s\n", e.Name, where)
		}
	}
	t := &fc.Telemetry
	if t.OTLP != nil {
		var sig []string
		if t.OTLPMetrics {
			sig = append(sig, "metrics every "+rules.FormatDuration(t.exportInterval()))
		}
		if t.OTLPLogs != nil {
			sig = append(sig, "logs ("+t.OTLPLogs.FilterSpecs()+")")
		}
		if t.OTLPProfiles {
			sig = append(sig, "profiles")
		}
		fmt.Fprintf(&b, "telemetry: OTLP/HTTP to %s: %s\n", cmp.Or(t.OTLP.Endpoint, t.OTLP.MetricsURL), strings.Join(sig, ", "))
	}
	if t.RemoteWrite != nil {
		fmt.Fprintf(&b, "telemetry: Prometheus remote write to %s every %s\n", t.RemoteWrite.URL, rules.FormatDuration(t.exportInterval()))
	}
	if t.Pyroscope != nil {
		fmt.Fprintf(&b, "telemetry: Pyroscope at %s\n", t.Pyroscope.URL)
	}
	if t.profilingOn() {
		fmt.Fprintf(&b, "telemetry: continuous profiles (%s) of %s every %s\n", strings.Join(t.Profiling.Samples, ", "),
			rules.FormatDuration(t.Profiling.Duration), rules.FormatDuration(t.Profiling.Interval))
	}
	if fc.MetricsCounters != "" {
		fmt.Fprintf(&b, "metrics: /metrics also reads %s\n", fc.MetricsCounters)
	}
	if len(fc.Ignored) > 0 {
		fmt.Fprintf(&b, "ignored sections: %s (the monitor reads CollectionRules, CollectionRuleDefaults, Egress, Telemetry and Metrics)\n", strings.Join(fc.Ignored, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// exportInterval is ExportInterval or its default.
func (t *TelemetryConfig) exportInterval() time.Duration {
	if t.ExportInterval > 0 {
		return t.ExportInterval
	}
	return DefaultExportInterval
}
