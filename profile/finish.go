package profile

import (
	"cmp"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/clrdiag/clrdiag/internal/timeline"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/weighted"
)

// Finish symbolises the stacks with every method range seen and returns the
// profile. The Builder must not be used afterwards.
func (b *Builder) Finish() *Profile {
	p := &Profile{
		PointerSize:       b.hdr.PointerSize,
		ManagedOnly:       b.cfg.ManagedOnly,
		ProcessID:         b.hdr.ProcessID,
		Runtime:           b.runtime,
		DecodeErrors:      b.decodeErrors,
		FirstDecodeError:  b.firstDecodeErr,
		TimelineTruncated: b.truncated(),
		Capped:            CapStats{Stacks: b.cappedStacks, Addresses: b.cappedAddrs},
	}
	p.Capped.MaxStacks, p.Capped.MaxAddresses = b.cfg.MaxStacks, b.cfg.MaxAddresses
	// The samples' time range, from their threads (addSample).
	for _, t := range b.order {
		b.minTS, b.maxTS = min(b.minTS, t.first), max(b.maxTS, t.last)
	}
	if b.minTS <= b.maxTS { // an event was added
		p.Start = b.hdr.TimeOf(b.minTS)
		p.Duration = b.hdr.DurationOf(b.maxTS - b.minTS)
	}
	p.Period = b.period()
	p.Symbols = SymbolStats{Methods: b.methods(), Rundown: b.rundown, RundownMethods: b.rundownMethods}
	if b.sym != nil {
		p.Symbols.Modules = len(b.sym.symbols.modules)
	}
	p.RuntimeVersion = b.runtimeVersion
	if b.runtime != nil {
		if v := versionFromPath(b.runtime.RuntimeDllPath); v != "" {
			p.RuntimeVersion = v
		} else if p.RuntimeVersion == "" && b.runtime.VMMajorVersion >= 5 && b.runtime.VMMajorVersion < 100 &&
			b.runtime.VMVersion() != "42.42.42.42" { // a runtime built from source says 42.42.42.42
			// From .NET 5 the CLR's major and minor version are the
			// product's (its build and revision are not).
			p.RuntimeVersion = strconv.Itoa(int(b.runtime.VMMajorVersion)) + "." + strconv.Itoa(int(b.runtime.VMMinorVersion))
		}
	}
	p.CommandLine = b.commandLine
	if p.CommandLine == "" && b.runtime != nil {
		p.CommandLine = b.runtime.CommandLine
	}
	p.ProcessName = processName(p.CommandLine)

	symOf, stackResolved := b.symbolise(p)

	// pos[stack] is 1 + the index of the stack in the thread's Samples (0:
	// not yet), reset after each thread; none without threads.
	var pos []int32
	if len(b.order) > 0 {
		pos = make([]int32, len(p.Stacks))
	}
	// sortSamples' scratch, sized once for the thread that may have the
	// most samples (at most one per word of its count log, and per stack).
	most := 0
	for _, t := range b.order {
		t.flush()
		t.counts.seal()
		most = max(most, min(t.counts.n, len(p.Stacks)))
	}
	keys := make([]uint64, 0, most)
	tmp := make([]StackSample, 0, most)
	// The timelines' clock (see Timeline), a copy of the header shared by
	// them all; made for the first.
	var clock *nettrace.Header
	for _, t := range b.order {
		if t.counts.n == 0 {
			continue // every sample of the thread was filtered out
		}
		th := &Thread{ID: t.id, StackChanges: t.changes,
			First: b.hdr.DurationOf(t.first - b.minTS), Last: b.hdr.DurationOf(t.last - b.minTS),
			FirstStack: -1, FirstKind: t.firstKind}
		if t.firstStack >= 0 {
			th.FirstStack = symOf[t.firstStack]
		}
		if t.all > 1 {
			th.Period = b.hdr.DurationOf(t.last-t.first) / time.Duration(t.all-1)
		}
		// The count log's words, summed by stack: a first pass gives each
		// stack its index in Samples (pos), in the order of the words
		// (sortSamples orders them), a second sums the counts.
		n := int32(0)
		for _, ch := range t.counts.chunks {
			for _, w := range ch {
				if stack := symOf[w>>33]; pos[stack] == 0 {
					n++
					pos[stack] = n
				}
			}
		}
		th.Samples = make([]StackSample, n)
		for _, ch := range t.counts.chunks {
			for _, w := range ch {
				raw, c := int(w>>33), int64(w&math.MaxUint32)
				stack := symOf[raw]
				s := &th.Samples[pos[stack]-1]
				s.Stack = stack
				if w&(1<<32) != 0 {
					s.Managed += c
				} else {
					s.External += c
				}
				if raw == b.overCap {
					p.Capped.Samples += c
				}
			}
		}
		for _, s := range th.Samples {
			th.Managed += s.Managed
			th.External += s.External
			n := s.Count()
			frames := int64(len(p.Stacks[s.Stack].Frames))
			p.Symbols.SampleFrames += n * frames
			p.Symbols.ResolvedSampleFrames += n * int64(stackResolved[s.Stack])
			p.Symbols.EventFrames += n * frames
			p.Symbols.ResolvedEventFrames += n * int64(stackResolved[s.Stack])
		}
		// At most 1% Managed: .NET Core 3.1 labels Managed the odd sample
		// of a thread blocked in a P/Invoke (one of 3 642 of the Hot
		// target's main thread in Console.ReadLine, in a run that depended
		// on nothing but the length of the application's path).
		all := th.Managed + th.External
		th.Waiting = th.Managed*100 <= all && th.StackChanges*100 <= all
		keys, tmp = sortSamples(th.Samples, pos, keys, tmp)
		for _, s := range th.Samples {
			pos[s.Stack] = 0
		}
		if t.runExtra != 0 {
			t.endRun()
		}
		t.timeline.Sync(t.runs)
		if clock == nil && len(t.timeline.Chunks) > 0 {
			clock = new(nettrace.Header)
			*clock = b.hdr
		}
		// Every sample of the thread is in its timeline (if it has one),
		// unless the timeline stopped (-1: count them).
		samples := all
		if b.truncated() {
			samples = -1
		}
		b.finishTimeline(&t.timeline, symOf, clock, samples)
		th.Timeline = weighted.TimelineOf(t.timeline)
		p.Threads = append(p.Threads, th)
	}
	for raw, n := range b.eventStack {
		s, resolved := symStack(symOf, stackResolved, raw)
		p.Symbols.EventFrames += n * int64(len(p.Stacks[s].Frames))
		p.Symbols.ResolvedEventFrames += n * int64(resolved)
	}
	if b.overCap >= 0 && b.overCap < len(b.eventStack) {
		p.Capped.Events = b.eventStack[b.overCap]
	}

	b.flushGCReason()
	p.GC = b.gc
	b.finishEvents(p, symOf, stackResolved)
	return p
}

// finishTimeline gives a timeline as a Builder recorded it the map from
// its runs' stacks (raw) to the Profile's Stacks (symOf), the number of
// its samples (samples, or counted when -1; none without runs, as
// without Config.Timeline), and the clock that makes its starts, in
// ticks, offsets from Profile.Start.
func (b *Builder) finishTimeline(tl *timeline.Data, symOf []int, clock *nettrace.Header, samples int64) {
	tl.Clock, tl.Base, tl.Stacks = clock, b.minTS, symOf
	switch {
	case len(tl.Chunks) == 0:
		samples = 0
	case samples < 0:
		_, samples = timeline.Count(tl.Chunks)
	}
	tl.Samples = samples
}

// sortSamples orders a thread's samples by count, largest first, then by
// stack. It sorts a uint64 per sample (the count's complement above the
// stack) rather than calling a comparison per pair, then places the samples
// by their stack's pos (1 + the sample's index). keys and tmp are scratch,
// returned for reuse.
func sortSamples(samples []StackSample, pos []int32, keys []uint64, tmp []StackSample) ([]uint64, []StackSample) {
	keys = keys[:0]
	for _, s := range samples {
		c := s.Count()
		if c >= 1<<32 || uint64(s.Stack) >= 1<<32 { // never seen; sorted all the same
			slices.SortFunc(samples, func(a, c StackSample) int {
				if a.Count() != c.Count() {
					return cmp.Compare(c.Count(), a.Count())
				}
				return cmp.Compare(a.Stack, c.Stack)
			})
			return keys, tmp
		}
		keys = append(keys, uint64(1<<32-1-c)<<32|uint64(s.Stack))
	}
	slices.Sort(keys)
	tmp = append(tmp[:0], samples...)
	for i, k := range keys {
		samples[i] = tmp[pos[uint32(k)]-1]
	}
	return keys, tmp
}

// sites groups stack counts by the top resolved frame of each stack.
func (p *Profile) sites(stacks map[int]int64) []Site {
	byFrame := make(map[int]int64)
	for s, n := range stacks {
		top := -1
		for _, f := range p.Stacks[s].Frames {
			if p.Frames[f].Resolved {
				top = f
				break
			}
		}
		byFrame[top] += n
	}
	out := make([]Site, 0, len(byFrame))
	for f, n := range byFrame {
		out = append(out, Site{Frame: f, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Frame < out[j].Frame
	})
	return out
}

// period is the median of the threads' mean sampling intervals, or the
// trace's expected rate.
func (b *Builder) period() time.Duration {
	var ps []time.Duration
	for _, t := range b.order {
		if t.all > 1 && t.last > t.first {
			ps = append(ps, b.hdr.DurationOf(t.last-t.first)/time.Duration(t.all-1))
		}
	}
	if len(ps) > 0 {
		slices.Sort(ps)
		return ps[len(ps)/2]
	}
	if b.hdr.ExpectedCPUSamplingRate > 0 {
		return time.Duration(b.hdr.ExpectedCPUSamplingRate)
	}
	return time.Millisecond
}

// Read builds a profile from a whole nettrace stream. On damaged or
// truncated input it returns the profile of the events before the damage
// together with the reader's error (a *nettrace.FormatError).
func Read(r io.Reader, cfg Config) (*Profile, error) {
	// On several cores, the event blocks past the first 8 MiB of a trace
	// of short events are decoded on all of them (parallel.go); the
	// profile is the same.
	return read(r, cfg, nettrace.ParallelConfig{})
}
