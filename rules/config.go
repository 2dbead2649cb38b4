package rules

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Config is a checked set of collection rules.
type Config struct {
	Rules []*Rule
	// Egress lists the egress providers the configuration declares
	// (Egress:<Kind>:<Name>), as Kind/Name; actions may name them.
	Egress []EgressProvider
	// Ignored lists the top-level sections that nothing read (the other
	// sections of a dotnet-monitor settings file: Urls, Metrics, ...),
	// for a warning.
	Ignored []string
}

// EgressProvider is one provider declared under Egress:<Kind>:<Name>.
type EgressProvider struct {
	Kind string // FileSystem, S3Storage, ...
	Name string
}

// Rule is one collection rule: which processes it applies to, what it
// watches for, what it does then, and how often it may.
type Rule struct {
	Name    string
	Filters []Filter
	Trigger Trigger
	Actions []*ActionSpec
	Limits  Limits
}

// FilterKey names what a Filter compares.
type FilterKey string

// The filter keys: dotnet-monitor's, and RuntimeVersion (the runtime's
// ClrProductVersion, e.g. 8.0.34; empty on .NET Core 3.1, which does not
// report it).
const (
	FilterProcessID      FilterKey = "ProcessId"
	FilterProcessName    FilterKey = "ProcessName"
	FilterCommandLine    FilterKey = "CommandLine"
	FilterRuntimeVersion FilterKey = "RuntimeVersion"
)

var filterKeys = []FilterKey{FilterProcessID, FilterProcessName, FilterCommandLine, FilterRuntimeVersion}

// MatchType says how a Filter compares.
type MatchType string

// The match types. Comparisons ignore case.
const (
	MatchExact    MatchType = "Exact"
	MatchContains MatchType = "Contains"
)

// Filter selects processes: all of a rule's filters must match.
type Filter struct {
	Key   FilterKey
	Value string
	Match MatchType
}

// Matches reports whether p passes the filter.
func (f Filter) Matches(p ProcessInfo) bool {
	var have string
	switch f.Key {
	case FilterProcessID:
		have = strconv.Itoa(p.PID)
	case FilterProcessName:
		have = p.Name
	case FilterCommandLine:
		have = p.CommandLine
	case FilterRuntimeVersion:
		have = p.RuntimeVersion
	}
	if f.Match == MatchContains {
		return strings.Contains(strings.ToLower(have), strings.ToLower(f.Value))
	}
	return strings.EqualFold(have, f.Value)
}

// Limits bound how often and how long a rule acts.
type Limits struct {
	// ActionCount is how many times the action list may run (default 5)
	// within ActionCountWindow, or during the rule's whole life when
	// ActionCountWindow is 0.
	ActionCount       int
	ActionCountWindow time.Duration
	// RuleDuration ends the rule that long after it was applied to a
	// process; 0 means never.
	RuleDuration time.Duration
}

// DefaultActionCount is Limits.ActionCount's default, as dotnet-monitor's.
const DefaultActionCount = 5

// ActionSpec is one configured action of a rule.
type ActionSpec struct {
	// Name is the name later actions refer to in $(Actions.Name.Output);
	// "" when none was given.
	Name string
	// Type is the action's registered type (CollectTrace, Execute, ...).
	Type string
	// Index is the action's position in its rule.
	Index int
	// Egress is the egress provider its artifact goes to ("" keeps it in
	// the artifact directory); only for types that make artifacts.
	Egress string
	// Action is the parsed action, ready to run.
	Action Action
	kind   *ActionType
}

// Label names the action for logs: its Name, or Type#index.
func (a *ActionSpec) Label() string {
	if a.Name != "" {
		return a.Name
	}
	return fmt.Sprintf("%s#%d", a.Type, a.Index)
}

// Artifact reports whether the action makes an artifact.
func (a *ActionSpec) Artifact() bool { return a.kind != nil && a.kind.Artifact }

// LoadOptions configure Load. The zero value uses the default action types.
type LoadOptions struct {
	// Actions are the action types rules may use; nil means
	// DefaultActions().
	Actions *Registry
	// EgressProviders, when set, are the egress providers that exist
	// besides those the configuration itself declares under Egress
	// (provider names are compared without regard to case).
	EgressProviders []string
	// Sections read other top-level sections of the same configuration
	// (the monitor reads Egress's settings and Telemetry this way), by
	// section name: each function is called with the section's Settings
	// (empty when the section is absent) and reports its errors there,
	// with the rules' own, so that one ConfigError names them all. These
	// sections are read from the environment too (SECTION__KEY=value).
	Sections map[string]func(*Settings)
}

// Source is one input of a configuration.
type Source struct {
	// Name says where it came from, for errors (a file name).
	Name string
	// Data is the content; Format says how to read it: "json", "yaml"
	// or "env" (Data then holds KEY=value lines; see Environ).
	Data   []byte
	Format string
	// Environ, for Format "env", are the variables (os.Environ()).
	Environ []string
}

// LoadFile reads a configuration file: JSON when its name ends in .json,
// YAML otherwise (YAML also reads JSON). environ (os.Environ(), or nil)
// is applied after the file, as dotnet-monitor applies environment
// variables over its settings.json: a variable overrides one key.
func LoadFile(path string, environ []string, opt LoadOptions) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the rule configuration: %w", err)
	}
	format := "yaml"
	if strings.EqualFold(filepath.Ext(path), ".json") {
		format = "json"
	}
	srcs := []Source{{Name: path, Data: data, Format: format}}
	if len(environ) > 0 {
		srcs = append(srcs, Source{Name: "environment", Format: "env", Environ: environ})
	}
	return Load(srcs, opt)
}

// Load reads and checks a configuration made of srcs, each overriding the
// keys of those before it. A configuration that is not fully usable is
// refused whole: the error is a *ConfigError (matching ErrConfig) naming
// every wrong key by its path; a source that cannot be read at all gives
// a plain error.
func Load(srcs []Source, opt LoadOptions) (*Config, error) {
	root := newNode("")
	for _, s := range srcs {
		var err error
		switch strings.ToLower(s.Format) {
		case "json":
			err = root.parseJSON(s.Data, s.Name)
		case "yaml", "yml", "":
			err = root.parseYAML(s.Data, s.Name)
		case "env":
			root.parseEnv(s.Environ, slices.Collect(maps.Keys(opt.Sections)))
		default:
			err = fmt.Errorf("%s: unknown format %q (json, yaml or env)", s.Name, s.Format)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	reg := opt.Actions
	if reg == nil {
		reg = DefaultActions()
	}
	b := &binder{}
	cfg := &Config{}
	cfg.Egress = readEgress(root.child("Egress"))
	egress := map[string]bool{}
	for _, e := range cfg.Egress {
		egress[strings.ToLower(e.Name)] = true
	}
	for _, n := range opt.EgressProviders {
		egress[strings.ToLower(n)] = true
	}
	defaults := readDefaults(root.child("CollectionRuleDefaults"), b)
	rulesNode := root.child("CollectionRules")
	if rulesNode != nil && rulesNode.value != nil && *rulesNode.value != "" && len(rulesNode.order) == 0 {
		b.add("CollectionRules", "expected a section of named rules, found a value")
	}
	for _, rn := range rulesNode.kids() {
		r := readRule(rn, b, reg, defaults, egress)
		if r != nil {
			cfg.Rules = append(cfg.Rules, r)
		}
	}
	names := slices.Sorted(maps.Keys(opt.Sections))
	for _, name := range names {
		n := root.child(name)
		if n == nil {
			n = newNode(name)
		}
		opt.Sections[name](newSettings(n, n.name, b))
	}
	for _, k := range root.kids() {
		read := false
		for _, s := range append([]string{"CollectionRules", "CollectionRuleDefaults", "Egress"}, names...) {
			read = read || strings.EqualFold(k.name, s)
		}
		if !read {
			cfg.Ignored = append(cfg.Ignored, k.name)
		}
	}
	if len(b.errs) > 0 {
		return nil, &ConfigError{Errors: b.errs}
	}
	return cfg, nil
}

// defaults are CollectionRuleDefaults: values rules leave out.
type defaults struct {
	egress        string
	window        time.Duration
	requestCount  int
	responseCount int
	limits        Limits
	hasLimits     [3]bool
}

func readDefaults(n *node, b *binder) defaults {
	d := defaults{limits: Limits{ActionCount: DefaultActionCount}}
	if n == nil {
		return d
	}
	s := newSettings(n, "CollectionRuleDefaults", b)
	a := s.Section("Actions")
	d.egress = a.String("Egress", false)
	a.Done()
	t := s.Section("Triggers")
	d.window = t.Duration("SlidingWindowDuration", 0, time.Second, 24*time.Hour)
	d.requestCount = t.Int("RequestCount", 0, 1, 1<<30)
	d.responseCount = t.Int("ResponseCount", 0, 1, 1<<30)
	t.Done()
	l := s.Section("Limits")
	d.hasLimits = [3]bool{l.Has("ActionCount"), l.Has("ActionCountSlidingWindowDuration"), l.Has("RuleDuration")}
	d.limits = readLimits(l, Limits{ActionCount: DefaultActionCount})
	l.Done()
	s.Done()
	return d
}

func readLimits(l *Settings, def Limits) Limits {
	return Limits{
		ActionCount:       l.Int("ActionCount", def.ActionCount, 1, 1<<30),
		ActionCountWindow: l.Duration("ActionCountSlidingWindowDuration", def.ActionCountWindow, time.Second, 24*time.Hour),
		RuleDuration:      l.Duration("RuleDuration", def.RuleDuration, time.Second, 365*24*time.Hour),
	}
}

// readEgress lists Egress:<Kind>:<Name> (Egress:Properties holds shared
// values, not providers).
func readEgress(n *node) []EgressProvider {
	var out []EgressProvider
	for _, kind := range n.kids() {
		if strings.EqualFold(kind.name, "Properties") {
			continue
		}
		for _, p := range kind.kids() {
			out = append(out, EgressProvider{Kind: kind.name, Name: p.name})
		}
	}
	return out
}

// validRuleName is what a rule name may hold: it becomes part of artifact
// file names and metric labels.
func validRuleName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func readRule(n *node, b *binder, reg *Registry, d defaults, egress map[string]bool) *Rule {
	path := "CollectionRules." + n.name
	if !validRuleName(n.name) {
		b.add(path, "a rule name may hold only letters, digits, '-', '_' and '.' (at most 128)")
	}
	if n.value != nil && *n.value != "" && len(n.order) == 0 {
		b.add(path, "expected a rule (Filters, Trigger, Actions, Limits), found a value")
		return nil
	}
	s := newSettings(n, path, b)
	r := &Rule{Name: n.name}
	for _, f := range s.List("Filters") {
		if flt, ok := readFilter(f); ok {
			r.Filters = append(r.Filters, flt)
		}
	}
	if !s.Has("Trigger") {
		s.Errorf("Trigger", "required: every rule needs a trigger (Type: Startup, EventCounter, EventMeter, AspNetRequestCount, AspNetRequestDuration, AspNetResponseStatus, EventPipeEvent, CPUUsage, GCHeapSize or ThreadpoolQueueLength)")
	} else {
		r.Trigger = readTrigger(s.Section("Trigger"), d)
	}
	actions := s.List("Actions")
	if len(actions) == 0 {
		s.Errorf("Actions", "required: give at least one action")
	}
	s.refs = map[string][]string{}
	names := map[string]bool{}
	for i, a := range actions {
		a.refs = s.refs
		spec := readAction(a, i, reg, d, egress)
		if spec == nil {
			continue
		}
		r.Actions = append(r.Actions, spec)
		if spec.Name != "" {
			key := strings.ToLower(spec.Name)
			if names[key] {
				a.Errorf("Name", "another action of this rule is already named %q", spec.Name)
			}
			names[key] = true
			var outs []string
			if spec.kind != nil {
				outs = spec.kind.Outputs
			}
			s.refs[key] = outs
		}
	}
	l := s.Section("Limits")
	r.Limits = readLimits(l, d.limits)
	l.Done()
	if r.Trigger.Type == TriggerStartup && r.Limits.ActionCount > 1 {
		// A Startup trigger fires once per process whatever the count.
		r.Limits.ActionCount = 1
	}
	s.Done()
	return r
}

func readFilter(f *Settings) (Filter, bool) {
	flt := Filter{Match: MatchType(f.Enum("MatchType", string(MatchExact), string(MatchExact), string(MatchContains)))}
	// Two forms: {Key, Value, MatchType} or {ProcessName: x, MatchType}.
	key := f.String("Key", false)
	value := f.String("Value", false)
	var short []FilterKey
	for _, k := range filterKeys {
		if v := f.String(string(k), false); v != "" {
			short = append(short, k)
			flt.Key, flt.Value = k, v
		}
	}
	ok := true
	switch {
	case key != "" && len(short) > 0:
		f.Errorf("", "give either Key and Value or %s: VALUE, not both", short[0])
		ok = false
	case len(short) > 1:
		f.Errorf("", "give one of ProcessId, ProcessName, CommandLine and RuntimeVersion per filter (add another filter for more)")
		ok = false
	case key != "":
		flt.Key, flt.Value = "", value
		for _, k := range filterKeys {
			if strings.EqualFold(key, string(k)) {
				flt.Key = k
			}
		}
		if flt.Key == "" {
			f.Errorf("Key", "%q is not one of ProcessId, ProcessName, CommandLine, RuntimeVersion", key)
			ok = false
		}
		if value == "" {
			f.Errorf("Value", "required: the value to compare the %s with", key)
			ok = false
		}
	case len(short) == 0:
		f.Errorf("", "give Key (ProcessId, ProcessName, CommandLine or RuntimeVersion) and Value")
		ok = false
	}
	if ok && flt.Key == FilterProcessID {
		if n, err := strconv.Atoi(flt.Value); err != nil || n <= 0 {
			f.Errorf("Value", "process id %q is not a positive whole number", flt.Value)
			ok = false
		} else if flt.Match == MatchContains {
			f.Errorf("MatchType", "a ProcessId filter compares the whole id: use Exact")
			ok = false
		}
	}
	f.Done()
	return flt, ok
}

func readAction(a *Settings, i int, reg *Registry, d defaults, egress map[string]bool) *ActionSpec {
	spec := &ActionSpec{Index: i}
	spec.Name = a.String("Name", false)
	if spec.Name != "" && strings.ContainsAny(spec.Name, ".()$") {
		a.Errorf("Name", "an action name must not contain '.', '(', ')' or '$' (it is used in $(Actions.NAME.OUTPUT))")
	}
	typ := a.String("Type", true)
	// Older dotnet-monitor configurations carry WaitForCompletion; actions
	// here always run one after the other, so it changes nothing.
	_ = a.Bool("WaitForCompletion", true)
	st := a.Section("Settings")
	if typ != "" {
		kind := reg.Lookup(typ)
		if kind == nil {
			a.Errorf("Type", "unknown action type %q (known: %s)", typ, strings.Join(reg.Names(), ", "))
		} else {
			spec.Type, spec.kind = kind.Name, kind
			if kind.Artifact {
				spec.Egress = st.String("Egress", false)
				if spec.Egress == "" {
					spec.Egress = d.egress
				}
				if spec.Egress != "" && !egress[strings.ToLower(spec.Egress)] {
					st.Errorf("Egress", "no egress provider is named %q; declare it under Egress:FileSystem:%s or Egress:S3Storage:%s, or leave Egress out to keep the artifact in the monitor's artifact directory", spec.Egress, spec.Egress, spec.Egress)
				}
			}
			act, err := kind.New(st)
			if err != nil {
				st.Errorf("", "%v", err)
			}
			spec.Action = act
		}
	}
	st.Done()
	a.Done()
	if spec.kind == nil {
		return nil
	}
	return spec
}

// Names lists the rules' names.
func (c *Config) Names() []string {
	out := make([]string, len(c.Rules))
	for i, r := range c.Rules {
		out[i] = r.Name
	}
	return out
}

// Describe writes a one-line summary of the rule: its filters, trigger,
// actions and limits.
func (r *Rule) Describe() string {
	var b strings.Builder
	b.WriteString(r.Trigger.Describe())
	b.WriteString(" -> ")
	for i, a := range r.Actions {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.Type)
		if a.Name != "" {
			b.WriteString(" (" + a.Name + ")")
		}
		if a.Egress != "" {
			b.WriteString(" to " + a.Egress)
		}
	}
	if len(r.Filters) > 0 {
		var fs []string
		for _, f := range r.Filters {
			op := "="
			if f.Match == MatchContains {
				op = "~"
			}
			fs = append(fs, string(f.Key)+op+f.Value)
		}
		sort.Strings(fs)
		b.WriteString("; processes " + strings.Join(fs, " and "))
	}
	fmt.Fprintf(&b, "; at most %d", r.Limits.ActionCount)
	if r.Limits.ActionCountWindow > 0 {
		b.WriteString(" per " + FormatDuration(r.Limits.ActionCountWindow))
	}
	if r.Limits.RuleDuration > 0 {
		b.WriteString(", for " + FormatDuration(r.Limits.RuleDuration))
	}
	return b.String()
}

// WriteListing writes one line per rule (its name and Describe), for
// clrdiag monitor --check-config and the monitor's start.
func (c *Config) WriteListing(w io.Writer) error {
	var b strings.Builder
	switch len(c.Rules) {
	case 0:
		b.WriteString("no collection rules\n")
	case 1:
		b.WriteString("1 collection rule:\n")
	default:
		fmt.Fprintf(&b, "%d collection rules:\n", len(c.Rules))
	}
	for _, r := range c.Rules {
		fmt.Fprintf(&b, "  %s: %s\n", r.Name, r.Describe())
	}
	for _, e := range c.Egress {
		fmt.Fprintf(&b, "egress provider %s (%s)\n", e.Name, e.Kind)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
