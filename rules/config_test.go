package rules

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const highCPUYAML = `
Egress:
  FileSystem:
    artifacts:
      DirectoryPath: /tmp
CollectionRules:
  HighCpu:
    Filters:
      - Key: ProcessName
        Value: dotnet
      - CommandLine: myapp.dll
        MatchType: Contains
    Trigger:
      Type: EventCounter
      Settings:
        ProviderName: System.Runtime
        CounterName: cpu-usage
        GreaterThan: 70
        SlidingWindowDuration: "00:00:10"
    Actions:
      - Name: Trace
        Type: CollectTrace
        Settings:
          Profile: Cpu
          Duration: "00:01:00"
          Egress: artifacts
      - Type: Execute
        Settings:
          Path: /bin/echo
          Arguments: "uploaded $(Actions.Trace.EgressPath)"
    Limits:
      ActionCount: 2
      ActionCountSlidingWindowDuration: "1:00:00"
`

func loadYAML(t *testing.T, text string, env ...string) (*Config, error) {
	t.Helper()
	srcs := []Source{{Name: "rules.yaml", Data: []byte(text), Format: "yaml"}}
	if len(env) > 0 {
		srcs = append(srcs, Source{Name: "environment", Format: "env", Environ: env})
	}
	return Load(srcs, LoadOptions{})
}

func TestLoadYAML(t *testing.T) {
	cfg, err := loadYAML(t, highCPUYAML)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Rules) != 1 {
		t.Fatalf("rules: %v", cfg.Names())
	}
	r := cfg.Rules[0]
	if r.Name != "HighCpu" || len(r.Filters) != 2 || r.Filters[1].Key != FilterCommandLine || r.Filters[1].Match != MatchContains {
		t.Fatalf("rule %+v", r)
	}
	c := r.Trigger.Counter
	if r.Trigger.Type != TriggerEventCounter || c == nil || c.Provider != "System.Runtime" || c.Name != "cpu-usage" ||
		c.GreaterThan == nil || *c.GreaterThan != 70 || c.LessThan != nil || c.Window != 10*time.Second {
		t.Fatalf("trigger %+v %+v", r.Trigger, c)
	}
	if len(r.Actions) != 2 || r.Actions[0].Type != "CollectTrace" || r.Actions[0].Egress != "artifacts" || r.Actions[1].Type != "Execute" {
		t.Fatalf("actions %+v", r.Actions)
	}
	tr := r.Actions[0].Action.(*collectTrace)
	if tr.duration != time.Minute || len(tr.cfg.Providers) == 0 || tr.cfg.Providers[0].Name != "Microsoft-DotNETCore-SampleProfiler" {
		t.Fatalf("trace %+v", tr)
	}
	if r.Limits != (Limits{ActionCount: 2, ActionCountWindow: time.Hour}) {
		t.Fatalf("limits %+v", r.Limits)
	}
	if d := r.Describe(); !strings.Contains(d, "EventCounter System.Runtime/cpu-usage > 70 for 00:00:10") || !strings.Contains(d, "CollectTrace (Trace) to artifacts") {
		t.Fatalf("describe %q", d)
	}
}

// The same rule as JSON, and as the environment variables of dotnet-monitor's
// documentation (both spellings), load to the same rule.
func TestLoadJSONAndEnvironment(t *testing.T) {
	js := `{"CollectionRules": {"HighCpu": {
	  "Filters": [{"Key": "ProcessName", "Value": "dotnet", "MatchType": "Exact"}],
	  "Trigger": {"Type": "EventCounter", "Settings": {"ProviderName": "System.Runtime", "CounterName": "cpu-usage", "GreaterThan": 70, "SlidingWindowDuration": "00:00:10"}},
	  "Actions": [{"Type": "CollectDump", "Settings": {"Type": "Full"}}],
	  "Limits": {"ActionCount": 2, "ActionCountSlidingWindowDuration": "1:00:00"}}}}`
	fromJSON, err := Load([]Source{{Name: "rules.json", Data: []byte(js), Format: "json"}}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=/usr/bin",
		"DotnetMonitor_CollectionRules__HighCpu__Filters__0__Key=ProcessName",
		"DotnetMonitor_CollectionRules__HighCpu__Filters__0__Value=dotnet",
		"CollectionRules__HighCpu__Filters__0__MatchType=Exact",
		"CollectionRules__HighCpu__Trigger__Type=EventCounter",
		"CollectionRules__HighCpu__Trigger__Settings__ProviderName=System.Runtime",
		"collectionrules__highcpu__trigger__settings__countername=cpu-usage",
		"CollectionRules__HighCpu__Trigger__Settings__GreaterThan=70",
		"CollectionRules__HighCpu__Trigger__Settings__SlidingWindowDuration=00:00:10",
		"CollectionRules__HighCpu__Actions__0__Type=CollectDump",
		"CollectionRules__HighCpu__Actions__0__Settings__Type=Full",
		"CollectionRules__HighCpu__Limits__ActionCount=2",
		"CollectionRules__HighCpu__Limits__ActionCountSlidingWindowDuration=1:00:00",
	}
	fromEnv, err := Load([]Source{{Name: "environment", Format: "env", Environ: env}}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []*Config{fromJSON, fromEnv} {
		r := cfg.Rules[0]
		if r.Describe() != fromJSON.Rules[0].Describe() {
			t.Fatalf("%q != %q", r.Describe(), fromJSON.Rules[0].Describe())
		}
		if a := r.Actions[0].Action.(*collectDump); a.typ != dumpTypes["full"] {
			t.Fatalf("dump type %v", a.typ)
		}
	}
}

// An environment variable overrides one key of the file; the prefixed form
// overrides the plain one.
func TestEnvironmentOverridesFile(t *testing.T) {
	cfg, err := loadYAML(t, highCPUYAML,
		"CollectionRules__HighCpu__Trigger__Settings__GreaterThan=90",
		"DotnetMonitor_CollectionRules__HighCpu__Limits__ActionCount=4",
		"CollectionRules__HighCpu__Limits__ActionCount=3")
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Rules[0]
	if *r.Trigger.Counter.GreaterThan != 90 || r.Trigger.Counter.Name != "cpu-usage" || r.Limits.ActionCount != 4 {
		t.Fatalf("%+v %+v", r.Trigger.Counter, r.Limits)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(p, []byte(highCPUYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadFile(p, nil, LoadOptions{})
	if err != nil || len(cfg.Rules) != 1 {
		t.Fatal(cfg, err)
	}
	if _, err := LoadFile(filepath.Join(dir, "none.yaml"), nil, LoadOptions{}); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"CollectionRules": [`), 0o600)
	if _, err := LoadFile(bad, nil, LoadOptions{}); err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "bad.json: not valid JSON") {
		t.Fatalf("bad JSON: %v", err)
	}
}

// Each bad configuration is refused with an error naming the field.
func TestLoadErrors(t *testing.T) {
	const base = `CollectionRules:
  R:
    Trigger:
      Type: EventCounter
      Settings: {ProviderName: System.Runtime, CounterName: cpu-usage, GreaterThan: 70}
    Actions: [{Type: CollectDump}]
`
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"misspelt setting", strings.Replace(base, "GreaterThan", "GreaterThen", 1),
			[]string{"CollectionRules.R.Trigger.Settings.GreaterThen: unknown setting: did you mean GreaterThan?",
				"CollectionRules.R.Trigger.Settings.GreaterThan: give GreaterThan or LessThan"}},
		{"not a number", strings.Replace(base, "GreaterThan: 70", "GreaterThan: lots", 1),
			[]string{`CollectionRules.R.Trigger.Settings.GreaterThan: "lots" is not a number`}},
		{"no threshold", strings.Replace(base, ", GreaterThan: 70", "", 1),
			[]string{"CollectionRules.R.Trigger.Settings.GreaterThan: give GreaterThan or LessThan"}},
		{"empty range", strings.Replace(base, "GreaterThan: 70", "GreaterThan: 70, LessThan: 10", 1),
			[]string{"CollectionRules.R.Trigger.Settings.LessThan: 10 is not above GreaterThan 70"}},
		{"bad window", strings.Replace(base, "GreaterThan: 70", "GreaterThan: 70, SlidingWindowDuration: 10", 1),
			[]string{"CollectionRules.R.Trigger.Settings.SlidingWindowDuration: \"10\": give a unit"}},
		{"window too long", strings.Replace(base, "GreaterThan: 70", "GreaterThan: 70, SlidingWindowDuration: 2.00:00:00", 1),
			[]string{"CollectionRules.R.Trigger.Settings.SlidingWindowDuration: 2.00:00:00 is out of range: give 00:00:01 to 1.00:00:00"}},
		{"unknown trigger", strings.Replace(base, "Type: EventCounter", "Type: Sometimes", 1),
			[]string{`CollectionRules.R.Trigger.Type: unknown trigger type "Sometimes"`}},
		{"no trigger", "CollectionRules:\n  R:\n    Actions: [{Type: CollectDump}]\n",
			[]string{"CollectionRules.R.Trigger: required"}},
		{"no actions", "CollectionRules:\n  R:\n    Trigger: {Type: Startup}\n",
			[]string{"CollectionRules.R.Actions: required"}},
		{"unknown action", strings.Replace(base, "CollectDump", "CollectMagic", 1),
			[]string{`CollectionRules.R.Actions[0].Type: unknown action type "CollectMagic" (known: CollectDump, CollectExceptions, CollectGCDump`}},
		{"bad dump type", strings.Replace(base, "{Type: CollectDump}", "{Type: CollectDump, Settings: {Type: Huge}}", 1),
			[]string{`CollectionRules.R.Actions[0].Settings.Type: "Huge" is not one of Mini, Full, Triage, WithHeap`}},
		{"unknown egress", strings.Replace(base, "{Type: CollectDump}", "{Type: CollectDump, Settings: {Egress: s3}}", 1),
			[]string{`CollectionRules.R.Actions[0].Settings.Egress: no egress provider is named "s3"`}},
		{"bad reference", strings.Replace(base, "[{Type: CollectDump}]", "[{Name: D, Type: CollectDump}, {Type: Execute, Settings: {Path: /bin/true, Arguments: \"$(Actions.X.EgressPath) $(Actions.D.ExitCode)\"}}]", 1),
			[]string{`CollectionRules.R.Actions[1].Settings.Arguments: $(Actions.X.EgressPath) refers to action "X", which is not an earlier action of this rule (earlier actions: d)`,
				`CollectionRules.R.Actions[1].Settings.Arguments: $(Actions.D.ExitCode): action D has no output "ExitCode" (it has EgressPath)`}},
		{"later reference", strings.Replace(base, "[{Type: CollectDump}]", "[{Type: Execute, Settings: {Path: /bin/true, Arguments: \"$(Actions.D.EgressPath)\"}}, {Name: D, Type: CollectDump}]", 1),
			[]string{`refers to action "D", which is not an earlier action`}},
		{"bad filter", strings.Replace(base, "    Trigger:", "    Filters: [{Key: ProcessNom, Value: x}]\n    Trigger:", 1),
			[]string{`CollectionRules.R.Filters[0].Key: "ProcessNom" is not one of ProcessId`}},
		{"pid contains", strings.Replace(base, "    Trigger:", "    Filters: [{ProcessId: 12, MatchType: Contains}]\n    Trigger:", 1),
			[]string{"CollectionRules.R.Filters[0].MatchType: a ProcessId filter compares the whole id"}},
		{"filters not a list", strings.Replace(base, "    Trigger:", "    Filters: {Key: ProcessName}\n    Trigger:", 1),
			[]string{"CollectionRules.R.Filters: expected a list"}},
		{"bad limit", base + "    Limits: {ActionCount: 0}\n",
			[]string{"CollectionRules.R.Limits.ActionCount: 0 is out of range: give 1 to"}},
		{"trace both", strings.Replace(base, "{Type: CollectDump}", "{Type: CollectTrace, Settings: {Profile: Cpu, Providers: [{Name: X}]}}", 1),
			[]string{"CollectionRules.R.Actions[0].Settings.Providers: give Profile or Providers, not both"}},
		{"trace profile", strings.Replace(base, "{Type: CollectDump}", "{Type: CollectTrace, Settings: {Profile: Gpu}}", 1),
			[]string{`CollectionRules.R.Actions[0].Settings.Profile: unknown profile "Gpu"`}},
		{"status codes", `CollectionRules:
  R:
    Trigger: {Type: AspNetResponseStatus, Settings: {ResponseCount: 3, StatusCodes: ["500-599", "6000"]}}
    Actions: [{Type: CollectDump}]
`, []string{`CollectionRules.R.Trigger.Settings.StatusCodes[1]: "6000" is not a status code`}},
		{"bad rule name", strings.Replace(base, "  R:", "  R/x:", 1),
			[]string{"CollectionRules.R/x: a rule name may hold only"}},
		{"several at once", strings.Replace(strings.Replace(base, "GreaterThan", "GreaterThen", 1), "CollectDump", "CollectMagic", 1),
			[]string{"Settings.GreaterThen: unknown setting", "Settings.GreaterThan: give GreaterThan or LessThan", `Actions[0].Type: unknown action type "CollectMagic"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadYAML(t, c.yaml)
			if err == nil {
				t.Fatalf("loaded %v", cfg.Names())
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrConfig) {
				t.Fatalf("%T %v", err, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
			if len(ce.Errors) != len(c.want) && c.name != "status codes" {
				t.Errorf("%d errors, want %d:\n%v", len(ce.Errors), len(c.want), err)
			}
		})
	}
}

func TestLoadAllTriggersAndActions(t *testing.T) {
	y := `Egress:
  S3Storage:
    bucket: {BucketName: b}
CollectionRuleDefaults:
  Actions: {Egress: bucket}
  Limits: {ActionCount: 3}
CollectionRules:
  Start:
    Trigger: {Type: Startup}
    Actions:
      - {Type: SetEnvironmentVariable, Settings: {Name: A, Value: b}}
      - {Name: G, Type: GetEnvironmentVariable, Settings: {Name: HOME}}
      - {Type: LoadProfiler, Settings: {Path: /opt/p.so, Clsid: 55b9554d-6115-45a2-be1e-c80f7fa35369}}
      - {Type: Execute, Settings: {Path: /bin/echo, Arguments: "$(Actions.G.Value)", Timeout: 30s}}
  Meter:
    Trigger: {Type: EventMeter, Settings: {MeterName: M, InstrumentName: h, HistogramPercentile: 95, LessThan: 5}}
    Actions: [{Type: CollectGCDump}, {Type: CollectStacks, Settings: {Format: PlainText}}]
  Requests:
    Trigger: {Type: AspNetRequestCount, Settings: {RequestCount: 500, IncludePaths: ["/api/**/*"], ExcludePaths: ["/api/health"]}}
    Actions: [{Type: CollectLogs, Settings: {DefaultLevel: Information, FilterSpecs: {Microsoft: Warning}, Format: NewlineDelimitedJson}}]
  Slow:
    Trigger: {Type: AspNetRequestDuration, Settings: {RequestCount: 10, RequestDuration: "00:00:03"}}
    Actions: [{Type: CollectLiveMetrics, Settings: {Providers: [{ProviderName: System.Runtime, CounterNames: [cpu-usage]}]}}]
  Errors:
    Trigger: {Type: AspNetResponseStatus, Settings: {StatusCodes: ["500-599", 429], ResponseCount: 5}}
    Actions: [{Type: CollectTrace, Settings: {Providers: [{Name: Clrdiag-Test, Keywords: "0x3", EventLevel: Informational}], StoppingEvent: {ProviderName: Clrdiag-Test, EventName: Finish}}}]
  Event:
    Trigger: {Type: EventPipeEvent, Settings: {ProviderName: Clrdiag-Test, EventName: Finish, PayloadFilter: {code: "42"}, Count: 2}}
    Actions: [{Type: CollectDump, Settings: {Egress: bucket}}]
    Limits: {RuleDuration: "365.00:00:00"}
`
	cfg, err := loadYAML(t, y)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Rule{}
	for _, r := range cfg.Rules {
		got[r.Name] = r
	}
	if len(got) != 6 {
		t.Fatalf("%v", cfg.Names())
	}
	if got["Start"].Limits.ActionCount != 1 || got["Meter"].Limits.ActionCount != 3 {
		t.Fatalf("limits %+v %+v", got["Start"].Limits, got["Meter"].Limits)
	}
	if c := got["Meter"].Trigger.Counter; !c.Meter || *c.Percentile != 95 || *c.LessThan != 5 {
		t.Fatalf("meter %+v", c)
	}
	if a := got["Requests"].Trigger.AspNet; a.Count != 500 || a.Window != time.Minute || !a.matchesPath("/api/v1/orders") || a.matchesPath("/api/health") || a.matchesPath("/home") {
		t.Fatalf("aspnet %+v", a)
	}
	if a := got["Slow"].Trigger.AspNet; a.Duration != 3*time.Second || a.Count != 10 {
		t.Fatalf("slow %+v", a)
	}
	if a := got["Errors"].Trigger.AspNet; !a.matchesStatus(503) || !a.matchesStatus(429) || a.matchesStatus(404) {
		t.Fatalf("status %+v", a)
	}
	if e := got["Event"].Trigger.Event; e.Count != 2 || e.PayloadFilter["code"] != "42" || got["Event"].Limits.RuleDuration != 365*24*time.Hour {
		t.Fatalf("event %+v", e)
	}
	for _, r := range cfg.Rules {
		for _, a := range r.Actions {
			if a.Artifact() && a.Egress != "bucket" {
				t.Errorf("%s/%s egress %q, want the default", r.Name, a.Label(), a.Egress)
			}
		}
	}
	if ex := got["Start"].Actions[3].Action.(*execute); ex.timeout != 30*time.Second {
		t.Fatalf("execute %+v", ex)
	}
	lg := got["Requests"].Actions[0].Action.(*collectLogs)
	if lg.cfg.FilterSpecs() != "UseAppFilters;Microsoft:Warning" || lg.format != "NewlineDelimitedJson" {
		t.Fatalf("logs %q %q", lg.cfg.FilterSpecs(), lg.format)
	}
}

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"00:00:10": 10 * time.Second, "1:00:00": time.Hour, "1.00:00:00": 24 * time.Hour,
		"365.00:00:00": 365 * 24 * time.Hour, "00:00:01.5": 1500 * time.Millisecond, "00:01": time.Minute,
		"30s": 30 * time.Second, "1h30m": 90 * time.Minute, "0.00:00:00.0000001": 100,
	}
	for s, want := range good {
		d, err := ParseDuration(s)
		if err != nil || d != want {
			t.Errorf("%q: %v %v, want %v", s, d, err, want)
		}
		if err == nil {
			back, err := ParseDuration(FormatDuration(d))
			if err != nil || back != d {
				t.Errorf("%q: %s reads back as %v %v", s, FormatDuration(d), back, err)
			}
		}
	}
	for _, s := range []string{"", "10", "-00:00:01", "00:60:00", "24:00:00", "1.2.3", "x", "00:00:00.12345678", "-5s", "::"} {
		if d, err := ParseDuration(s); err == nil {
			t.Errorf("%q: %v, want an error", s, d)
		}
	}
}

func TestMatchPath(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		{"**/*", "/anything/at/all", true},
		{"/images/**/*", "/images/logo.png", true},
		{"/images/**/*", "/images/products/1.png", true},
		{"/images/**/*", "/index/header.png", false},
		{"**/*.js", "/script.js", true},
		{"**/*.js", "/path/sub/script.js", true},
		{"**/*.js", "/script.js/page.html", false},
		{"**/sub/*.html", "/path/sub/page.html", true},
		{"**/sub/*.html", "/sub/page.html", true},
		{"**/sub/*.html", "/sub/script.js", false},
		{"/api/health", "/API/Health", true},
		{"/api/*", "/api/a/b", false},
		{"/api/**", "/api/a/b", true},
	}
	for _, c := range cases {
		if got := MatchPath(c.p, c.s); got != c.want {
			t.Errorf("MatchPath(%q, %q) = %v", c.p, c.s, got)
		}
	}
}

func TestFilterMatches(t *testing.T) {
	p := ProcessInfo{PID: 42, Name: "MyApp", CommandLine: "dotnet /app/MyApp.dll --port 80", RuntimeVersion: "8.0.34"}
	cases := []struct {
		f    Filter
		want bool
	}{
		{Filter{FilterProcessName, "myapp", MatchExact}, true},
		{Filter{FilterProcessName, "app", MatchExact}, false},
		{Filter{FilterProcessName, "app", MatchContains}, true},
		{Filter{FilterProcessID, "42", MatchExact}, true},
		{Filter{FilterProcessID, "4", MatchExact}, false},
		{Filter{FilterCommandLine, "myapp.dll", MatchContains}, true},
		{Filter{FilterRuntimeVersion, "8.0.", MatchContains}, true},
		{Filter{FilterRuntimeVersion, "10.0.", MatchContains}, false},
	}
	for _, c := range cases {
		if got := c.f.Matches(p); got != c.want {
			t.Errorf("%+v: %v", c.f, got)
		}
	}
}

func TestSplitArgs(t *testing.T) {
	got, err := SplitArgs(`a "b c" d\e "x\"y" ""`)
	if err != nil || strings.Join(got, "|") != `a|b c|d\e|x"y|` {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := SplitArgs(`"open`); err == nil {
		t.Fatal("unbalanced quote accepted")
	}
}
