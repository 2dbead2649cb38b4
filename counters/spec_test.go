package counters

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseSpecs(t *testing.T) {
	tests := []struct {
		in   string
		want []Spec
	}{
		{"", []Spec{{Provider: "System.Runtime"}}},
		{"System.Runtime", []Spec{{Provider: "System.Runtime"}}},
		{"System.Runtime[cpu-usage,working-set]", []Spec{{Provider: "System.Runtime", Counters: []string{"cpu-usage", "working-set"}}}},
		{"System.Runtime[cpu-usage],Microsoft.AspNetCore.Hosting", []Spec{
			{Provider: "System.Runtime", Counters: []string{"cpu-usage"}}, {Provider: "Microsoft.AspNetCore.Hosting"}}},
		{`EventCounters\System.Runtime[gen-0-gc-count]`, []Spec{{Provider: "System.Runtime", Counters: []string{"gen-0-gc-count"}, EventCountersOnly: true}}},
		{"A[x],A[y,x]", []Spec{{Provider: "A", Counters: []string{"x", "y"}}}},
		{"A[x],A", []Spec{{Provider: "A"}}},
		{" A [ x , y ] , B ", []Spec{{Provider: "A", Counters: []string{"x", "y"}}, {Provider: "B"}}},
	}
	for _, tt := range tests {
		got, err := ParseSpecs(tt.in)
		if err != nil {
			t.Errorf("ParseSpecs(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseSpecs(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestParseSpecsErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"A[x", "never closed"},
		{"A]x", "closes no '['"},
		{"A[x]junk", "unexpected text"},
		{"A[x][y]", "more than one counter list"},
		{",A", "empty provider name"},
		{"A,,B", "empty provider name"},
		{"A,", "trailing ','"},
		{"[x]", "empty provider name"},
		{"A[]", "empty counter list"},
		{"A[x[y]]", "nested"},
		{`EventCounters\A,A`, "with and without the EventCounters"},
		{`EventCounters\`, "empty provider name"},
	}
	for _, tt := range tests {
		_, err := ParseSpecs(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseSpecs(%q) error = %v, want %q", tt.in, err, tt.want)
		}
	}
}

func FuzzParseSpecs(f *testing.F) {
	for _, s := range []string{"A[x,y],B", `EventCounters\A[b]`, "A[", "]", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		specs, err := ParseSpecs(s)
		if err != nil {
			return
		}
		if len(specs) == 0 {
			t.Fatalf("no specs and no error for %q", s)
		}
		for _, sp := range specs {
			if sp.Provider == "" || strings.ContainsAny(sp.Provider, "[],") {
				t.Fatalf("bad provider %q from %q", sp.Provider, s)
			}
		}
	})
}
