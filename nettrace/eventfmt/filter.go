package eventfmt

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/nettrace"
)

// Filter selects events by provider and by event id or name. Values of
// one kind are alternatives; the two kinds must both match when given. It
// also names each kind of event once: everything it learns is cached per
// metadata record, in a slice indexed by Metadata.Index, so nothing is
// looked up in a map or formatted per event. A Filter keeps counts of the
// events it saw: use one per stream.
type Filter struct {
	providers []string
	events    []string
	byIndex   []*Kind                      // by Metadata.Index
	others    map[*nettrace.Metadata]*Kind // records without an Index
	kinds     []*Kind                      // every kind seen
	// Next's state: the last event's kind, events read.
	lastMD *nettrace.Metadata
	last   *Kind
	n      uint
}

// Kind is what a Filter knows of one metadata record.
type Kind struct {
	provider string
	id       uint32
	// name is the metadata's name or, for the runtime's own events, the
	// clrevents table's; "" when unknown.
	name string
	// native: the payload layout comes from the clrevents table.
	native bool
	match  bool
	seen   int64
}

// Name is the event's name: the metadata's or, for the runtime's own
// events, the clrevents table's; "" when unknown.
func (k *Kind) Name() string { return k.name }

// NewFilter returns a filter selecting the events of any of providers
// (case-insensitive) whose id or name is any of events; an empty list
// selects everything. An event is named as clrevents.MatchEventName
// takes it. An empty value is an error.
func NewFilter(providers, events []string) (*Filter, error) {
	f := &Filter{}
	for _, p := range providers {
		if strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("--provider needs a provider name")
		}
		f.providers = append(f.providers, strings.TrimSpace(p))
	}
	for _, ev := range events {
		if strings.TrimSpace(ev) == "" {
			return nil, fmt.Errorf("--event needs an event id (a number) or an event name")
		}
		f.events = append(f.events, strings.TrimSpace(ev))
	}
	return f, nil
}

// Active reports whether the filter selects anything less than everything.
func (f *Filter) Active() bool { return len(f.providers) > 0 || len(f.events) > 0 }

// kind returns the cached description of md, computing it the first time.
func (f *Filter) kind(md *nettrace.Metadata) *Kind {
	if i := md.Index(); i > 0 && i < len(f.byIndex) && f.byIndex[i] != nil {
		return f.byIndex[i]
	}
	return f.newKind(md)
}

func (f *Filter) newKind(md *nettrace.Metadata) *Kind {
	if k := f.others[md]; k != nil {
		return k
	}
	k := &Kind{provider: md.ProviderName, id: md.EventID,
		name: clrevents.EventName(md.ProviderName, md.EventID, md.EventName)}
	if len(md.Fields) == 0 && md.EventID <= 0xFFFF {
		info, ok := clrevents.Lookup(md.ProviderName, uint16(md.EventID))
		k.native = ok && info.HasLayout()
	}
	k.match = len(f.providers) == 0
	for _, p := range f.providers {
		k.match = k.match || strings.EqualFold(md.ProviderName, p)
	}
	if len(f.events) > 0 {
		evOK := false
		for _, want := range f.events {
			evOK = evOK || clrevents.MatchEventName(md.ProviderName, md.EventID, md.EventName, want)
		}
		k.match = k.match && evOK
	}
	f.kinds = append(f.kinds, k)
	if i := md.Index(); i > 0 {
		if i >= len(f.byIndex) {
			f.byIndex = append(f.byIndex, make([]*Kind, i+1-len(f.byIndex))...)
		}
		f.byIndex[i] = k
	} else {
		if f.others == nil {
			f.others = map[*nettrace.Metadata]*Kind{}
		}
		f.others[md] = k
	}
	return k
}

// Next reads events until one passes the filter, counting every kind it
// sees, and returns that event's kind: the loop over the events a filter
// skips, kept small so that it costs little over decoding them. The
// verdict is kept for the last kind of event (runs of one kind are the
// rule). It returns the reader's error (io.EOF at the end) or ctx's error,
// checked every 4096 events; ctx may be nil.
func (f *Filter) Next(ctx context.Context, r *nettrace.Reader, ev *nettrace.Event) (*Kind, error) {
	for {
		if err := r.ReadEvent(ev); err != nil {
			return nil, err
		}
		k := f.last
		if ev.Metadata != f.lastMD {
			k = f.kind(ev.Metadata)
			f.last, f.lastMD = k, ev.Metadata
		}
		k.seen++
		if f.n++; f.n&4095 == 0 && ctx != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if k.match {
			return k, nil
		}
	}
}

// NoMatchError says that a filter matched no event of a trace, and which
// providers, or which events of the selected providers, the trace does
// have.
type NoMatchError struct {
	msg string
}

func (e *NoMatchError) Error() string { return e.msg }

// NoMatch explains a filter that matched no event of the trace named what,
// from the events Next has seen.
func (f *Filter) NoMatch(what string) *NoMatchError {
	sum := func(key func(k *Kind) (string, bool)) []countKV[int64] {
		m := map[string]int64{}
		for _, k := range f.kinds {
			if label, ok := key(k); ok && k.seen > 0 {
				m[label] += k.seen
			}
		}
		return sortedCounts(m)
	}
	list := func(cs []countKV[int64]) string {
		var b strings.Builder
		for i, c := range cs {
			if i == 30 {
				fmt.Fprintf(&b, ", and %d more", len(cs)-i)
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s (%d)", termsafe.String(c.k), c.n)
		}
		return b.String()
	}
	var filters []string
	for _, p := range f.providers {
		filters = append(filters, "--provider "+p)
	}
	for _, e := range f.events {
		filters = append(filters, "--event "+e)
	}
	msg := fmt.Sprintf("no event of %s matched %s", what, strings.Join(filters, " "))
	providerOK := func(k *Kind) bool {
		if len(f.providers) == 0 {
			return true
		}
		for _, p := range f.providers {
			if strings.EqualFold(k.provider, p) {
				return true
			}
		}
		return false
	}
	byProvider := sum(func(k *Kind) (string, bool) { return k.provider, true })
	events := sum(func(k *Kind) (string, bool) {
		if !providerOK(k) {
			return "", false
		}
		label := k.name
		if label == "" {
			label = "Event"
		}
		label += "(" + strconv.FormatUint(uint64(k.id), 10) + ")"
		if len(f.providers) != 1 {
			label = k.provider + "/" + label
		}
		return label, true
	})
	switch {
	case len(byProvider) == 0:
		msg += "; it holds no events"
	case len(events) == 0:
		msg += "; its providers (events) are: " + list(byProvider)
	default:
		msg += "; its events"
		if len(f.providers) > 0 {
			msg += " of " + strings.Join(f.providers, ", ")
		}
		msg += " (count) are: " + list(events) + " (--event takes a name, a Task/Opcode name such as GC/Start, or an id)"
	}
	return &NoMatchError{msg: msg}
}
