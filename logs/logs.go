package logs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/clrdiag/clrdiag/eventpipe"
)

// Provider is the EventSource through which Microsoft.Extensions.Logging
// publishes every ILogger call (LoggingEventSource).
const Provider = "Microsoft-Extensions-Logging"

// The keywords of LoggingEventSource.
const (
	KeywordMeta             uint64 = 0x1
	KeywordMessage          uint64 = 0x2
	KeywordFormattedMessage uint64 = 0x4
	KeywordJSONMessage      uint64 = 0x8
)

// The event ids of LoggingEventSource.
const (
	EventFormattedMessage  = 1
	EventMessage           = 2
	EventActivityStart     = 3
	EventActivityStop      = 4
	EventMessageJSON       = 5
	EventActivityJSONStart = 6
	EventActivityJSONStop  = 7
)

// tplProvider and tplFlowActivityIDs make the runtime give log events the
// activity id of the logging scope they are written in: without
// TasksFlowActivityIds, EventSource does not track activities across
// awaits, and scopes cannot be told apart.
const (
	tplProvider        = "System.Threading.Tasks.TplEventSource"
	tplFlowActivityIDs = 0x80
)

// Level is an ILogger LogLevel, with its numbers: 0 Trace, 1 Debug,
// 2 Information, 3 Warning, 4 Error, 5 Critical, 6 None.
type Level int

// The log levels.
const (
	Trace Level = iota
	Debug
	Information
	Warning
	Error
	Critical
	None
)

var levelNames = [...]string{"Trace", "Debug", "Information", "Warning", "Error", "Critical", "None"}

// String is the LogLevel's name ("Warning"), or the number for one out of
// range.
func (l Level) String() string {
	if l >= 0 && int(l) < len(levelNames) {
		return levelNames[l]
	}
	return strconv.Itoa(int(l))
}

// short is the four-letter level of the console formatter.
func (l Level) short() string {
	switch l {
	case Trace:
		return "trce"
	case Debug:
		return "dbug"
	case Information:
		return "info"
	case Warning:
		return "warn"
	case Error:
		return "fail"
	case Critical:
		return "crit"
	}
	return "none"
}

// ParseLevel reads a LogLevel by name (any case; Info, Warn, Fail, Crit
// and Verbose are accepted too) or number 0 to 6.
func ParseLevel(s string) (Level, error) {
	t := strings.TrimSpace(s)
	if n, err := strconv.Atoi(t); err == nil {
		if n < 0 || n > int(None) {
			return 0, fmt.Errorf("log level %d is out of range: 0 (Trace) to 6 (None)", n)
		}
		return Level(n), nil
	}
	for i, n := range levelNames {
		if strings.EqualFold(t, n) {
			return Level(i), nil
		}
	}
	switch strings.ToLower(t) {
	case "verbose", "trce":
		return Trace, nil
	case "dbug":
		return Debug, nil
	case "info":
		return Information, nil
	case "warn":
		return Warning, nil
	case "fail":
		return Error, nil
	case "crit":
		return Critical, nil
	}
	return 0, fmt.Errorf("unknown log level %q: give Trace, Debug, Information, Warning, Error, Critical or None", s)
}

// Filter sets the level of the categories it names: Category is a
// category name, or a prefix ending in '*' (Microsoft.AspNetCore.*); the
// longest match wins.
type Filter struct {
	Category string
	Level    Level
}

// Config selects logs. The zero value collects every message of every
// category at every level (Trace and up).
type Config struct {
	// DefaultLevel is the lowest level collected from categories that no
	// filter names.
	DefaultLevel Level
	// Filters set other levels for some categories.
	Filters []Filter
	// UseAppFilters keeps the application's own logging configuration
	// (its Logging:LogLevel settings) for categories no filter names,
	// instead of DefaultLevel; the filters still apply to theirs.
	UseAppFilters bool
}

// FilterSpecs is the FilterSpecs argument of LoggingEventSource for the
// configuration: "Category:Level" entries separated by ';', a '*' after a
// prefix, and either UseAppFilters first or a catch-all "*:Level" last.
func (c Config) FilterSpecs() string {
	var parts []string
	if c.UseAppFilters {
		parts = append(parts, "UseAppFilters")
	}
	for _, f := range c.Filters {
		parts = append(parts, f.Category+":"+f.Level.String())
	}
	if !c.UseAppFilters {
		parts = append(parts, "*:"+c.DefaultLevel.String())
	}
	return strings.Join(parts, ";")
}

// Providers are the EventPipe providers that collect the configuration's
// logs: LoggingEventSource with the FormattedMessage and JsonMessage
// keywords and the FilterSpecs argument (its events are all LogAlways;
// the FilterSpecs decide in the process), and TplEventSource's
// TasksFlowActivityIds, which gives each event its scope's activity id.
func (c Config) Providers() []eventpipe.Provider {
	return []eventpipe.Provider{
		{Name: Provider, Keywords: KeywordFormattedMessage | KeywordJSONMessage, Level: eventpipe.LevelVerbose,
			Args: []eventpipe.Arg{{Key: "FilterSpecs", Value: c.FilterSpecs()}}},
		{Name: tplProvider, Keywords: tplFlowActivityIDs, Level: eventpipe.LevelVerbose},
	}
}

// Allows reports whether an entry of category at level passes the
// configuration, as the process itself decides with the FilterSpecs
// (an application's own filters are not known here: with UseAppFilters,
// categories no filter names pass).
func (c Config) Allows(category string, level Level) bool {
	if level >= None {
		return false
	}
	best, min := -1, c.DefaultLevel
	for _, f := range c.Filters {
		n, ok := matchCategory(f.Category, category)
		if ok && n > best {
			best, min = n, f.Level
		}
	}
	if best < 0 && c.UseAppFilters {
		return true
	}
	return level >= min
}

// matchCategory reports whether pattern (a name, or a prefix ending in
// '*', or "*" alone) matches category, and how specific the match is.
func matchCategory(pattern, category string) (int, bool) {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		p = strings.TrimSuffix(p, ".")
		if p == "" {
			return 0, true
		}
		if strings.EqualFold(category, p) || len(category) > len(p) && strings.EqualFold(category[:len(p)], p) && category[len(p)] == '.' {
			return len(p), true
		}
		return 0, false
	}
	if strings.EqualFold(category, pattern) {
		return len(pattern) + 1, true
	}
	// As Microsoft.Extensions.Logging's own rules, a category name
	// also covers the categories below it.
	if len(category) > len(pattern) && strings.EqualFold(category[:len(pattern)], pattern) && category[len(pattern)] == '.' {
		return len(pattern), true
	}
	return 0, false
}
