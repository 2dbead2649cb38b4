package eventfmt

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/jsontime"
	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/nettrace"
)

// Summary is what a trace holds, the output of `clrdiag trace stats`
// (its JSON form is the JSON encoding of a Summary).
type Summary struct {
	// File names the trace.
	File string `json:"file"`
	// Format, Version, PointerSize, ProcessID and Processors come from
	// the trace header.
	Format      string `json:"format"`
	Version     int    `json:"version"`
	PointerSize int    `json:"pointerSize"`
	ProcessID   int    `json:"processId"`
	Processors  int    `json:"processors"`
	// StartTime and EndTime are the times of the first and last events
	// (nil without events); TimeSpan is the seconds between them.
	StartTime *jsontime.Time `json:"startTime,omitempty"`
	EndTime   *jsontime.Time `json:"endTime,omitempty"`
	TimeSpan  float64        `json:"timeSpanSeconds"`
	// Events to Complete are the reader's counts (nettrace.Stats).
	Events         int64  `json:"events"`
	Metadata       int64  `json:"metadata"`
	Stacks         int64  `json:"stacks"`
	SequencePoints int64  `json:"sequencePoints"`
	DroppedEvents  uint64 `json:"droppedEvents"`
	Bytes          int64  `json:"bytes"`
	Complete       bool   `json:"complete"`
	// Error is the error that stopped reading before the end.
	Error string `json:"error,omitempty"`
	// Providers counts events per provider, EventsByID per
	// "provider/id".
	Providers  map[string]int `json:"providers"`
	EventsByID map[string]int `json:"eventsByID"`
	// EventNames names the keys of EventsByID: the trace's metadata name,
	// or for the runtime's own events the manifest name (clrevents).
	EventNames map[string]string `json:"eventNames"`
}

// Summarize reads r to its end, on every core (nettrace.ReadParallel),
// and returns what the trace named name holds, with the error that
// stopped reading, prefixed with name (nil at a clean end). The summary
// is that of what could be read, also with an error. ctx may be nil.
func Summarize(ctx context.Context, r *nettrace.Reader, name string) (*Summary, error) {
	h := r.Header()
	st := &Summary{
		File: name, Format: h.Format.String(), Version: h.Version, PointerSize: h.PointerSize,
		ProcessID: h.ProcessID, Processors: h.ProcessorCount,
		Providers: map[string]int{}, EventsByID: map[string]int{}, EventNames: map[string]string{},
	}
	// Count per metadata record (by Metadata.Index, no map per event) on
	// every core, then fold the counts into names once per record.
	if ctx == nil {
		ctx = context.Background()
	}
	var total statsPart
	err := nettrace.ReadParallel(ctx, r, nettrace.ParallelConfig{},
		newStatsPart,
		func(p *statsPart) error { total.add(p); return nil })
	for i, c := range total.n {
		if c == 0 {
			continue
		}
		md := total.md[i]
		st.Providers[md.ProviderName] += int(c)
		key := fmt.Sprintf("%s/%d", md.ProviderName, md.EventID)
		st.EventsByID[key] += int(c)
		if name := clrevents.EventName(md.ProviderName, md.EventID, md.EventName); name != "" {
			st.EventNames[key] = name // once per metadata record, never per event
		}
	}
	s := r.Stats()
	st.Events, st.Metadata, st.Stacks = s.Events, s.Metadata, s.Stacks
	st.SequencePoints, st.DroppedEvents, st.Complete, st.Bytes = s.SequencePoints, s.DroppedEvents, s.Complete, s.Bytes
	if total.seen {
		t0, t1 := h.TimeOf(total.first), h.TimeOf(total.last)
		st.StartTime, st.EndTime = &jsontime.Time{Time: t0}, &jsontime.Time{Time: t1}
		st.TimeSpan = t1.Sub(t0).Seconds()
	}
	if err == nil {
		return st, nil
	}
	st.Error = err.Error()
	return st, fmt.Errorf("%s: %w", name, err)
}

// statsPart counts the events of a run of blocks per metadata record and
// keeps their time range (nettrace.ReadParallel decodes runs on every core).
// Parts are written by different cores at once: the padding and the first
// capacity of the slices keep each part's hot data off the cache lines of
// the others (sharing one halves the speed).
type statsPart struct {
	_           [64]byte
	n           []int64              // by Metadata.Index
	md          []*nettrace.Metadata // by Metadata.Index
	first, last int64
	seen        bool
	_           [64]byte
}

func newStatsPart() *statsPart {
	return &statsPart{n: make([]int64, 0, 16), md: make([]*nettrace.Metadata, 0, 16)}
}

func (p *statsPart) Event(ev *nettrace.Event) {
	i := ev.Metadata.Index()
	if i >= len(p.n) {
		p.grow(i + 1)
	}
	if p.n[i] == 0 {
		p.md[i] = ev.Metadata
	}
	p.n[i]++
	if ts := ev.Timestamp; !p.seen {
		p.first, p.last, p.seen = ts, ts, true
	} else if ts < p.first {
		p.first = ts
	} else if ts > p.last {
		p.last = ts
	}
}

func (p *statsPart) grow(n int) {
	p.n = append(p.n, make([]int64, n-len(p.n))...)
	p.md = append(p.md, make([]*nettrace.Metadata, n-len(p.md))...)
}

func (p *statsPart) Reset() {
	clear(p.n)
	p.seen = false
}

// add merges q into p.
func (p *statsPart) add(q *statsPart) {
	if len(q.n) > len(p.n) {
		p.grow(len(q.n))
	}
	for i, c := range q.n {
		if c != 0 {
			p.n[i] += c
			p.md[i] = q.md[i]
		}
	}
	if q.seen {
		if !p.seen || q.first < p.first {
			p.first = q.first
		}
		if !p.seen || q.last > p.last {
			p.last = q.last
		}
		p.seen = true
	}
}

// WriteText writes st as the text of `clrdiag trace stats`: the header's
// facts, the counts, then the events per provider and per event id, most
// frequent first. It returns the first error writing to w.
func (st *Summary) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "File:             %s\n", st.File)
	fmt.Fprintf(bw, "Format:           %s V%d, %d-byte pointers\n", st.Format, st.Version, st.PointerSize)
	fmt.Fprintf(bw, "Process:          %d (%d processors)\n", st.ProcessID, st.Processors)
	if st.StartTime != nil {
		fmt.Fprintf(bw, "Time:             %s to %s (%s)\n", st.StartTime.Format(time.RFC3339Nano),
			st.EndTime.Format(time.RFC3339Nano), time.Duration(st.TimeSpan*float64(time.Second)).Round(time.Microsecond))
	}
	fmt.Fprintf(bw, "Events:           %d\n", st.Events)
	fmt.Fprintf(bw, "Metadata records: %d\n", st.Metadata)
	fmt.Fprintf(bw, "Stacks:           %d\n", st.Stacks)
	fmt.Fprintf(bw, "Sequence points:  %d\n", st.SequencePoints)
	fmt.Fprintf(bw, "Dropped events:   %d\n", st.DroppedEvents)
	if st.Complete {
		fmt.Fprintf(bw, "Complete:         yes\n")
	} else {
		fmt.Fprintf(bw, "Complete:         no (%s)\n", termsafe.String(st.Error))
	}
	fmt.Fprintf(bw, "\nEvents per provider:\n")
	for _, kv := range sortedCounts(st.Providers) {
		fmt.Fprintf(bw, "  %10d  %s\n", kv.n, termsafe.String(kv.k))
	}
	fmt.Fprintf(bw, "\nEvents per event id:\n")
	for _, kv := range sortedCounts(st.EventsByID) {
		name := st.EventNames[kv.k]
		if name != "" {
			name = " " + name
		}
		fmt.Fprintf(bw, "  %10d  %s%s\n", kv.n, termsafe.String(kv.k), termsafe.String(name))
	}
	return bw.Flush()
}

type countKV[N int | int64] struct {
	k string
	n N
}

// sortedCounts orders counts by descending count, then key.
func sortedCounts[N int | int64](m map[string]N) []countKV[N] {
	out := make([]countKV[N], 0, len(m))
	for k, n := range m {
		out = append(out, countKV[N]{k, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n > out[j].n
		}
		return out[i].k < out[j].k
	})
	return out
}
