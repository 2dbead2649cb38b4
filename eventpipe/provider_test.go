package eventpipe

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseProviders(t *testing.T) {
	tests := []struct {
		spec string
		want []Provider
	}{
		{"Foo", []Provider{{Name: "Foo", Level: LevelInformational}}},
		{"Foo:1", []Provider{{Name: "Foo", Keywords: 1, Level: LevelInformational}}},
		{"Foo:0x1F:5", []Provider{{Name: "Foo", Keywords: 0x1F, Level: LevelVerbose}}},
		{"Foo:1F", []Provider{{Name: "Foo", Keywords: 0x1F, Level: LevelInformational}}},
		{"Foo:0xFFFFFFFFFFFFFFFF", []Provider{{Name: "Foo", Keywords: ^uint64(0), Level: LevelInformational}}},
		{"Foo::4:", []Provider{{Name: "Foo", Level: LevelInformational}}},
		{"Foo::verbose", []Provider{{Name: "Foo", Level: LevelVerbose}}},
		{"Foo::WARNING", []Provider{{Name: "Foo", Level: LevelWarning}}},
		{"Foo::LogAlways", []Provider{{Name: "Foo", Level: LevelLogAlways}}},
		{"Foo::9", []Provider{{Name: "Foo", Level: LevelVerbose}}}, // clamped
		{"Foo:1:2:EventCounterIntervalSec=1", []Provider{{Name: "Foo", Keywords: 1, Level: LevelError, Args: []Arg{{"EventCounterIntervalSec", "1"}}}}},
		{"Foo:::A=1;B=2", []Provider{{Name: "Foo", Level: LevelInformational, Args: []Arg{{"A", "1"}, {"B", "2"}}}}},
		{`Foo:::A="x;y=z";B=2`, []Provider{{Name: "Foo", Level: LevelInformational, Args: []Arg{{"A", "x;y=z"}, {"B", "2"}}}}},
		{`Foo:::A="1,2",Bar`, []Provider{{Name: "Foo", Level: LevelInformational, Args: []Arg{{"A", "1,2"}}}, {Name: "Bar", Level: LevelInformational}}},
		{`Foo:::Spec="a\r\nb"`, []Provider{{Name: "Foo", Level: LevelInformational, Args: []Arg{{"Spec", "a\r\nb"}}}}},
		{`Foo:::U=\u0041`, []Provider{{Name: "Foo", Level: LevelInformational, Args: []Arg{{"U", "A"}}}}},
		{"Foo:::Url=http://x:80/", []Provider{{Name: "Foo", Level: LevelInformational, Args: []Arg{{"Url", "http://x:80/"}}}}},
		{"Foo,Bar:2", []Provider{{Name: "Foo", Level: LevelInformational}, {Name: "Bar", Keywords: 2, Level: LevelInformational}}},
		{" Foo , ,Bar", []Provider{{Name: "Foo", Level: LevelInformational}, {Name: "Bar", Level: LevelInformational}}},
		// Merging: keywords OR'd, most verbose level wins, args from one entry.
		{"Foo:1:2,Foo:2:4", []Provider{{Name: "Foo", Keywords: 3, Level: LevelInformational}}},
		{"Foo:1:5,foo:2:4:A=1", []Provider{{Name: "Foo", Keywords: 3, Level: LevelVerbose, Args: []Arg{{"A", "1"}}}}},
		{"Foo:1:5,Foo::0", []Provider{{Name: "Foo", Keywords: 1, Level: LevelLogAlways}}},
		{"", nil},
	}
	for _, tt := range tests {
		got, err := ParseProviders(tt.spec)
		if err != nil {
			t.Errorf("ParseProviders(%q): %v", tt.spec, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseProviders(%q) =\n %+v\nwant\n %+v", tt.spec, got, tt.want)
		}
	}
}

func TestParseProvidersErrors(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"Foo:0x1G", "not hexadecimal"},
		{"Foo:1FFFFFFFFFFFFFFFF", "do not fit in 64 bits"},
		{"Foo::-1", "must be 0 (LogAlways) to 5"},
		{"Foo::loud", "unknown; use a number"},
		{":1", "name is empty"},
		{"Foo:::A", "expected Key=Value"},
		{`Foo:::A=x"y`, "unbalanced quotes"},
		{"Foo:::A=1,Foo:::B=2", "given twice with arguments"},
		{`Foo:::A=\u00`, "four hex digits"},
	}
	for _, tt := range tests {
		_, err := ParseProviders(tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseProviders(%q) error = %v, want it to contain %q", tt.spec, err, tt.want)
		}
	}
}

func TestArgStringRoundTrip(t *testing.T) {
	p := Provider{Name: "P", Args: []Arg{{"A", "x;y"}, {"B=", "2"}, {"C", "plain"}}}
	s := p.ArgString()
	if s != `A="x;y";"B="=2;C=plain` {
		t.Fatalf("ArgString = %s", s)
	}
	back, err := parseArgs(s)
	if err != nil || !reflect.DeepEqual(back, p.Args) {
		t.Fatalf("parseArgs(%s) = %v, %v", s, back, err)
	}
}

func TestParseClrEvents(t *testing.T) {
	kw, err := ParseClrEvents("GC+jit+Exception+waithandle")
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(0x1 | 0x10 | 0x8000 | 0x400_00000000); kw != want {
		t.Fatalf("keywords = %#x, want %#x", kw, want)
	}
	if _, err := ParseClrEvents("gc+bogus"); err == nil || !strings.Contains(err.Error(), `"bogus"`) {
		t.Fatalf("unknown keyword error = %v", err)
	}
}

func TestCompose(t *testing.T) {
	// Nothing asked: the two default profiles, default rundown.
	p, err := Compose(Request{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Providers) != 2 || p.Providers[0].Name != ProviderRuntime || p.Providers[0].Keywords != 0x100003801D ||
		p.Providers[1].Name != ProviderSampleProfiler || p.RundownKeyword != DefaultRundownKeyword {
		t.Fatalf("default plan = %+v", p)
	}

	// Explicit providers win over a profile's definition of the same provider.
	p, err = Compose(Request{Providers: ProviderRuntime + ":0x8:5", Profiles: []string{"dotnet-common"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Providers) != 1 || p.Providers[0].Keywords != 0x8 || p.Providers[0].EnabledBy != "--providers" {
		t.Fatalf("precedence plan = %+v", p.Providers)
	}

	// --clrevents is ignored, with a warning, when the runtime provider is present.
	p, err = Compose(Request{Profiles: []string{"gc-verbose"}, ClrEvents: "jit"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Providers) != 1 || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "--clrevents ignored") {
		t.Fatalf("clrevents plan = %+v", p)
	}

	// --clrevents alone adds the runtime provider, at Informational by
	// default as dotnet-trace, or at --clreventlevel.
	p, err = Compose(Request{ClrEvents: "gc+exception"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Providers) != 1 || p.Providers[0].Level != LevelInformational {
		t.Fatalf("clrevents default level: plan = %+v", p.Providers)
	}
	p, err = Compose(Request{ClrEvents: "gc+exception", ClrEventLevel: "warning"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Providers) != 1 || p.Providers[0].Keywords != 0x8001 || p.Providers[0].Level != LevelWarning {
		t.Fatalf("clrevents-only plan = %+v", p.Providers)
	}

	// gc-collect asks for a custom rundown keyword and drops rundown on fallback.
	p, err = Compose(Request{Profiles: []string{"gc-collect"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.RundownKeyword != 0x1 || !p.DropRundownOnFallback || len(p.Providers) != 2 {
		t.Fatalf("gc-collect plan = %+v", p)
	}
	// --rundown false and a custom keyword.
	if p, _ = Compose(Request{Profiles: []string{"gc-collect"}, Rundown: "false"}); p.RundownKeyword != 0 {
		t.Fatalf("--rundown false: %#x", p.RundownKeyword)
	}
	if p, _ = Compose(Request{Providers: "Foo", Rundown: "0x10"}); p.RundownKeyword != 0x10 {
		t.Fatalf("--rundown 0x10: %#x", p.RundownKeyword)
	}
	if p, _ = Compose(Request{Profiles: []string{"gc-collect"}, Rundown: "true"}); p.RundownKeyword != 0x1|DefaultRundownKeyword {
		t.Fatalf("--rundown true: %#x", p.RundownKeyword)
	}
	if _, err = Compose(Request{Profiles: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "list-profiles") {
		t.Fatalf("unknown profile error = %v", err)
	}
	if _, err = Compose(Request{Providers: "Foo", Rundown: "maybe"}); err == nil {
		t.Fatal("bad --rundown accepted")
	}
	p, _ = Compose(Request{Providers: "{8E9F5090-2D75-4D03-8A81-E5AFBF85DAF1}"})
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "GUID") {
		t.Fatalf("GUID warning missing: %+v", p.Warnings)
	}
}

func FuzzParseProviders(f *testing.F) {
	for _, s := range []string{"Foo:1:2:A=1;B=2", `Foo:::A="x;y"`, "a,b,c", `X:::U=\u0041\n`, "::::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParseProviders(s)
		if err != nil {
			return
		}
		for _, p := range ps {
			if p.Name == "" || p.Level > LevelVerbose {
				t.Fatalf("invalid provider %+v from %q", p, s)
			}
			// Arguments survive the wire form the runtime parses: split
			// on ';' and '=' outside quotes, quotes removed, and no
			// backslash escapes (those belong to the command line and are
			// already undone: a key \\u parses to \u, which is sent as
			// is). A '"' in a key or value cannot be sent, as with the
			// .NET client.
			if len(p.Args) > 0 && !strings.Contains(fmt.Sprint(p.Args), `"`) {
				back := wireArgs(p.ArgString())
				if !slices.Equal(back, p.Args) {
					t.Fatalf("wire round trip of %q changed args %q -> %q (%q)", s, p.Args, back, p.ArgString())
				}
			}
		}
	})
}

// wireArgs parses the filter data "K=V;K=V" as the runtime's side does:
// quotes group, no escapes.
func wireArgs(s string) []Arg {
	var out []Arg
	for _, kv := range splitOutsideQuotes(s, ';') {
		if kv == "" {
			continue
		}
		pair := splitOutsideQuotes(kv, '=')
		unq := func(s string) string {
			if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
				return s[1 : len(s)-1]
			}
			return s
		}
		out = append(out, Arg{Key: unq(pair[0]), Value: unq(strings.Join(pair[1:], "="))})
	}
	return out
}

func TestFilterEventIDs(t *testing.T) {
	ps := []Provider{{Name: "A"}, {Name: "B"}}
	if err := FilterEventIDs(ps, "a:1, 2,3"); err != nil {
		t.Fatal(err)
	}
	if err := FilterEventIDs(ps, "B:-7"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ps[0].EventIDs, []uint32{1, 2, 3}) || ps[0].EventIDsDeny || !slices.Equal(ps[1].EventIDs, []uint32{7}) || !ps[1].EventIDsDeny {
		t.Fatalf("%+v", ps)
	}
	for spec, want := range map[string]string{
		"nocolon": "use Provider:1,2,3",
		":1":      "use Provider:1,2,3",
		"A:x":     `"x" is not an event id`,
		"C:1":     "provider C is not enabled",
	} {
		if err := FilterEventIDs(ps, spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", spec, err, want)
		}
	}
}
