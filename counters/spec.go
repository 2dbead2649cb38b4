package counters

import (
	"fmt"
	"strings"
)

// eventCountersPrefix forces the legacy EventCounters view of a provider.
const eventCountersPrefix = `EventCounters\`

// Spec selects counters of one provider, as one item of dotnet-counters'
// --counters option.
type Spec struct {
	Provider string
	// Counters are the counter (or instrument) names to show; empty means
	// all of the provider's counters.
	Counters []string
	// EventCountersOnly is set by the EventCounters\ prefix: read the
	// provider as an EventSource with EventCounters even where a Meter of
	// the same name exists.
	EventCountersOnly bool
}

// DefaultProvider is what --counters defaults to.
const DefaultProvider = "System.Runtime"

// ParseSpecs parses the --counters syntax of dotnet-counters:
//
//	Provider[counter,counter],Provider,EventCounters\Provider[counter]
//
// Names in brackets select counters; a provider without brackets selects
// all of them. Duplicate providers are merged. An empty string means
// System.Runtime.
func ParseSpecs(s string) ([]Spec, error) {
	if strings.TrimSpace(s) == "" {
		return []Spec{{Provider: DefaultProvider}}, nil
	}
	var out []Spec
	i := 0
	for i <= len(s) {
		// Provider name: up to '[' or ','.
		j := i
		for j < len(s) && s[j] != '[' && s[j] != ',' {
			if s[j] == ']' {
				return nil, fmt.Errorf("--counters %q: ']' at offset %d closes no '['", s, j)
			}
			j++
		}
		name := strings.TrimSpace(s[i:j])
		spec := Spec{}
		if strings.HasPrefix(name, eventCountersPrefix) {
			spec.EventCountersOnly = true
			name = strings.TrimSpace(name[len(eventCountersPrefix):])
		}
		if name == "" {
			return nil, fmt.Errorf("--counters %q: empty provider name at offset %d", s, i)
		}
		spec.Provider = name
		if j < len(s) && s[j] == '[' {
			end := strings.IndexByte(s[j:], ']')
			if end < 0 {
				return nil, fmt.Errorf("--counters %q: '[' at offset %d is never closed", s, j)
			}
			list := s[j+1 : j+end]
			if strings.ContainsRune(list, '[') {
				return nil, fmt.Errorf("--counters %q: nested '[' in the counter list of %s", s, name)
			}
			for _, c := range strings.Split(list, ",") {
				if c = strings.TrimSpace(c); c != "" {
					spec.Counters = append(spec.Counters, c)
				}
			}
			if len(spec.Counters) == 0 {
				return nil, fmt.Errorf("--counters %q: empty counter list for %s; leave out the brackets to get all its counters", s, name)
			}
			j += end + 1
			rest := j
			for rest < len(s) && s[rest] == ' ' {
				rest++
			}
			if rest < len(s) && s[rest] == '[' {
				return nil, fmt.Errorf("--counters %q: %s has more than one counter list; put all its counters in one [...]", s, name)
			}
			if rest < len(s) && s[rest] != ',' {
				return nil, fmt.Errorf("--counters %q: unexpected text %q after the counter list of %s", s, s[rest:], name)
			}
			j = rest
		}
		out = append(out, spec)
		if j >= len(s) {
			break
		}
		i = j + 1 // skip ','
		if i == len(s) {
			return nil, fmt.Errorf("--counters %q: trailing ',' with no provider after it", s)
		}
	}
	return mergeSpecs(s, out)
}

func mergeSpecs(s string, specs []Spec) ([]Spec, error) {
	var out []Spec
	idx := map[string]int{}
	for _, sp := range specs {
		k := strings.ToLower(sp.Provider)
		i, ok := idx[k]
		if !ok {
			idx[k] = len(out)
			out = append(out, sp)
			continue
		}
		q := &out[i]
		if q.EventCountersOnly != sp.EventCountersOnly {
			return nil, fmt.Errorf("--counters %q: %s is given both with and without the EventCounters\\ prefix; use one form", s, sp.Provider)
		}
		if len(q.Counters) == 0 || len(sp.Counters) == 0 {
			q.Counters = nil // one of them asks for all
			continue
		}
		for _, c := range sp.Counters {
			if !contains(q.Counters, c) {
				q.Counters = append(q.Counters, c)
			}
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Wants reports whether the spec selects the counter name.
func (s *Spec) Wants(name string) bool {
	return len(s.Counters) == 0 || contains(s.Counters, name)
}
