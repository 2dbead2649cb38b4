package weighted

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	pprofile "github.com/google/pprof/profile"
)

// pprofContent renders what a pprof profile means, independently of its
// IDs and of the order of its string table, samples, locations and
// functions: the sample types, default type, period, time, duration,
// comments and mappings as they are, the samples, locations and functions
// sorted, each location as its mapping, address and lines (function name,
// system name, file name, line), each sample as its values, labels and
// location chain. Two profiles that render the same are the same profile
// to every pprof view.
func pprofContent(pp *pprofile.Profile) string {
	var b strings.Builder
	vt := func(v *pprofile.ValueType) string {
		if v == nil {
			return "/"
		}
		return v.Type + "/" + v.Unit
	}
	for _, st := range pp.SampleType {
		fmt.Fprintf(&b, "sample type %s\n", vt(st))
	}
	fmt.Fprintf(&b, "default %q\nperiod %s %d\ntime %d\nduration %d\n",
		pp.DefaultSampleType, vt(pp.PeriodType), pp.Period, pp.TimeNanos, pp.DurationNanos)
	fmt.Fprintf(&b, "drop %q keep %q doc %q\n", pp.DropFrames, pp.KeepFrames, pp.DocURL)
	for _, c := range pp.Comments {
		fmt.Fprintf(&b, "comment %q\n", c)
	}
	for _, m := range pp.Mapping {
		fmt.Fprintf(&b, "mapping %q start %#x limit %#x offset %#x build %q functions %v filenames %v lines %v inline %v\n",
			m.File, m.Start, m.Limit, m.Offset, m.BuildID, m.HasFunctions, m.HasFilenames, m.HasLineNumbers, m.HasInlineFrames)
	}
	fn := func(f *pprofile.Function) string {
		return fmt.Sprintf("%q %q %q %d", f.Name, f.SystemName, f.Filename, f.StartLine)
	}
	loc := func(l *pprofile.Location) string {
		s := fmt.Sprintf("[%#x", l.Address)
		if l.Mapping != nil {
			s += " " + l.Mapping.File
		}
		for _, ln := range l.Line {
			s += fmt.Sprintf(" (%s line %d col %d)", fn(ln.Function), ln.Line, ln.Column)
		}
		if l.IsFolded {
			s += " folded"
		}
		return s + "]"
	}
	var lines []string
	for _, f := range pp.Function {
		lines = append(lines, "function "+fn(f))
	}
	for _, l := range pp.Location {
		lines = append(lines, "location "+loc(l))
	}
	for _, s := range pp.Sample {
		line := fmt.Sprintf("sample %v label %v num %v unit %v:", s.Value, s.Label, s.NumLabel, s.NumUnit)
		for _, l := range s.Location {
			line += " " + loc(l)
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// checkPprofEncoding writes wp with WritePprof, parses it with the pprof
// library and compares what it means with Profile.Pprof's profile: the
// same, or the same error.
func checkPprofEncoding(t *testing.T, name string, wp *Profile) {
	t.Helper()
	want, wantErr := wp.Pprof()
	var buf bytes.Buffer
	err := WritePprof(&buf, wp)
	if wantErr != nil || err != nil {
		if wantErr == nil || err == nil || err.Error() != wantErr.Error() {
			t.Errorf("%s: WritePprof error %v, Pprof error %v", name, err, wantErr)
		}
		return
	}
	got, err := pprofile.Parse(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("%s: pprof does not parse the direct encoding: %v", name, err)
	}
	if g, w := pprofContent(got), pprofContent(want); g != w {
		t.Errorf("%s: the direct encoding differs from Pprof's profile:\n%s", name, testcapture.LineDiff(w, g))
	}
	// Determinism: the same bytes again.
	var again bytes.Buffer
	if err := WritePprof(&again, wp); err != nil || !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Errorf("%s: a second WritePprof wrote other bytes (%d vs %d, err %v)", name, again.Len(), buf.Len(), err)
	}
}

// TestPprofEncodingCrafted covers what the captures may not: empty stacks,
// groups without a thread, a zero start, odd comments and names, strings
// over 127 bytes, negative and huge values and addresses, a default type
// out of range, no period type, no groups, and the errors.
func TestPprofEncodingCrafted(t *testing.T) {
	long := strings.Repeat("Namespace.Type`1[System.Int32].", 9)
	frames := []Frame{
		{Name: "App.Main", Module: "app.dll", Signature: "void  (string[])", Resolved: true, Address: 0x7f0000001000},
		{Name: "App.Main", Module: "app.dll", Signature: "void  (int32)", Resolved: true, Address: 0x7f0000002000},
		{Name: "0xffffffffffffffff", Address: math.MaxUint64},
		{Name: long, Module: long, Signature: "instance bool " + long, Address: 1},
		{Name: "app.dll", Module: "app.dll", Address: 0},
		{Name: NoFrames, Module: "", Address: 0x10},
	}
	stacks := []Stack{{}, {Frames: []int{0}}, {Frames: []int{2, 1, 0}}, {Frames: []int{3, 3, 4, 5}}}
	base := func() *Profile {
		return &Profile{
			Name: "", ProcessID: 0, Duration: 3 * time.Second,
			Types:   []ValueType{{"samples", "count"}, {"wall", "nanoseconds"}},
			Default: 1, PeriodType: ValueType{"wall", "nanoseconds"}, Period: 1_000_000,
			Frames: frames, Stacks: stacks, Active: -1,
			Comments: []string{"", "tab\there", "new\nline", "\xff\xfe not UTF-8", "nul \x00", long, "tab\there"},
			Groups: []Group{
				{Name: "Thread 7", ThreadID: 7, Samples: []Sample{{0, []int64{1, 1000}}, {2, []int64{3, -5}}}},
				{Name: "no thread", Samples: []Sample{{0, []int64{0, 0}}, {3, []int64{math.MaxInt64, math.MinInt64}}}},
				{Name: "big thread", ThreadID: math.MaxUint64, Samples: []Sample{{1, []int64{2, 2}}, {1, []int64{2, 2}}}},
				{Name: "empty group"},
			},
		}
	}
	cases := map[string]func(w *Profile){
		"as is":            func(w *Profile) {},
		"with start":       func(w *Profile) { w.Start = time.Date(2024, 5, 6, 7, 8, 9, 10, time.UTC); w.ProcessID = 42 },
		"named":            func(w *Profile) { w.Name = "app\x00 \"quoted\"" },
		"no groups":        func(w *Profile) { w.Groups = nil },
		"no frames":        func(w *Profile) { w.Groups, w.Frames, w.Stacks = nil, nil, nil },
		"only empty stack": func(w *Profile) { w.Groups = w.Groups[:1]; w.Groups[0].Samples = w.Groups[0].Samples[:1] },
		"no empty stack":   func(w *Profile) { w.Groups = w.Groups[2:] },
		"default -1":       func(w *Profile) { w.Default = -1 },
		"default past":     func(w *Profile) { w.Default = 2 },
		"no period":        func(w *Profile) { w.PeriodType, w.Period = ValueType{}, 0 },
		"period unit only": func(w *Profile) { w.PeriodType = ValueType{Unit: "count"} },
		"no comments":      func(w *Profile) { w.Comments = nil },
		"negative times":   func(w *Profile) { w.Start = time.Unix(-5, 0); w.Duration = -1; w.Period = -3 },
		"one type": func(w *Profile) {
			w.Types = w.Types[1:]
			w.Default = 0
			for gi := range w.Groups {
				g := &w.Groups[gi]
				g.Samples = slices.Clone(g.Samples)
				for i := range g.Samples {
					g.Samples[i].Values = g.Samples[i].Values[1:]
				}
			}
		},
		"mismatch": func(w *Profile) { w.Groups[1].Samples[1].Values = []int64{1} },
		"no types": func(w *Profile) { w.Types = nil },
		"no types, no values": func(w *Profile) {
			w.Types = nil
			w.Groups = []Group{{ThreadID: 1, Samples: []Sample{{Stack: 1}}}}
		},
		"no types, no samples": func(w *Profile) { w.Types, w.Default = nil, 0; w.Groups = []Group{{ThreadID: 1}} },
		// Samples of more than 127 bytes (their size and their IDs' size
		// in two bytes or more; the encoder writes the IDs first).
		"deep stacks": func(w *Profile) {
			deep := func(n int) Stack {
				st := Stack{Frames: make([]int, n)}
				for i := range st.Frames {
					st.Frames[i] = i % len(w.Frames)
				}
				return st
			}
			w.Stacks = append(slices.Clone(w.Stacks), deep(63), deep(64), deep(130), deep(1000))
			w.Groups[0].Samples = append(w.Groups[0].Samples, Sample{4, []int64{1, 1}}, Sample{5, []int64{300, 1 << 40}})
			w.Groups[1].Samples = append(w.Groups[1].Samples, Sample{6, []int64{1, 1}}, Sample{7, []int64{1, 1}}, Sample{0, []int64{1, 1}})
		},
	}
	for name, edit := range cases {
		w := base()
		w.Groups = slices.Clone(w.Groups)
		for i := range w.Groups {
			w.Groups[i].Samples = slices.Clone(w.Groups[i].Samples)
		}
		edit(w)
		checkPprofEncoding(t, name, w)
	}
}

// TestPprofEncodingBadIndex: a stack or frame index out of range is an
// error of WritePprof and of Pprof, not a panic.
func TestPprofEncodingBadIndex(t *testing.T) {
	for name, w := range map[string]*Profile{
		"stack": {Types: []ValueType{{"samples", "count"}}, Stacks: []Stack{{}},
			Groups: []Group{{ThreadID: 3, Samples: []Sample{{Stack: 1, Values: []int64{1}}}}}},
		"negative stack": {Types: []ValueType{{"samples", "count"}}, Stacks: []Stack{{}},
			Groups: []Group{{ThreadID: 3, Samples: []Sample{{Stack: -1, Values: []int64{1}}}}}},
		"frame": {Types: []ValueType{{"samples", "count"}}, Frames: []Frame{{Name: "a"}}, Stacks: []Stack{{Frames: []int{0, 1}}},
			Groups: []Group{{Samples: []Sample{{Stack: 0, Values: []int64{1}}}}}},
		// The first sample in error is reported, whatever its error.
		"frame, then mismatch": {Types: []ValueType{{"samples", "count"}}, Frames: []Frame{{Name: "a"}}, Stacks: []Stack{{Frames: []int{0, 1}}, {Frames: []int{0}}},
			Groups: []Group{{Samples: []Sample{{Stack: 1, Values: []int64{1}}, {Stack: 0, Values: []int64{1}}, {Stack: 1, Values: []int64{1, 2}}}}}},
	} {
		err := WritePprof(&bytes.Buffer{}, w)
		if err == nil || !strings.Contains(err.Error(), "pprof conversion") {
			t.Errorf("%s: WritePprof error %v, want a pprof conversion error", name, err)
		}
		pp, perr := w.Pprof()
		if pp != nil || perr == nil || perr.Error() != err.Error() {
			t.Errorf("%s: Pprof() = %v, %v; want nil and WritePprof's error %v", name, pp, perr, err)
		}
	}
}

// randomWeighted builds a Profile from the bytes of data, read as a
// stream of choices (zeros once data runs out).
func randomWeighted(data []byte) *Profile {
	next := func(n int) int {
		if n <= 0 {
			return 0
		}
		var x uint16
		if len(data) >= 2 {
			x = binary.LittleEndian.Uint16(data)
			data = data[2:]
		} else if len(data) == 1 {
			x, data = uint16(data[0]), nil
		}
		return int(x) % n
	}
	pool := []string{"", "a", "b", "app.dll", "System.Private.CoreLib.dll", "void  (int32)", "class System.String (bool)",
		"wall", "nanoseconds", "count", "thread", NoFrames, "\xff", "x\x00y", strings.Repeat("z", 200)}
	str := func() string { return pool[next(len(pool))] }
	num := func() int64 {
		switch next(4) {
		case 0:
			return 0
		case 1:
			return int64(next(300))
		case 2:
			return -int64(next(1 << 16))
		}
		return int64(next(1<<16)) << 47
	}
	w := &Profile{Name: str(), ProcessID: next(3), Duration: time.Duration(num()), Period: num(),
		PeriodType: ValueType{str(), str()}, Active: -1}
	if next(2) == 1 {
		w.Start = time.Unix(0, num())
	}
	for range next(4) {
		w.Types = append(w.Types, ValueType{str(), str()})
	}
	w.Default = next(len(w.Types)+2) - 1
	for range next(5) {
		w.Comments = append(w.Comments, str())
	}
	for range next(20) {
		w.Frames = append(w.Frames, Frame{Name: str(), Module: str(), Signature: str(), Address: uint64(num())})
	}
	for range next(10) {
		var st Stack
		for range next(6) {
			if len(w.Frames) > 0 {
				st.Frames = append(st.Frames, next(len(w.Frames)))
			}
		}
		w.Stacks = append(w.Stacks, st)
	}
	for range next(4) {
		g := Group{ThreadID: uint64(num())}
		for range next(6) {
			if len(w.Stacks) == 0 {
				break
			}
			s := Sample{Stack: next(len(w.Stacks))}
			n := len(w.Types)
			if next(16) == 0 {
				n = next(4) // now and then a mismatch
			}
			for range n {
				s.Values = append(s.Values, num())
			}
			g.Samples = append(g.Samples, s)
		}
		w.Groups = append(w.Groups, g)
	}
	return w
}

// FuzzPprofEncoding: any Profile, encoded directly, parses in pprof as
// Pprof's profile (or fails with Pprof's error).
func FuzzPprofEncoding(f *testing.F) {
	for seed := range 64 {
		data := make([]byte, 256)
		x := uint64(seed)*0x9E3779B97F4A7C15 + 1
		for i := range data {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			data[i] = byte(x)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPprofEncoding(t, "random", randomWeighted(data))
	})
}

// writeSystemName, which WritePprof uses, writes what systemName, which
// Pprof uses, returns: the runtime's signature with the name where it left
// two spaces, or the name then the signature.
func TestAppendSystemName(t *testing.T) {
	for _, c := range []struct {
		f    Frame
		want string
	}{
		{Frame{Name: "App.Type.Method", Signature: "instance void  (int32)"}, "instance void App.Type.Method(int32)"},
		{Frame{Name: "App.Type.Method", Signature: "(int32)"}, "App.Type.Method (int32)"},
		{Frame{Name: "M", Signature: "  ("}, " M("},
	} {
		if got := systemName(c.f); got != c.want {
			t.Errorf("systemName(%+v) = %q, want %q", c.f, got, c.want)
		}
		var b strings.Builder
		b.WriteString("x")
		writeSystemName(&b, &c.f)
		if got := b.String(); got != "x"+c.want {
			t.Errorf("writeSystemName(%+v) = %q, want x%q", c.f, got, c.want)
		}
	}
}

// pprofStrings gives each string one index, in order of first use, "" 0,
// also after growing past the room it was made with.
func TestPprofStrings(t *testing.T) {
	tab := newPprofStrings(2)
	want := map[string]int64{"": 0}
	for round := range 3 {
		for i := range 1000 {
			s := strconv.Itoa(i * 7 % 1000)
			id := tab.id(s)
			if w, ok := want[s]; ok && w != id {
				t.Fatalf("round %d: %q has index %d, earlier %d", round, s, id, w)
			} else if !ok {
				if id != int64(len(want)) {
					t.Fatalf("%q: index %d for the string number %d", s, id, len(want))
				}
				want[s] = id
			}
		}
		if tab.id("") != 0 {
			t.Fatal(`"" is not 0`)
		}
	}
	if len(tab.list) != len(want) {
		t.Fatalf("%d strings listed, want %d", len(tab.list), len(want))
	}
	for s, id := range want {
		if tab.list[id] != s {
			t.Errorf("list[%d] = %q, want %q", id, tab.list[id], s)
		}
	}
}

// TestAppendPprofLocation holds the location encoder, a word a varint for
// IDs and addresses below 1<<56 and byte by byte above, to the message
// built field by field with encoding/binary, at every varint length, after
// a prefix it must keep and with no more room than the message needs.
func TestAppendPprofLocation(t *testing.T) {
	values := []uint64{0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 0x1234_5678, 0x7ffd_1234_5678, 1<<56 - 1, 1 << 56, 0xffff_ffff_8100_0000, math.MaxUint64}
	for _, id := range values[1:] {
		for _, addr := range values {
			var line, msg []byte
			line = binary.AppendUvarint(append(line, ppLineFunctionID<<3|wireVarint), id)
			msg = binary.AppendUvarint(append(msg, ppLocationID<<3|wireVarint), id)
			msg = append(msg, ppLocationMappingID<<3|wireVarint, pprofMappingID)
			if addr != 0 {
				msg = binary.AppendUvarint(append(msg, ppLocationAddress<<3|wireVarint), addr)
			}
			msg = append(append(msg, ppLocationLine<<3|wireBytes, byte(len(line))), line...)
			want := append([]byte{0xee, ppLocation<<3 | wireBytes, byte(len(msg))}, msg...)
			for _, room := range []int{0, len(want) - 1, 64} {
				b := make([]byte, 1, 1+room)
				b[0] = 0xee
				if got := appendPprofLocation(b, id, addr); !bytes.Equal(got, want) {
					t.Errorf("id %#x address %#x, room %d: got % x, want % x", id, addr, room, got, want)
				}
			}
		}
	}
}
