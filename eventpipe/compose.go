package eventpipe

import (
	"fmt"
	"strconv"
	"strings"
)

// Request is what a user asked for on the command line, before it is
// turned into providers: the fields mirror dotnet-trace's options.
type Request struct {
	Providers     string   // --providers
	Profiles      []string // --profile (each may itself be a comma list)
	ClrEvents     string   // --clrevents kw+kw
	ClrEventLevel string   // --clreventlevel (default Informational, as dotnet-trace)
	// Rundown is --rundown: "" (the profiles decide), "true", "false", or a
	// hex keyword such as 0x80020139.
	Rundown string
}

// Source says which option enabled a provider.
type Source string

// The sources of a composed provider.
const (
	FromProviders Source = "--providers"
	FromProfile   Source = "--profile"
	FromClrEvents Source = "--clrevents"
	FromDefault   Source = "default profile"
)

// Composed is a provider with the option that enabled it.
type Composed struct {
	Provider
	EnabledBy string
}

// Plan is the outcome of Compose: the providers of the session, its rundown
// and any warnings for the user.
type Plan struct {
	Providers []Composed
	// RundownKeyword is the rundown keyword to request; 0 means no rundown.
	RundownKeyword uint64
	// DropRundownOnFallback: when the runtime cannot take a custom rundown
	// keyword, drop rundown entirely instead of using the default.
	DropRundownOnFallback bool
	Warnings              []string
}

// ProviderList returns the plain providers of the plan.
func (p *Plan) ProviderList() []Provider {
	out := make([]Provider, len(p.Providers))
	for i, c := range p.Providers {
		out[i] = c.Provider
	}
	return out
}

// Config returns the session configuration of the plan: its providers and
// rundown, everything else at the defaults (a caller sets the buffer size,
// stackwalk and buffering on the result). It is the one mapping from a Plan
// to a Config.
func (p *Plan) Config() Config {
	return Config{
		Providers:             p.ProviderList(),
		RundownKeyword:        p.RundownKeyword,
		NoRundown:             p.RundownKeyword == 0,
		DropRundownOnFallback: p.DropRundownOnFallback,
	}
}

// Compose merges --providers, --profile and --clrevents the way dotnet-trace
// does: explicit providers first (duplicates merged), then the profiles'
// providers where not already present, then the runtime provider from
// --clrevents unless it is already there (with a warning). With nothing asked
// for, the default profiles are used.
func Compose(req Request) (*Plan, error) {
	plan := &Plan{}
	explicit, err := ParseProviders(req.Providers)
	if err != nil {
		return nil, err
	}
	for _, p := range explicit {
		if looksLikeGUID(p.Name) {
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("provider %s looks like a GUID; EventPipe enables providers by name, so it will probably match nothing", p.Name))
		}
		plan.Providers = append(plan.Providers, Composed{Provider: p, EnabledBy: string(FromProviders)})
	}
	var profileNames []string
	for _, list := range req.Profiles {
		for _, n := range strings.Split(list, ",") {
			if n = strings.TrimSpace(n); n != "" {
				profileNames = append(profileNames, n)
			}
		}
	}
	usingDefault := false
	if len(profileNames) == 0 && len(explicit) == 0 && strings.TrimSpace(req.ClrEvents) == "" {
		profileNames = DefaultProfileNames()
		usingDefault = true
	}
	var rundown uint64
	customRundown := false
	for _, name := range profileNames {
		prof, ok := LookupProfile(name)
		if !ok {
			known := make([]string, 0, 8)
			for _, p := range Profiles() {
				known = append(known, p.Name)
			}
			return nil, fmt.Errorf("--profile: unknown profile %q; known profiles: %s (see 'clrdiag trace list-profiles')", name, strings.Join(known, ", "))
		}
		by := "--profile " + prof.Name
		if usingDefault {
			by = string(FromDefault) + " " + prof.Name
		}
		for _, p := range prof.Providers {
			if plan.has(p.Name) {
				continue
			}
			plan.Providers = append(plan.Providers, Composed{Provider: p, EnabledBy: by})
		}
		if prof.RundownKeyword != 0 {
			rundown |= prof.RundownKeyword
			customRundown = true
			plan.DropRundownOnFallback = plan.DropRundownOnFallback || prof.DropRundownOnFallback
		}
	}
	if ce := strings.TrimSpace(req.ClrEvents); ce != "" {
		kw, err := ParseClrEvents(ce)
		if err != nil {
			return nil, err
		}
		level := LevelInformational // dotnet-trace's default for --clrevents
		if strings.TrimSpace(req.ClrEventLevel) != "" {
			if level, err = ParseLevel(req.ClrEventLevel); err != nil {
				return nil, fmt.Errorf("--clreventlevel: %w", err)
			}
		}
		if plan.has(ProviderRuntime) {
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("--clrevents ignored: %s is already enabled by --providers or --profile", ProviderRuntime))
		} else {
			plan.Providers = append(plan.Providers, Composed{
				Provider:  Provider{Name: ProviderRuntime, Keywords: kw, Level: level},
				EnabledBy: string(FromClrEvents),
			})
		}
	}
	if !customRundown {
		rundown = DefaultRundownKeyword
	}
	switch r := strings.ToLower(strings.TrimSpace(req.Rundown)); r {
	case "":
	case "true", "1":
		rundown |= DefaultRundownKeyword
	case "false", "0":
		rundown = 0
		plan.DropRundownOnFallback = false
	default:
		kw, err := strconv.ParseUint(strings.TrimPrefix(r, "0x"), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("--rundown %q: use true, false or a hex keyword such as 0x80020139", req.Rundown)
		}
		rundown = kw
	}
	plan.RundownKeyword = rundown
	if len(plan.Providers) == 0 {
		return nil, fmt.Errorf("no providers to enable: give --providers, --profile or --clrevents")
	}
	return plan, nil
}

func (p *Plan) has(name string) bool {
	for _, c := range p.Providers {
		if strings.EqualFold(c.Name, name) {
			return true
		}
	}
	return false
}

func looksLikeGUID(s string) bool {
	t := strings.Trim(s, "{}")
	if len(t) != 36 {
		return false
	}
	for i, c := range t {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
	}
	return true
}
