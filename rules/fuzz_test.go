package rules

import (
	"strings"
	"testing"
)

// FuzzLoad reads arbitrary YAML, JSON and environment text: a
// configuration is loaded or refused with an error, never a panic.
func FuzzLoad(f *testing.F) {
	f.Add(highCPUYAML, uint8(0))
	f.Add(`{"CollectionRules": {"R": {"Trigger": {"Type": "Startup"}, "Actions": [{"Type": "Execute", "Settings": {"Path": "/x", "Arguments": "$(Actions.A.B)"}}]}}}`, uint8(1))
	f.Add("CollectionRules__R__Trigger__Type=AspNetRequestDuration\nCollectionRules__R__Actions__0__Type=CollectDump\nCollectionRules__R__Trigger__Settings__IncludePaths__0=/**/*", uint8(2))
	f.Add("a: &x [*x]\nCollectionRules: {R: {Filters: [{CommandLine: x, Key: y}]}}", uint8(0))
	f.Fuzz(func(t *testing.T, text string, format uint8) {
		src := Source{Name: "fuzz", Data: []byte(text)}
		switch format % 3 {
		case 0:
			src.Format = "yaml"
		case 1:
			src.Format = "json"
		case 2:
			src.Format, src.Environ = "env", strings.Split(text, "\n")
		}
		cfg, err := Load([]Source{src}, LoadOptions{})
		if err == nil {
			for _, r := range cfg.Rules {
				_ = r.Describe()
			}
			var b strings.Builder
			_ = cfg.WriteListing(&b)
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"00:00:10", "1.00:00:00", "30s", "10675199.02:48:05.4775807", "1:2:3.1234567"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err == nil && d < 0 {
			t.Fatalf("%q: negative %v", s, d)
		}
	})
}

func FuzzMatchPath(f *testing.F) {
	f.Add("/api/**/*", "/api/a/b")
	f.Add("**/*.js", "/x/y.js")
	f.Fuzz(func(t *testing.T, p, s string) {
		if len(p) > 64 || len(s) > 256 {
			return // the patterns of a configuration are short
		}
		_ = MatchPath(p, s)
	})
}
