package weighted

import (
	"fmt"
	"io"
	"strings"

	"github.com/google/pprof/profile"
)

// WritePprof writes the profile as a gzipped pprof protocol buffer, the
// profile Profile.Pprof builds, encoded directly (see pprofenc.go): one
// stored block up to 64 KB, compressed without state beyond (writeGzip).
func WritePprof(w io.Writer, wp *Profile) error {
	raw, err := wp.appendPprof(make([]byte, gzipHeadRoom))
	if err != nil {
		return err
	}
	return writeGzipAfter(w, raw)
}

// pprofDefault is the sample type pprof shows first: PprofDefault when it
// names one of Types, else Types[Default] ("" without one).
func (w *Profile) pprofDefault() string {
	for _, t := range w.Types {
		if w.PprofDefault != "" && t.Type == w.PprofDefault {
			return t.Type
		}
	}
	if w.Default >= 0 && w.Default < len(w.Types) {
		return w.Types[w.Default].Type
	}
	return ""
}

// Pprof converts the profile to a github.com/google/pprof/profile value:
// one sample type per Types (pprofDefault first in pprof's views), one
// sample per group and distinct stack with the numeric label "thread", one
// function and location per frame (the module as file name, the signature
// in the system name), and one mapping named after the profile with
// HasFunctions set, so pprof neither looks for a binary nor complains that
// it has none. WritePprof writes this profile, encoded directly without
// building it (pprofenc.go); the tests hold the two to the same content.
func (w *Profile) Pprof() (*profile.Profile, error) {
	pp := &profile.Profile{
		PeriodType:    &profile.ValueType{Type: w.PeriodType.Type, Unit: w.PeriodType.Unit},
		Period:        w.Period,
		TimeNanos:     w.Start.UnixNano(),
		DurationNanos: int64(w.Duration),
		Comments:      w.Comments,
	}
	if w.Start.IsZero() {
		pp.TimeNanos = 0
	}
	for _, t := range w.Types {
		pp.SampleType = append(pp.SampleType, &profile.ValueType{Type: t.Type, Unit: t.Unit})
	}
	pp.DefaultSampleType = w.pprofDefault()
	m := &profile.Mapping{ID: 1, File: w.Title(), HasFunctions: true}
	pp.Mapping = []*profile.Mapping{m}
	// The functions, locations, lines and samples are allocated in one
	// array each (the empty stack's pseudo-frame included), and the
	// samples of a group share their "thread" label: the encoder only
	// reads them.
	nFrames := len(w.Frames)
	fns := make([]profile.Function, nFrames+1)
	locArr := make([]profile.Location, nFrames+1)
	lines := make([]profile.Line, nFrames+1)
	locs := make([]*profile.Location, nFrames)
	pp.Function = make([]*profile.Function, 0, nFrames+1)
	pp.Location = make([]*profile.Location, 0, nFrames+1)
	for i, f := range w.Frames {
		fn := &fns[i]
		*fn = profile.Function{ID: uint64(i + 1), Name: f.Name, SystemName: systemName(f), Filename: f.Module}
		pp.Function = append(pp.Function, fn)
		lines[i] = profile.Line{Function: fn}
		locArr[i] = profile.Location{ID: uint64(i + 1), Mapping: m, Address: f.Address, Line: lines[i : i+1 : i+1]}
		locs[i] = &locArr[i]
		pp.Location = append(pp.Location, locs[i])
		m.Limit = max(m.Limit, f.Address+1)
	}
	// Indices out of range are errors (those of WritePprof), not panics.
	n, nLocs := 0, 0
	for _, g := range w.Groups {
		n += len(g.Samples)
		for _, s := range g.Samples {
			if s.Stack < 0 || s.Stack >= len(w.Stacks) {
				return nil, fmt.Errorf("profile: pprof conversion: sample of thread %d has stack %d of %d", g.ThreadID, s.Stack, len(w.Stacks))
			}
			for _, f := range w.Stacks[s.Stack].Frames {
				if f < 0 || f >= nFrames {
					return nil, fmt.Errorf("profile: pprof conversion: stack %d has frame %d of %d", s.Stack, f, nFrames)
				}
			}
			nLocs += max(len(w.Stacks[s.Stack].Frames), 1)
		}
	}
	samples := make([]profile.Sample, n)
	stacks := make([]*profile.Location, 0, nLocs)
	pp.Sample = make([]*profile.Sample, 0, n)
	var empty *profile.Location
	for _, g := range w.Groups {
		var label map[string][]int64
		if g.ThreadID != 0 {
			label = map[string][]int64{"thread": {int64(g.ThreadID)}}
		}
		for _, s := range g.Samples {
			frames := w.Stacks[s.Stack].Frames
			lo := len(stacks)
			for _, f := range frames {
				stacks = append(stacks, locs[f])
			}
			if len(frames) == 0 {
				if empty == nil {
					id := uint64(len(pp.Function) + 1)
					fn := &fns[nFrames]
					*fn = profile.Function{ID: id, Name: NoFrames, SystemName: NoFrames}
					pp.Function = append(pp.Function, fn)
					lines[nFrames] = profile.Line{Function: fn}
					empty = &locArr[nFrames]
					*empty = profile.Location{ID: id, Mapping: m, Line: lines[nFrames:]}
					pp.Location = append(pp.Location, empty)
				}
				stacks = append(stacks, empty)
			}
			ps := &samples[len(pp.Sample)]
			*ps = profile.Sample{Location: stacks[lo:len(stacks):len(stacks)], Value: s.Values, NumLabel: label}
			pp.Sample = append(pp.Sample, ps)
		}
	}
	if err := pp.CheckValid(); err != nil {
		return nil, fmt.Errorf("profile: pprof conversion: %w", err)
	}
	return pp, nil
}

// systemName is a frame's name with its signature, as a declaration: the
// runtime writes signatures without the method name ("instance void
// (int32)"), so the name goes where the runtime left two spaces:
// "instance void App.Type.Method(int32)". Other signatures follow the name
// after a space.
func systemName(f Frame) string {
	if f.Signature == "" {
		return f.Name
	}
	if i := strings.Index(f.Signature, "  ("); i >= 0 {
		return f.Signature[:i+1] + f.Name + f.Signature[i+2:]
	}
	return f.Name + " " + f.Signature
}

// writeSystemName writes systemName(f) of a frame with a signature.
func writeSystemName(b *strings.Builder, f *Frame) {
	if i := strings.Index(f.Signature, "  ("); i >= 0 {
		b.WriteString(f.Signature[:i+1])
		b.WriteString(f.Name)
		b.WriteString(f.Signature[i+2:])
		return
	}
	b.WriteString(f.Name)
	b.WriteByte(' ')
	b.WriteString(f.Signature)
}
