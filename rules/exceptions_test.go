package rules

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/exceptions"
)

// CollectExceptions reads dotnet-monitor's settings (Egress, Format,
// Filters with Include/Exclude lists of ExceptionFilter) and clrdiag's
// Duration.
func TestLoadCollectExceptions(t *testing.T) {
	cfg, err := loadYAML(t, `Egress:
  FileSystem:
    out: {DirectoryPath: /tmp}
CollectionRules:
  R:
    Trigger: {Type: Startup}
    Actions:
      - Name: Ex
        Type: CollectExceptions
        Settings:
          Egress: out
          Format: NewlineDelimitedJson
          Duration: "00:00:05"
          Filters:
            Include: [{ExceptionType: System.InvalidOperationException}, {TypeName: App.Orders, MethodName: Place, ModuleName: App.dll}]
            Exclude: [{MethodName: Ping}]
      - {Type: CollectExceptions}
      - {Type: Execute, Settings: {Path: /bin/echo, Arguments: "$(Actions.Ex.EgressPath)"}}
`)
	if err != nil {
		t.Fatal(err)
	}
	acts := cfg.Rules[0].Actions
	a := acts[0].Action.(*collectExceptions)
	want := exceptions.Filters{
		Include: []exceptions.Filter{{ExceptionType: "System.InvalidOperationException"}, {TypeName: "App.Orders", MethodName: "Place", ModuleName: "App.dll"}},
		Exclude: []exceptions.Filter{{MethodName: "Ping"}},
	}
	if a.format != "NewlineDelimitedJson" || a.duration != 5*time.Second || acts[0].Egress != "out" || !acts[0].Artifact() ||
		len(a.cfg.Filters.Include) != 2 || a.cfg.Filters.Include[1] != want.Include[1] || a.cfg.Filters.Exclude[0] != want.Exclude[0] {
		t.Fatalf("%+v egress %q", a, acts[0].Egress)
	}
	d := acts[1].Action.(*collectExceptions)
	if d.format != "PlainText" || d.duration != 30*time.Second || len(d.cfg.Filters.Include)+len(d.cfg.Filters.Exclude) != 0 || acts[1].Egress != "" {
		t.Fatalf("defaults %+v", d)
	}
	if got := cfg.Rules[0].Describe(); got != "Startup -> CollectExceptions (Ex) to out, CollectExceptions, Execute; at most 1" {
		t.Fatalf("%q", got)
	}
}

func TestCollectExceptionsErrors(t *testing.T) {
	rule := func(settings string) string {
		return "CollectionRules:\n  R:\n    Trigger: {Type: Startup}\n    Actions: [{Type: CollectExceptions, Settings: " + settings + "}]\n"
	}
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"format", rule("{Format: Xml}"),
			[]string{`CollectionRules.R.Actions[0].Settings.Format: "Xml" is not one of PlainText, NewlineDelimitedJson, JsonSequence`}},
		{"empty filter", rule("{Filters: {Include: [{}]}}"),
			[]string{"CollectionRules.R.Actions[0].Settings.Filters.Include[0]: give ExceptionType, MethodName, TypeName or ModuleName"}},
		{"misspelt filter key", rule("{Filters: {Exclude: [{ExceptionTyp: X}]}}"),
			[]string{"CollectionRules.R.Actions[0].Settings.Filters.Exclude[0].ExceptionTyp: unknown setting: did you mean ExceptionType?",
				"CollectionRules.R.Actions[0].Settings.Filters.Exclude[0]: give ExceptionType"}},
		{"unknown filters key", rule("{Filters: {Includes: [{MethodName: M}]}}"),
			[]string{"CollectionRules.R.Actions[0].Settings.Filters.Includes: unknown setting: did you mean Include?"}},
		{"duration", rule(`{Duration: "2.00:00:00"}`),
			[]string{"CollectionRules.R.Actions[0].Settings.Duration: 2.00:00:00 is out of range"}},
		{"egress", rule("{Egress: s3}"),
			[]string{`CollectionRules.R.Actions[0].Settings.Egress: no egress provider is named "s3"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadYAML(t, c.yaml)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
			if len(ce.Errors) != len(c.want) {
				t.Errorf("%d errors, want %d:\n%v", len(ce.Errors), len(c.want), err)
			}
		})
	}
}
