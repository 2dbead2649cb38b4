package clrevents

import (
	"strconv"
	"strings"
)

// EventName names an event of a trace: metadataName when the trace carries
// one (EventSource and TraceLogging events do), else the table's name of
// (provider, id) for the runtime's native providers, whose metadata has no
// names; "" when neither knows the event. Resolve it once per metadata
// record, not per event.
func EventName(provider string, id uint32, metadataName string) string {
	if metadataName != "" {
		return metadataName
	}
	if id > 0xFFFF {
		return ""
	}
	if info, ok := Lookup(provider, uint16(id)); ok {
		return info.Name
	}
	return ""
}

// MatchEventName reports whether want, an event name or id given by a
// person (--event, --stopping-event-event-name), designates the event
// (provider, id) whose trace metadata is named metadataName. Names compare
// case-insensitively with:
//   - the metadata name, and its part before a slash ("Task/Opcode" names);
//   - for the runtime's native events, the table's name ("GCStart"), that
//     name with the manifest's version suffix ("ExceptionThrown_V1",
//     any version), and the aliases ("GC/Start", as TraceEvent and
//     dotnet-trace's documentation name events).
//
// A decimal want matches the event id. Call it once per metadata record.
func MatchEventName(provider string, id uint32, metadataName, want string) bool {
	want = strings.TrimSpace(want)
	if want == "" {
		return false
	}
	if n, err := strconv.ParseUint(want, 10, 32); err == nil {
		return uint32(n) == id
	}
	if metadataName != "" {
		if strings.EqualFold(metadataName, want) {
			return true
		}
		if task, _, ok := strings.Cut(metadataName, "/"); ok && strings.EqualFold(task, want) {
			return true
		}
	}
	if id > 0xFFFF {
		return false
	}
	_, table := providerTable(provider)
	e, ok := findEntry(table, uint16(id))
	if !ok {
		return false
	}
	if strings.EqualFold(e.name, want) || strings.EqualFold(trimVersion(want), e.name) {
		return true
	}
	for _, a := range e.aliases {
		if strings.EqualFold(a, want) {
			return true
		}
	}
	return false
}

// trimVersion removes a manifest version suffix: "GCStart_V2" -> "GCStart".
func trimVersion(name string) string {
	i := strings.LastIndex(name, "_")
	if i < 0 || i+2 >= len(name) || (name[i+1] != 'V' && name[i+1] != 'v') {
		return name
	}
	for _, c := range name[i+2:] {
		if c < '0' || c > '9' {
			return name
		}
	}
	return name[:i]
}
