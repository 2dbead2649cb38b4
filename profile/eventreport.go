package profile

import (
	"fmt"
	"strconv"
	"time"

	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/internal/units"
	"github.com/clrdiag/clrdiag/weighted"
)

// isEventMeasure reports whether the measure weighs events other than CPU
// samples.
func isEventMeasure(measure string) bool {
	switch measure {
	case MeasureAlloc, MeasureContention, MeasureExceptions:
		return true
	}
	return false
}

// eventUnit is the unit of an event measure.
func eventUnit(measure string) string {
	m, _ := LookupMeasure(measure)
	return m.Unit
}

// eventStacks returns the events an event measure weighs.
func (p *Profile) eventStacks(measure string) *EventStacks {
	switch measure {
	case MeasureAlloc:
		return &p.AllocStacks
	case MeasureContention:
		return &p.ContentionStacks
	}
	return &p.ExceptionStacks
}

// eventMethods weighs the methods by an event measure: exclusive is the
// top method of each event's stack (the allocating, waiting or throwing
// method), inclusive every method of the stack once.
func (p *Profile) eventMethods(measure string) []methodRank {
	es := p.eventStacks(measure)
	// excl[f+1] and incl[f+1] are frame f's (index 0: the empty stack);
	// seen[f] is the number of the last sample that counted f inclusively.
	excl := make([]int64, len(p.Frames)+1)
	incl := make([]int64, len(p.Frames)+1)
	seen := make([]int, len(p.Frames))
	for n, s := range es.Samples {
		frames := p.Stacks[s.Stack].Frames
		if len(frames) == 0 {
			excl[0] += s.Value
			incl[0] += s.Value
			continue
		}
		excl[frames[0]+1] += s.Value
		for _, f := range frames {
			if seen[f] != n+1 {
				seen[f] = n + 1
				incl[f+1] += s.Value
			}
		}
	}
	var out []methodRank
	for i, in := range incl {
		if in != 0 || excl[i] != 0 {
			out = append(out, methodRank{frame: int32(i - 1), excl: excl[i], incl: in})
		}
	}
	return out
}

// eventMethod is the MethodTime of a method ranked by eventMethods, but
// for its names.
func (p *Profile) eventMethod(measure string, mr methodRank) MethodTime {
	total := p.eventStacks(measure).Value
	pct := func(v int64) float64 {
		if total == 0 {
			return 0
		}
		return 100 * float64(v) / float64(total)
	}
	m := MethodTime{Method: weighted.NoFrames, ExclusiveValue: mr.excl, InclusiveValue: mr.incl, ExclusivePct: pct(mr.excl),
		InclusivePct: pct(mr.incl), ManagedPct: -1}
	if measure == MeasureContention {
		m.Exclusive, m.Inclusive = time.Duration(mr.excl), time.Duration(mr.incl)
	}
	return m
}

// formatValue prints a value of a unit for people: "12.3ms", "4.50 MB" (SI,
// internal/units),
// "17".
func formatValue(v int64, unit string) string {
	switch unit {
	case "nanoseconds":
		return ms(time.Duration(v))
	case "bytes":
		return units.FormatBytes(v)
	}
	return strconv.FormatInt(v, 10)
}

// appendEventMethods appends the method table of an event measure.
func (r *Report) appendEventMethods(b []byte) []byte {
	order := "exclusive"
	if r.Inclusive {
		order = "inclusive"
	}
	switch r.Measure {
	case MeasureAlloc:
		b = fmt.Appendf(b, "\nTop methods by %s allocated bytes (GCAllocationTick: one per ~100 KiB allocated; exclusive: the allocating method)\n", order)
	case MeasureContention:
		b = fmt.Appendf(b, "\nTop methods by %s lock wait time (ContentionStart to ContentionStop; exclusive: the waiting method)\n", order)
	default:
		b = fmt.Appendf(b, "\nTop methods by %s exceptions thrown (exclusive: the throwing method)\n", order)
	}
	b = append(b, "  Exclusive\t%\tInclusive\t%\tMethod\n"...)
	for _, m := range r.Methods {
		name := m.Method
		if m.Module != "" {
			name = m.Module + "!" + name
		}
		b = append(append(b, "  "...), formatValue(m.ExclusiveValue, r.Unit)...)
		b = appendFixed(append(b, '\t'), m.ExclusivePct, 1)
		b = append(append(b, '\t'), formatValue(m.InclusiveValue, r.Unit)...)
		b = appendFixed(append(b, '\t'), m.InclusivePct, 1)
		b = append(append(append(b, '\t'), termsafe.String(name)...), '\n')
	}
	return b
}
