package rules

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/internal/named"
)

// ErrConfig is matched (errors.Is) by every error about a rule
// configuration that cannot be used.
var ErrConfig = errors.New("invalid collection rule configuration")

// FieldError is one problem of a configuration, at the key it is about.
type FieldError struct {
	// Path names the key: CollectionRules.HighCpu.Trigger.Settings.GreaterThan,
	// with array items as Actions[0].
	Path string
	// Msg says what is wrong and what to write instead.
	Msg string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Msg }

// ConfigError lists every problem found in a configuration: it is checked
// whole, so one run names them all.
type ConfigError struct {
	Errors []*FieldError
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	for i, fe := range e.Errors {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(fe.Error())
	}
	return b.String()
}

// Is makes a ConfigError match ErrConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// binder collects the errors of one load.
type binder struct {
	errs []*FieldError
}

func (b *binder) add(path, format string, args ...any) {
	b.errs = append(b.errs, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Settings is one section of the configuration being read: the Settings of
// a trigger or an action, or any section below. Its getters read a key
// (names are compared without regard to case, as in .NET configuration),
// check it and record a FieldError naming the key's path when it is wrong;
// the value returned is then the default. Done reports every key that no
// getter asked for, so a misspelt setting is an error rather than silently
// ignored. An action type's New reads its settings through it.
type Settings struct {
	n    *node
	path string
	used map[string]bool
	b    *binder
	// refs are the actions that come before this one in its rule, with
	// their outputs, for $(Actions.NAME.OUTPUT) references.
	refs map[string][]string
	// asked lists the keys the getters asked for, for suggestions.
	asked []string
}

// lookup returns the child key, remembering that it was asked for.
func (s *Settings) lookup(key string) *node {
	s.asked = append(s.asked, key)
	return s.n.child(key)
}

func newSettings(n *node, path string, b *binder) *Settings {
	return &Settings{n: n, path: path, used: map[string]bool{}, b: b}
}

// Path is the section's path, as errors name it.
func (s *Settings) Path() string { return s.path }

// Errorf records a problem with key (the section itself when key is "").
func (s *Settings) Errorf(key, format string, args ...any) {
	s.b.add(s.keyPath(key), format, args...)
}

func (s *Settings) keyPath(key string) string {
	if key == "" {
		return s.path
	}
	return s.path + "." + key
}

// Has reports whether key is present (with a value or a section).
func (s *Settings) Has(key string) bool {
	c := s.lookup(key)
	if c != nil {
		s.used[strings.ToLower(key)] = true
	}
	return c != nil && (c.value != nil && *c.value != "" || len(c.order) > 0)
}

// raw returns the value of key and whether it was given (a key present with
// an empty value is not given).
func (s *Settings) raw(key string) (string, bool) {
	c := s.lookup(key)
	if c == nil {
		return "", false
	}
	s.used[strings.ToLower(key)] = true
	if len(c.order) > 0 {
		s.Errorf(key, "expected a value, found a section (%s)", strings.Join(c.childNames(), ", "))
		return "", false
	}
	if c.value == nil || strings.TrimSpace(*c.value) == "" {
		return "", false
	}
	return strings.TrimSpace(*c.value), true
}

func (n *node) childNames() []string {
	var out []string
	for _, k := range n.order {
		out = append(out, n.children[k].name)
	}
	return out
}

// String returns the string at key; a required key that is missing is an
// error.
func (s *Settings) String(key string, required bool) string {
	v, ok := s.raw(key)
	if !ok && required {
		s.Errorf(key, "required: give a value")
	}
	return v
}

// Enum returns the value at key, which must be one of choices (any case;
// the canonical spelling is returned), or def when missing.
func (s *Settings) Enum(key, def string, choices ...string) string {
	v, ok := s.raw(key)
	if !ok {
		return def
	}
	for _, c := range choices {
		if strings.EqualFold(v, c) {
			return c
		}
	}
	s.Errorf(key, "%q is not one of %s", v, strings.Join(choices, ", "))
	return def
}

// Float returns the number at key, or nil when it is missing.
func (s *Settings) Float(key string) *float64 {
	v, ok := s.raw(key)
	if !ok {
		return nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		s.Errorf(key, "%q is not a number", v)
		return nil
	}
	return &f
}

// Int returns the integer at key (def when missing), which must lie in
// [lo, hi].
func (s *Settings) Int(key string, def, lo, hi int) int {
	v, ok := s.raw(key)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		s.Errorf(key, "%q is not a whole number", v)
		return def
	}
	if n < lo || n > hi {
		s.Errorf(key, "%d is out of range: give %d to %d", n, lo, hi)
		return def
	}
	return n
}

// Bool returns the boolean at key, or def when missing.
func (s *Settings) Bool(key string, def bool) bool {
	v, ok := s.raw(key)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		s.Errorf(key, "%q is not true or false", v)
		return def
	}
	return b
}

// Duration returns the duration at key (def when missing), which must lie
// in [lo, hi]. It takes .NET TimeSpan text as dotnet-monitor does
// ("00:00:10", "1:00:00", "1.00:00:00" for a day) and Go durations ("10s",
// "1h30m").
func (s *Settings) Duration(key string, def, lo, hi time.Duration) time.Duration {
	v, ok := s.raw(key)
	if !ok {
		return def
	}
	d, err := ParseDuration(v)
	if err != nil {
		s.Errorf(key, "%v", err)
		return def
	}
	if d < lo || d > hi {
		s.Errorf(key, "%s is out of range: give %s to %s", v, FormatDuration(lo), FormatDuration(hi))
		return def
	}
	return d
}

// Strings returns the list at key: an array section (key.0, key.1, ...) or
// a single value.
func (s *Settings) Strings(key string) []string {
	c := s.lookup(key)
	if c == nil {
		return nil
	}
	s.used[strings.ToLower(key)] = true
	if c.value != nil && len(c.order) == 0 {
		if v := strings.TrimSpace(*c.value); v != "" {
			return []string{v}
		}
		return nil
	}
	if len(c.order) > 0 && !c.isArray() {
		s.Errorf(key, "expected a list, found keys %s", strings.Join(c.childNames(), ", "))
		return nil
	}
	var out []string
	for i, k := range c.kids() {
		if len(k.order) > 0 || k.value == nil {
			s.Errorf(fmt.Sprintf("%s[%d]", key, i), "expected a value")
			continue
		}
		out = append(out, strings.TrimSpace(*k.value))
	}
	return out
}

// Map returns the section at key as a map of its keys (as written) to
// their values.
func (s *Settings) Map(key string) map[string]string {
	c := s.lookup(key)
	if c == nil {
		return nil
	}
	s.used[strings.ToLower(key)] = true
	out := map[string]string{}
	for _, k := range c.kids() {
		if len(k.order) > 0 {
			s.Errorf(key+"."+k.name, "expected a value, found a section")
			continue
		}
		v := ""
		if k.value != nil {
			v = *k.value
		}
		out[k.name] = v
	}
	return out
}

// Keys lists the keys of the section as they were written (first-seen
// order; numeric order for an array), for sections whose keys are names
// (Egress:S3Storage:<name>). Listing them reads none: read each with
// Section or a getter.
func (s *Settings) Keys() []string {
	var out []string
	for _, k := range s.n.kids() {
		out = append(out, k.name)
	}
	return out
}

// Section returns the settings below key (an empty section when missing).
func (s *Settings) Section(key string) *Settings {
	c := s.lookup(key)
	if c != nil {
		s.used[strings.ToLower(key)] = true
		if c.value != nil && *c.value != "" && len(c.order) == 0 {
			s.Errorf(key, "expected a section, found the value %q", *c.value)
		}
	} else {
		c = newNode(key)
	}
	return &Settings{n: c, path: s.keyPath(key), used: map[string]bool{}, b: s.b, refs: s.refs}
}

// List returns the items of the array section at key.
func (s *Settings) List(key string) []*Settings {
	c := s.lookup(key)
	if c == nil {
		return nil
	}
	s.used[strings.ToLower(key)] = true
	if c.value != nil && *c.value != "" && len(c.order) == 0 {
		s.Errorf(key, "expected a list, found the value %q", *c.value)
		return nil
	}
	if len(c.order) > 0 && !c.isArray() {
		s.Errorf(key, "expected a list (%s__0__..., or a JSON/YAML array), found keys %s", key, strings.Join(c.childNames(), ", "))
		return nil
	}
	var out []*Settings
	for i, k := range c.kids() {
		out = append(out, &Settings{n: k, path: fmt.Sprintf("%s[%d]", s.keyPath(key), i), used: map[string]bool{}, b: s.b, refs: s.refs})
	}
	return out
}

// Done records an error for every key of the section that was not read.
func (s *Settings) Done() {
	for _, k := range s.n.order {
		if !s.used[k] {
			c := s.n.children[k]
			s.Errorf(c.name, "unknown setting%s", s.suggest(c.name))
		}
	}
}

// suggest names the known key closest to name, or lists the known keys.
func (s *Settings) suggest(name string) string {
	if len(s.asked) == 0 {
		return " (this section takes no settings)"
	}
	best, bestD := "", 3
	seen := map[string]bool{}
	var known []string
	for _, k := range s.asked {
		if seen[strings.ToLower(k)] {
			continue
		}
		seen[strings.ToLower(k)] = true
		known = append(known, k)
		if d := named.Distance(strings.ToLower(k), strings.ToLower(name)); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf(": did you mean %s?", best)
	}
	return " (known: " + strings.Join(known, ", ") + ")"
}

// Template is a string setting that may refer to the outputs of earlier
// actions of its rule as $(Actions.NAME.OUTPUT); Expand fills them in.
type Template struct {
	text string
}

// refPattern matches an action output reference.
var refPattern = regexp.MustCompile(`\$\(Actions\.([^.()]+)\.([^.()]+)\)`)

// Template returns the setting at key as a Template, checking that every
// reference names an earlier action of the rule and one of its outputs.
func (s *Settings) Template(key string, required bool) Template {
	v := s.String(key, required)
	for _, m := range refPattern.FindAllStringSubmatch(v, -1) {
		outs, ok := s.refs[strings.ToLower(m[1])]
		if !ok {
			names := make([]string, 0, len(s.refs))
			for n := range s.refs {
				names = append(names, n)
			}
			sort.Strings(names)
			hint := "no earlier action has a Name"
			if len(names) > 0 {
				hint = "earlier actions: " + strings.Join(names, ", ")
			}
			s.Errorf(key, "%s refers to action %q, which is not an earlier action of this rule (%s)", m[0], m[1], hint)
			continue
		}
		found := false
		for _, o := range outs {
			if strings.EqualFold(o, m[2]) {
				found = true
			}
		}
		if !found {
			if len(outs) == 0 {
				s.Errorf(key, "%s: action %s has no outputs", m[0], m[1])
			} else {
				s.Errorf(key, "%s: action %s has no output %q (it has %s)", m[0], m[1], m[2], strings.Join(outs, ", "))
			}
		}
	}
	return Template{text: v}
}

// Text is the template as written.
func (t Template) Text() string { return t.text }

// Expand replaces each $(Actions.NAME.OUTPUT) with the output lookup
// returns.
func (t Template) Expand(lookup func(action, output string) string) string {
	if !strings.Contains(t.text, "$(") {
		return t.text
	}
	return refPattern.ReplaceAllStringFunc(t.text, func(m string) string {
		sm := refPattern.FindStringSubmatch(m)
		return lookup(sm[1], sm[2])
	})
}

// ParseDuration reads a duration as .NET's TimeSpan text
// ("[d.]hh:mm:ss[.fffffff]", as dotnet-monitor's configuration writes it)
// or as a Go duration ("30s", "1h30m"). A bare number is refused: .NET
// reads "10" as ten days, which is rarely what was meant.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	if !strings.Contains(s, ":") {
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return 0, fmt.Errorf("%q: give a unit (e.g. %ss) or TimeSpan text (00:00:%02s)", s, s, s)
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration: write TimeSpan text such as 00:01:30 or 1.00:00:00 (a day), or 90s", s)
		}
		if d < 0 {
			return 0, fmt.Errorf("%q: a duration must not be negative", s)
		}
		return d, nil
	}
	bad := fmt.Errorf("%q is not a duration: write TimeSpan text such as 00:01:30 or 1.00:00:00 (a day), or 90s", s)
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("%q: a duration must not be negative", s)
	}
	var days int64
	rest := s
	// d.hh:mm:ss: a dot before the first colon separates days.
	if dot := strings.IndexByte(rest, '.'); dot >= 0 && dot < strings.IndexByte(rest, ':') {
		d, err := strconv.ParseInt(rest[:dot], 10, 64)
		if err != nil || d < 0 || d > 10675199 {
			return 0, bad
		}
		days, rest = d, rest[dot+1:]
	}
	parts := strings.Split(rest, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, bad
	}
	h, err1 := strconv.ParseInt(parts[0], 10, 64)
	m, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || h < 0 || h > 23 || m < 0 || m > 59 {
		return 0, bad
	}
	var sec time.Duration
	if len(parts) == 3 {
		whole, frac, hasFrac := strings.Cut(parts[2], ".")
		sv, err := strconv.ParseInt(whole, 10, 64)
		if err != nil || sv < 0 || sv > 59 {
			return 0, bad
		}
		sec = time.Duration(sv) * time.Second
		if hasFrac {
			if frac == "" || len(frac) > 7 {
				return 0, bad
			}
			f, err := strconv.ParseInt(frac, 10, 64)
			if err != nil || f < 0 {
				return 0, bad
			}
			for i := len(frac); i < 9; i++ {
				f *= 10
			}
			sec += time.Duration(f)
		}
	}
	const day = 24 * time.Hour
	if days > int64(math.MaxInt64/int64(day))-1 {
		return 0, bad
	}
	return time.Duration(days)*day + time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + sec, nil
}

// FormatDuration writes d as TimeSpan text: [d.]hh:mm:ss[.fffffff].
func FormatDuration(d time.Duration) string {
	if d < 0 {
		return "-" + FormatDuration(-d)
	}
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	d -= m * time.Minute
	sec := d / time.Second
	d -= sec * time.Second
	out := fmt.Sprintf("%02d:%02d:%02d", h, m, sec)
	if days > 0 {
		out = strconv.FormatInt(int64(days), 10) + "." + out
	}
	if d > 0 {
		frac := fmt.Sprintf("%07d", d/100)
		out += "." + strings.TrimRight(frac, "0")
	}
	return out
}
