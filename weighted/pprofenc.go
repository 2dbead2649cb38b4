package weighted

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/bits"
	"slices"
	"strings"
)

// This file writes the pprof protocol buffer (github.com/google/pprof's
// proto/profile.proto) straight from a Profile, for WritePprof.
//
// Why not the library's encoder: the project prefers well-kept libraries,
// and github.com/google/pprof/profile stays the model of what is written
// (Profile.Pprof builds the same profile as a profile.Profile for library
// users, and the tests parse this encoder's output with profile.Parse and
// compare it with Pprof's). Only its encoder is replaced: Profile.Write
// builds a string-table map and re-encodes every sample's labels through a
// sorted key list and a fresh location-ID slice (about 10 000 small
// allocations on the objver4 capture), which alone costs about 2/3 of
// decoding the trace, and issue 16 holds every conversion to at most twice
// the decoding. Here the string table is built once, deduplicated per
// string, a group's "thread" label is encoded once for all its samples,
// and nested messages are written size-first into one buffer.

// Field numbers of profile.proto.
const (
	// Profile
	ppSampleType        = 1
	ppSample            = 2
	ppMapping           = 3
	ppLocation          = 4
	ppFunction          = 5
	ppStringTable       = 6
	ppTimeNanos         = 9
	ppDurationNanos     = 10
	ppPeriodType        = 11
	ppPeriod            = 12
	ppComment           = 13
	ppDefaultSampleType = 14
	// ValueType
	ppValueTypeType = 1
	ppValueTypeUnit = 2
	// Sample
	ppSampleLocationID = 1
	ppSampleValue      = 2
	ppSampleLabel      = 3
	// Label
	ppLabelKey = 1
	ppLabelNum = 3
	// Mapping
	ppMappingID           = 1
	ppMappingMemoryLimit  = 3
	ppMappingFilename     = 5
	ppMappingHasFunctions = 7
	// Location
	ppLocationID        = 1
	ppLocationMappingID = 2
	ppLocationAddress   = 3
	ppLocationLine      = 4
	// Line
	ppLineFunctionID = 1
	// Function
	ppFunctionID         = 1
	ppFunctionName       = 2
	ppFunctionSystemName = 3
	ppFunctionFilename   = 4
)

// Protocol buffer wire types.
const (
	wireVarint = 0
	wireBytes  = 2
)

// pprofMappingID is the ID of the one mapping, the profile's title.
const pprofMappingID = 1

// pprofStrings is a pprof string table: strings in order of first use,
// "" first (index 0, as the format requires). Its index is a table of its
// own (open addressing, linear probing) rather than a map: a string is
// hashed and compared once or twice, and the index takes 4 bytes a slot
// (a map[string]int64 takes more than 24 bytes an entry, allocated anew
// for every profile written).
type pprofStrings struct {
	list  []string
	slots []int32 // list indexes; 0 (the index of "") for an empty slot
	seed  maphash.Seed
}

// newPprofStrings returns a table with room for n strings without growing.
func newPprofStrings(n int) *pprofStrings {
	slots := 16
	for slots < 2*n {
		slots *= 2
	}
	return &pprofStrings{list: make([]string, 1, n+1), slots: make([]int32, slots), seed: maphash.MakeSeed()}
}

// id returns the index of s, adding it at the end the first time.
func (t *pprofStrings) id(s string) int64 {
	if s == "" {
		return 0
	}
	mask := uint64(len(t.slots) - 1)
	i := maphash.String(t.seed, s) & mask
	for ; t.slots[i] != 0; i = (i + 1) & mask {
		if k := t.slots[i]; t.list[k] == s {
			return int64(k)
		}
	}
	k := len(t.list)
	t.list = append(t.list, s)
	t.slots[i] = int32(k)
	if 2*k >= len(t.slots) {
		t.grow()
	}
	return int64(k)
}

// grow doubles the slots (at most half of them are in use).
func (t *pprofStrings) grow() {
	t.slots = make([]int32, 2*len(t.slots))
	mask := uint64(len(t.slots) - 1)
	for k := 1; k < len(t.list); k++ {
		i := maphash.String(t.seed, t.list[k]) & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = int32(k)
	}
}

// varintLen is the encoded size of x as a varint.
func varintLen(x uint64) int {
	return (bits.Len64(x|1) + 6) / 7
}

// putUvarint writes x as a varint at b[i:], returning the index past it.
func putUvarint(b []byte, i int, x uint64) int {
	for x >= 0x80 {
		b[i] = byte(x) | 0x80
		x >>= 7
		i++
	}
	b[i] = byte(x)
	return i + 1
}

// putLocationIDs writes the location IDs of frames (location f+1 is frame
// f) at b[j:], returning the index past them and -1, or the index in frames
// of the first frame not below nFrames. A function of its own, not
// inlined: in appendPprof's body the loop keeps its variables on the
// stack, several instructions more an ID.
//
//go:noinline
func putLocationIDs(b []byte, j int, frames []int, nFrames int) (int, int) {
	for k, f := range frames {
		if uint(f) >= uint(nFrames) {
			return j, k
		}
		j = putUvarint(b, j, uint64(f)+1)
	}
	return j, -1
}

// pprofSampleLen returns the size of a Sample message of locs bytes of
// packed location IDs, the values and a label field of labelLen bytes, and
// the size of its packed values.
func pprofSampleLen(locs int, values []int64, labelLen int) (n, vals int) {
	for _, v := range values {
		vals += varintLen(uint64(v))
	}
	n = lenFieldLen(locs) + labelLen
	if len(values) > 0 {
		n += lenFieldLen(vals)
	}
	return n, vals
}

// pprofLabelLen is the size of a Label field of key and number num.
func pprofLabelLen(key, num uint64) int {
	return lenFieldLen(uintFieldLen(key) + uintFieldLen(num))
}

// appendKey appends a field's key (field number and wire type; every field
// number here is below 16, so one byte).
func appendKey(b []byte, field int, wire int) []byte {
	return append(b, byte(field<<3|wire))
}

// uintFieldLen is the size of a varint field holding x, 0 when x is 0 (a
// proto3 default is not written).
func uintFieldLen(x uint64) int {
	if x == 0 {
		return 0
	}
	return 1 + varintLen(x)
}

// appendUintField appends a varint field, nothing when x is 0.
func appendUintField(b []byte, field int, x uint64) []byte {
	if x == 0 {
		return b
	}
	return binary.AppendUvarint(appendKey(b, field, wireVarint), x)
}

// appendLenKey appends the key and length of a length-delimited field.
func appendLenKey(b []byte, field int, n int) []byte {
	return binary.AppendUvarint(appendKey(b, field, wireBytes), uint64(n))
}

// lenFieldLen is the size of a length-delimited field of n bytes.
func lenFieldLen(n int) int {
	return 1 + varintLen(uint64(n)) + n
}

// appendValueType appends a ValueType message as field.
func appendValueType(b []byte, field int, typ, unit int64) []byte {
	n := uintFieldLen(uint64(typ)) + uintFieldLen(uint64(unit))
	b = appendLenKey(b, field, n)
	b = appendUintField(b, ppValueTypeType, uint64(typ))
	return appendUintField(b, ppValueTypeUnit, uint64(unit))
}

// appendPprof appends the uncompressed pprof protocol buffer of w to b: the
// profile Pprof builds (same sample types, default type, period, time,
// comments, mapping, functions, locations and samples, with the same IDs),
// with its string table in order of first use. It returns Pprof's errors
// for samples whose values do not match the types, and an error instead of
// a panic for a stack or frame index out of range.
func (w *Profile) appendPprof(b []byte) ([]byte, error) {
	nFrames := len(w.Frames)
	// The frames' part of the output and of the string table: at most a
	// name, a system name and a module per frame, but most frames have no
	// signature (their system name is their name) and share their module
	// with the frame before. A frame's location and function are sized to
	// the byte but for their string indices, of at most idLen bytes each
	// (the table holds at most 3 strings a frame, the comments, the types'
	// and the few fixed ones): the buffer's capacity is what the
	// conversion allocates and clears. A location (appendPprofLocation:
	// ID, mapping, address, a line of the function's ID) and a function
	// (appendPprofFunction: ID and three string indices, the module's
	// only when it is not "", as for frames without a module) are each
	// under 128 bytes, their key and length 2 bytes.
	idLen := varintLen(uint64(3*nFrames + len(w.Comments) + 2*len(w.Types) + 16))
	frameSize, frameStrings, sysSize := w.pprofFrameSizes(idLen)
	strs := newPprofStrings(frameStrings + len(w.Comments) + 2*len(w.Types) + 8)

	for _, t := range w.Types {
		strs.id(t.Type)
		strs.id(t.Unit)
	}
	// Every location ID is at most emptyID, the empty stack's
	// pseudo-location after the frames (location i+1 is frame i).
	emptyID := uint64(nFrames + 1)
	idMax := varintLen(emptyID)
	// Size the buffer from above so that it never grows: each sample with
	// idMax bytes an ID (the samples are checked as they are written,
	// below), the tables with every string written once and each
	// module once per run of frames of that module.
	size, base := 256+16*len(w.Types), len(b)
	for gi := range w.Groups {
		label := 0
		if id := w.Groups[gi].ThreadID; id != 0 && len(w.Groups[gi].Samples) > 0 {
			label = pprofLabelLen(uint64(strs.id("thread")), id)
		}
		for _, s := range w.Groups[gi].Samples {
			ids := 1 // a stack out of range is refused when written
			if uint(s.Stack) < uint(len(w.Stacks)) {
				ids = max(ids, len(w.Stacks[s.Stack].Frames))
			}
			n, _ := pprofSampleLen(ids*idMax, s.Values, label)
			size += lenFieldLen(n)
		}
	}
	size += frameSize
	title := w.Title() // "process <pid>" is built by concatenation
	size += len(title) + len(NoFrames) + len(w.PeriodType.Type) + len(w.PeriodType.Unit) + 120
	for _, t := range w.Types {
		size += len(t.Type) + len(t.Unit) + 6
	}
	for _, c := range w.Comments {
		size += len(c) + 3 + 10 + 3
	}
	// 8 bytes more for the gzip trailer of a small profile (WritePprof).
	b = slices.Grow(b, size+8)

	for _, t := range w.Types {
		b = appendValueType(b, ppSampleType, strs.id(t.Type), strs.id(t.Unit))
	}

	// Samples: one per group and stack, locations leaf first, the group's
	// thread label encoded once. Each is checked as Pprof's CheckValid
	// does, in the order of the samples, and written in place after one
	// check for room for its bound (see above). Its location IDs are
	// written first, 4 bytes in: where they go when the sample's size and
	// the IDs' size take one byte each, as they do but for samples of
	// more than 60 to 120 frames. Otherwise the IDs are moved up to make
	// room for the header (a sizing pass over every sample's frames costs
	// more than a move of the few samples that need it).
	var label []byte
	empty := false
	for gi := range w.Groups {
		g := &w.Groups[gi]
		label = label[:0]
		if g.ThreadID != 0 && len(g.Samples) > 0 {
			key := uint64(strs.id("thread"))
			label = appendLenKey(label, ppSampleLabel, uintFieldLen(key)+uintFieldLen(g.ThreadID))
			label = appendUintField(label, ppLabelKey, key)
			label = appendUintField(label, ppLabelNum, g.ThreadID)
		}
		for _, s := range g.Samples {
			if len(w.Types) == 0 {
				return b[:base], fmt.Errorf("profile: pprof conversion: missing sample type information")
			}
			if len(s.Values) != len(w.Types) {
				return b[:base], fmt.Errorf("profile: pprof conversion: mismatch: sample has %d values vs. %d types", len(s.Values), len(w.Types))
			}
			if uint(s.Stack) >= uint(len(w.Stacks)) {
				return b[:base], fmt.Errorf("profile: pprof conversion: sample of thread %d has stack %d of %d", g.ThreadID, s.Stack, len(w.Stacks))
			}
			frames := w.Stacks[s.Stack].Frames
			// The sample's size when its IDs take ids bytes.
			ids := max(len(frames), 1) * idMax
			n, vals := pprofSampleLen(ids, s.Values, len(label))
			i := len(b)
			b = slices.Grow(b, lenFieldLen(n))
			b = b[:cap(b)]
			j, bad := putLocationIDs(b, i+4, frames, nFrames)
			if bad >= 0 {
				return b[:base], fmt.Errorf("profile: pprof conversion: stack %d has frame %d of %d", s.Stack, frames[bad], nFrames)
			}
			if len(frames) == 0 {
				empty = true
				j = putUvarint(b, j, emptyID)
			}
			locs := j - (i + 4)
			n += lenFieldLen(locs) - lenFieldLen(ids)
			if n >= 0x80 {
				// locs < n: the IDs' size takes 1 or more bytes.
				head := 2 + varintLen(uint64(n)) + varintLen(uint64(locs))
				j = i + head + locs
				copy(b[i+head:j], b[i+4:])
			}
			b[i] = ppSample<<3 | wireBytes
			i = putUvarint(b, i+1, uint64(n))
			b[i] = ppSampleLocationID<<3 | wireBytes
			putUvarint(b, i+1, uint64(locs))
			if len(s.Values) > 0 {
				b[j] = ppSampleValue<<3 | wireBytes
				j = putUvarint(b, j+1, uint64(vals))
				for _, v := range s.Values {
					j = putUvarint(b, j, uint64(v))
				}
			}
			b = append(b[:j], label...)
		}
	}

	b = w.appendPprofFrames(b, strs, title, sysSize, empty)
	return w.appendPprofTrailer(b, strs), nil
}

// pprofFrameSizes returns the frames' part of the output (but for their
// strings' bytes, which the table counts) and of the string table, and
// the bytes of the system names of the frames with a signature, for
// string indices of at most idLen bytes (see appendPprof).
func (w *Profile) pprofFrameSizes(idLen int) (frameSize, frameStrings, sysSize int) {
	perFrame := 2 + 2 + 2 + 2 + 2*(1+idLen) // keys and lengths, mapping, line, name and system name
	for i := range w.Frames {
		f := &w.Frames[i]
		// The location, the function (the ID three times in all) and the
		// name's string.
		frameSize += perFrame + 3*(1+varintLen(uint64(i)+1)) + uintFieldLen(f.Address) + lenFieldLen(len(f.Name))
		frameStrings++
		// The system name when the frame has a signature (the name and
		// the signature; writeSystemName).
		if f.Signature != "" {
			n := len(f.Name) + len(f.Signature) + 1
			sysSize += n
			frameSize += lenFieldLen(n)
			frameStrings++
		}
		if f.Module != "" {
			frameSize += 1 + idLen
		}
		if i == 0 || f.Module != w.Frames[i-1].Module {
			frameSize += lenFieldLen(len(f.Module))
			frameStrings++
		}
	}
	return frameSize, frameStrings, sysSize
}

// appendPprofFrames appends the mapping, one location and one function per
// frame, and those of the empty stack when a sample has it (empty).
func (w *Profile) appendPprofFrames(b []byte, strs *pprofStrings, title string, sysSize int, empty bool) []byte {
	emptyID := uint64(len(w.Frames) + 1)
	// The mapping: the profile's title, up to past the highest address,
	// with functions (pprof then neither looks for the binary nor
	// complains that it has none).
	var limit uint64
	for i := range w.Frames {
		limit = max(limit, w.Frames[i].Address+1)
	}
	file := uint64(strs.id(title))
	n := uintFieldLen(pprofMappingID) + uintFieldLen(limit) + uintFieldLen(file) + uintFieldLen(1)
	b = appendLenKey(b, ppMapping, n)
	b = appendUintField(b, ppMappingID, pprofMappingID)
	b = appendUintField(b, ppMappingMemoryLimit, limit)
	b = appendUintField(b, ppMappingFilename, file)
	b = appendUintField(b, ppMappingHasFunctions, 1)

	// Locations: one per frame, with one line of the frame's function.
	for i := range w.Frames {
		b = appendPprofLocation(b, uint64(i)+1, w.Frames[i].Address)
	}
	if empty {
		b = appendPprofLocation(b, emptyID, 0)
	}

	// Functions: the name, the name with the signature, the module. The
	// system names are built in one string (a string each would be an
	// allocation each), sysNames[sysEnds[k-1]:sysEnds[k]] that of the
	// k-th frame with a signature.
	var sysBuf strings.Builder
	sysBuf.Grow(sysSize)
	var sysEnds []int
	for i := range w.Frames {
		if f := &w.Frames[i]; f.Signature != "" {
			writeSystemName(&sysBuf, f)
			sysEnds = append(sysEnds, sysBuf.Len())
		}
	}
	sysNames, sysLo := sysBuf.String(), 0
	var lastModule string
	var lastModuleID int64
	for i := range w.Frames {
		f := &w.Frames[i]
		name := strs.id(f.Name)
		sys := name
		if f.Signature != "" {
			sys = strs.id(sysNames[sysLo:sysEnds[0]])
			sysLo, sysEnds = sysEnds[0], sysEnds[1:]
		}
		if f.Module != lastModule || lastModuleID == 0 {
			lastModule, lastModuleID = f.Module, strs.id(f.Module)
		}
		b = appendPprofFunction(b, uint64(i)+1, name, sys, lastModuleID)
	}
	if empty {
		id := strs.id(NoFrames)
		b = appendPprofFunction(b, emptyID, id, id, 0)
	}
	return b
}

// appendPprofTrailer appends the string table and the fields that follow
// it: time, duration, period, comments and the default sample type.
func (w *Profile) appendPprofTrailer(b []byte, strs *pprofStrings) []byte {
	// The string indices of the remaining fields, before the table.
	var timeNanos int64
	if !w.Start.IsZero() {
		timeNanos = w.Start.UnixNano()
	}
	periodType, periodUnit := strs.id(w.PeriodType.Type), strs.id(w.PeriodType.Unit)
	comments := 0
	for _, c := range w.Comments {
		comments += varintLen(uint64(strs.id(c)))
	}
	var def int64
	if d := w.pprofDefault(); d != "" {
		def = strs.id(d)
	}

	for _, s := range strs.list {
		b = appendLenKey(b, ppStringTable, len(s))
		b = append(b, s...)
	}
	b = appendUintField(b, ppTimeNanos, uint64(timeNanos))
	b = appendUintField(b, ppDurationNanos, uint64(w.Duration))
	if periodType != 0 || periodUnit != 0 {
		b = appendValueType(b, ppPeriodType, periodType, periodUnit)
	}
	b = appendUintField(b, ppPeriod, uint64(w.Period))
	if len(w.Comments) > 0 {
		b = appendLenKey(b, ppComment, comments)
		for _, c := range w.Comments {
			b = binary.AppendUvarint(b, uint64(strs.id(c)))
		}
	}
	b = appendUintField(b, ppDefaultSampleType, uint64(def))
	return b
}

// appendPprofLocation appends a Location of the main mapping with one Line
// of function id (the function of location id has the same ID), written
// in place after one check for room. The message and its line are under
// 128 bytes (at most 37), so their lengths take one byte.
//
// An ID and an address below 1<<56 (every ID, and every user-space
// address) are written straight, a word each (varintWord): a loop a byte
// costs a bound check and several instructions for each of the 7 bytes of
// most addresses.
func appendPprofLocation(b []byte, id, address uint64) []byte {
	if id|address >= 1<<56 {
		return appendPprofLocationVarints(b, id, address)
	}
	// IDs (frame numbers) are mostly of 1 or 2 bytes.
	idWord, idLen := id, 1
	switch {
	case id >= 1<<14:
		idWord, idLen = varintWord(id)
	case id >= 0x80:
		idWord, idLen = id&0x7f|0x80|id>>7<<8, 2
	}
	addrWord, addrLen := varintWord(address)
	addrField := 1 + addrLen
	if address == 0 {
		addrField = 0 // a proto3 default is not written
	}
	n := 2*(1+idLen) + 2 + addrField + 2
	i := len(b)
	// Each word is written whole, 8 bytes from where its varint starts
	// (pprofLocationRoom).
	b = slices.Grow(b, pprofLocationRoom)
	p := (*[pprofLocationRoom]byte)(b[i : i+pprofLocationRoom])
	p[0], p[1], p[2] = ppLocation<<3|wireBytes, byte(n), ppLocationID<<3|wireVarint
	binary.LittleEndian.PutUint64(p[3:], idWord)
	k := 3 + idLen
	p[k], p[k+1] = ppLocationMappingID<<3|wireVarint, pprofMappingID
	k += 2
	if address != 0 {
		p[k] = ppLocationAddress<<3 | wireVarint
		binary.LittleEndian.PutUint64(p[k+1:], addrWord)
		k += addrField
	}
	p[k], p[k+1], p[k+2] = ppLocationLine<<3|wireBytes, byte(1+idLen), ppLineFunctionID<<3|wireVarint
	binary.LittleEndian.PutUint64(p[k+3:], idWord)
	return b[:i+2+n]
}

// pprofLocationRoom is the room appendPprofLocation writes in, the size
// of a location of an ID and an address of 8 bytes each: the last word
// (the line's function ID) starts at most 2+1+8+2+1+8+3 bytes in, and
// ends 8 bytes further.
const pprofLocationRoom = 2 + 1 + 8 + 2 + 1 + 8 + 3 + 8

// appendPprofLocationVarints is appendPprofLocation for an ID or an
// address of 9 or 10 bytes (a kernel address), byte by byte.
func appendPprofLocationVarints(b []byte, id, address uint64) []byte {
	idLen := varintLen(id)
	n := 2*(1+idLen) + 2 + uintFieldLen(address) + 2
	i, m := len(b), 2+n
	b = slices.Grow(b, m)[:i+m]
	b[i], b[i+1], b[i+2] = ppLocation<<3|wireBytes, byte(n), ppLocationID<<3|wireVarint
	i = putUvarint(b, i+3, id)
	b[i], b[i+1] = ppLocationMappingID<<3|wireVarint, pprofMappingID
	i = putUintField(b, i+2, ppLocationAddress, address)
	b[i], b[i+1], b[i+2] = ppLocationLine<<3|wireBytes, byte(1+idLen), ppLineFunctionID<<3|wireVarint
	putUvarint(b, i+3, id)
	return b
}

// varintWord returns the varint of x, below 1<<56, as the bytes of a
// little-endian word, and its length: x's 7-bit groups spread a byte
// each (halves of 28 bits to 32-bit lanes, of 14 bits to 16-bit lanes,
// of 7 bits to bytes), the continuation bit set in all bytes but the
// last. Small enough to be inlined.
func varintWord(x uint64) (uint64, int) {
	n := varintLen(x)
	w := x&0xfffffff | x<<4&0x0fffffff_00000000
	w = w&0x00003fff_00003fff | w<<2&0x3fff0000_3fff0000
	w = w&0x007f007f_007f007f | w<<1&0x7f007f00_7f007f00
	// (&63: the shift is below 64, which spares the compiler's check.)
	return w | 0x80808080_80808080&(1<<(8*(n-1)&63)-1), n
}

// appendPprofFunction appends a Function; name, sys and file index the
// string table. It is written in place after one check for room; the
// message is under 128 bytes (at most 44), its length one byte.
func appendPprofFunction(b []byte, id uint64, name, sys, file int64) []byte {
	n := 1 + varintLen(id) + uintFieldLen(uint64(name)) + uintFieldLen(uint64(sys)) + uintFieldLen(uint64(file))
	i, m := len(b), 2+n
	b = slices.Grow(b, m)[:i+m]
	b[i], b[i+1], b[i+2] = ppFunction<<3|wireBytes, byte(n), ppFunctionID<<3|wireVarint
	i = putUvarint(b, i+3, id)
	i = putUintField(b, i, ppFunctionName, uint64(name))
	i = putUintField(b, i, ppFunctionSystemName, uint64(sys))
	putUintField(b, i, ppFunctionFilename, uint64(file))
	return b
}

// putUintField writes a varint field at b[i:] as appendUintField appends
// it (nothing when x is 0), returning the index past it.
func putUintField(b []byte, i, field int, x uint64) int {
	if x == 0 {
		return i
	}
	b[i] = byte(field<<3 | wireVarint)
	return putUvarint(b, i+1, x)
}
