package eventpipe

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Level is an EventPipe/EventSource verbosity level. Higher is more verbose,
// except LogAlways (0), which enables every level.
type Level uint32

// The levels, as EventLevel in .NET.
const (
	LevelLogAlways     Level = 0
	LevelCritical      Level = 1
	LevelError         Level = 2
	LevelWarning       Level = 3
	LevelInformational Level = 4
	LevelVerbose       Level = 5
)

var levelNames = [...]string{"LogAlways", "Critical", "Error", "Warning", "Informational", "Verbose"}

func (l Level) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return "Level(" + strconv.FormatUint(uint64(l), 10) + ")"
}

// covers reports whether enabling l enables at least everything m enables.
func (l Level) covers(m Level) bool {
	if l == LevelLogAlways {
		return true
	}
	if m == LevelLogAlways {
		return false
	}
	return l >= m
}

// ParseLevel parses a level the way dotnet-trace does: a number (values
// above 5 mean Verbose) or a name in any case.
func ParseLevel(s string) (Level, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return LevelInformational, nil
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("level %q: must be 0 (LogAlways) to 5 (Verbose), or a name", s)
		}
		if n > int64(LevelVerbose) {
			n = int64(LevelVerbose)
		}
		return Level(n), nil
	}
	for i, name := range levelNames {
		if strings.EqualFold(t, name) {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("level %q: unknown; use a number 0-5 or one of logalways, critical, error, warning, informational, verbose", s)
}

// Arg is one provider argument (FilterData key and value), such as
// EventCounterIntervalSec=1.
type Arg struct {
	Key, Value string
}

// Provider is one EventPipe provider configuration.
type Provider struct {
	Name     string
	Keywords uint64
	Level    Level
	Args     []Arg
	// EventIDs, when non-nil, restricts the provider to these event ids
	// (CollectTracing5 and later); an empty non-nil slice enables none.
	EventIDs []uint32
	// EventIDsDeny turns EventIDs into a deny list.
	EventIDsDeny bool
}

// ArgString renders the arguments in the wire form "K=V;K=V", quoting a key
// or value that holds ';' or '=' in double quotes, as the .NET client does.
// Keys and values are sent as they are: the command line's backslash
// escapes were undone by ParseProviders, and the runtime reads none.
func (p *Provider) ArgString() string {
	var b strings.Builder
	for i, a := range p.Args {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(quoteArg(a.Key))
		b.WriteByte('=')
		b.WriteString(quoteArg(a.Value))
	}
	return b.String()
}

func quoteArg(s string) string {
	if strings.ContainsAny(s, ";=") {
		return `"` + s + `"`
	}
	return s
}

// Arg returns the value of argument key and whether it is present.
func (p *Provider) Arg(key string) (string, bool) {
	for _, a := range p.Args {
		if a.Key == key {
			return a.Value, true
		}
	}
	return "", false
}

func (p Provider) String() string {
	s := fmt.Sprintf("%s:0x%X:%d", p.Name, p.Keywords, p.Level)
	if len(p.Args) > 0 {
		s += ":" + p.ArgString()
	}
	return s
}

// ParseProviders parses dotnet-trace's --providers syntax:
//
//	Name[:Keywords[:Level[:Key=Value;Key=Value]]][,Name...]
//
// Keywords are always hexadecimal (with or without 0x; empty means 0),
// Level is a number or a name (default Informational), and argument values
// that contain ';' or '=' are quoted with '"'. Backslash escapes in
// arguments (\n, \t, \\, \", \uXXXX) are unescaped. Commas inside quotes do
// not split providers. Entries naming the same provider are merged as
// MergeProviders does.
func ParseProviders(spec string) ([]Provider, error) {
	var out []Provider
	for _, item := range splitOutsideQuotes(spec, ',') {
		if strings.TrimSpace(item) == "" {
			continue
		}
		p, err := parseProvider(item)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return MergeProviders(out)
}

func parseProvider(item string) (Provider, error) {
	parts := strings.SplitN(item, ":", 4)
	p := Provider{Name: strings.TrimSpace(parts[0]), Level: LevelInformational}
	if p.Name == "" {
		return p, fmt.Errorf("provider %q: the name is empty", item)
	}
	if len(parts) > 1 {
		k := strings.TrimSpace(parts[1])
		if k != "" {
			h := strings.TrimPrefix(strings.TrimPrefix(k, "0x"), "0X")
			v, err := strconv.ParseUint(h, 16, 64)
			if err != nil {
				var ne *strconv.NumError
				if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
					return p, fmt.Errorf("provider %s: keywords %q do not fit in 64 bits", p.Name, k)
				}
				return p, fmt.Errorf("provider %s: keywords %q are not hexadecimal (write e.g. 0x1F or 1F)", p.Name, k)
			}
			p.Keywords = v
		}
	}
	if len(parts) > 2 {
		l, err := ParseLevel(parts[2])
		if err != nil {
			return p, fmt.Errorf("provider %s: %w", p.Name, err)
		}
		p.Level = l
	}
	if len(parts) > 3 && parts[3] != "" {
		args, err := parseArgs(parts[3])
		if err != nil {
			return p, fmt.Errorf("provider %s: %w", p.Name, err)
		}
		p.Args = args
	}
	return p, nil
}

// parseArgs parses "K=V;K=V" with optional double quotes around keys and
// values.
func parseArgs(s string) ([]Arg, error) {
	var args []Arg
	for _, kv := range splitOutsideQuotes(s, ';') {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		pair := splitOutsideQuotes(kv, '=')
		if len(pair) < 2 {
			return nil, fmt.Errorf("argument %q: expected Key=Value", kv)
		}
		key, err := unquoteArg(pair[0])
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, fmt.Errorf("argument %q: the key is empty", kv)
		}
		val, err := unquoteArg(strings.Join(pair[1:], "="))
		if err != nil {
			return nil, err
		}
		args = append(args, Arg{Key: key, Value: val})
	}
	return args, nil
}

func unquoteArg(s string) (string, error) {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if strings.Contains(s, `"`) {
		return "", fmt.Errorf("argument %q: unbalanced quotes", s)
	}
	return unescape(s)
}

// unescape undoes the backslash escapes .NET's Regex.Unescape understands.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'a':
			b.WriteByte('\a')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case 'e':
			b.WriteByte(0x1b)
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("argument %q: \\u needs four hex digits", s)
			}
			v, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("argument %q: \\u needs four hex digits", s)
			}
			b.WriteRune(rune(v))
			i += 4
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			b.WriteRune(r)
			i += n - 1
		}
	}
	return b.String(), nil
}

// splitOutsideQuotes splits s on sep where sep is not inside double quotes.
func splitOutsideQuotes(s string, sep byte) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted
		case sep:
			if !quoted {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// MergeProviders merges entries that name the same provider (names compare
// case-insensitively): keywords are OR'd, the most verbose level wins
// (LogAlways beats all), and arguments may come from at most one entry.
// The order of first appearance is kept.
func MergeProviders(ps []Provider) ([]Provider, error) {
	var out []Provider
	index := map[string]int{}
	for _, p := range ps {
		key := strings.ToLower(p.Name)
		i, ok := index[key]
		if !ok {
			index[key] = len(out)
			out = append(out, p)
			continue
		}
		q := &out[i]
		q.Keywords |= p.Keywords
		if p.Level.covers(q.Level) {
			q.Level = p.Level
		}
		if len(p.Args) > 0 {
			if len(q.Args) > 0 {
				return nil, fmt.Errorf("provider %s is given twice with arguments (%q and %q); give its arguments once", p.Name, q.ArgString(), p.ArgString())
			}
			q.Args = p.Args
		}
		if p.EventIDs != nil {
			q.EventIDs = append(q.EventIDs, p.EventIDs...)
		}
	}
	return out, nil
}

// clrKeywords maps the --clrevents names of dotnet-trace to keyword bits of
// Microsoft-Windows-DotNETRuntime.
var clrKeywords = map[string]uint64{
	"gc": 0x1, "gchandle": 0x2, "fusion": 0x4, "assemblyloader": 0x4, "loader": 0x8,
	"jit": 0x10, "ngen": 0x20, "startenumeration": 0x40, "endenumeration": 0x80,
	"security": 0x400, "appdomainresourcemanagement": 0x800, "jittracing": 0x1000,
	"interop": 0x2000, "contention": 0x4000, "exception": 0x8000, "threading": 0x10000,
	"jittedmethodiltonativemap": 0x20000, "overrideandsuppressngenevents": 0x40000,
	"type": 0x80000, "gcheapdump": 0x100000, "gcsampledobjectallocationhigh": 0x200000,
	"gcheapsurvivalandmovement": 0x400000, "gcheapcollect": 0x800000, "managedheadcollect": 0x800000,
	"gcheapandtypenames": 0x1000000, "gcsampledobjectallocationlow": 0x2000000,
	"perftrack": 0x20000000, "stack": 0x40000000, "threadtransfer": 0x80000000,
	"debugger": 0x1_00000000, "monitoring": 0x2_00000000, "codesymbols": 0x4_00000000,
	"eventsource": 0x8_00000000, "compilation": 0x10_00000000, "compilationdiagnostic": 0x20_00000000,
	"methoddiagnostic": 0x40_00000000, "typediagnostic": 0x80_00000000,
	"jitinstrumentationdata": 0x100_00000000, "profiler": 0x200_00000000,
	"waithandle": 0x400_00000000, "allocationsampling": 0x800_00000000,
}

// ParseClrEvents turns "gc+jit+exception" into keyword bits.
func ParseClrEvents(s string) (uint64, error) {
	var kw uint64
	for _, name := range strings.Split(s, "+") {
		n := strings.ToLower(strings.TrimSpace(name))
		if n == "" {
			continue
		}
		v, ok := clrKeywords[n]
		if !ok {
			return 0, fmt.Errorf("--clrevents: unknown keyword %q; known keywords: %s", name, strings.Join(ClrKeywordNames(), ", "))
		}
		kw |= v
	}
	return kw, nil
}

// ClrKeywordNames lists the names ParseClrEvents accepts, sorted.
func ClrKeywordNames() []string {
	known := make([]string, 0, len(clrKeywords))
	for k := range clrKeywords {
		known = append(known, k)
	}
	sort.Strings(known)
	return known
}

// FilterEventIDs applies an event-id filter written as dotnet-trace's
// --event-ids takes it to the provider it names among ps:
// "Provider:1,2,3" enables only those event ids, "Provider:-1,2" all but
// those. The provider must be in ps (names are case-insensitive).
func FilterEventIDs(ps []Provider, spec string) error {
	name, list, ok := strings.Cut(spec, ":")
	if !ok || name == "" {
		return fmt.Errorf("%q: use Provider:1,2,3 or Provider:-1,2", spec)
	}
	deny := strings.HasPrefix(list, "-")
	list = strings.TrimPrefix(list, "-")
	ids := []uint32{}
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		id, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return fmt.Errorf("%q: %q is not an event id", spec, s)
		}
		ids = append(ids, uint32(id))
	}
	found := false
	for i := range ps {
		if strings.EqualFold(ps[i].Name, name) {
			ps[i].EventIDs, ps[i].EventIDsDeny, found = ids, deny, true
		}
	}
	if !found {
		return fmt.Errorf("%q: provider %s is not enabled; add it with --providers", spec, name)
	}
	return nil
}
