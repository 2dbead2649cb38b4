package profile

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"slices"
	"strings"

	"github.com/clrdiag/clrdiag/weighted"
)

// symbolise resolves every distinct address once and turns the raw stacks
// into p.Frames and p.Stacks, merging raw stacks that resolve to the same
// frames. It returns the p.Stacks index of each raw stack and the number of
// resolved frames of each of p.Stacks; both nil when the trace has neither
// methods nor sampled threads: each raw stack is then the Stack of the same
// index, with no frame resolved (symStack reads them), and nothing else
// needs the tables.
func (b *Builder) symbolise(p *Profile) (symOf, stackResolved []int) {
	nStacks, nAddrs := b.st.stacks(), len(b.st.addrs)
	// Sized once (a frame per address at most, a stack per raw stack at
	// most, every stack's frames in one array), and the tables of uint32
	// in one allocation: frameOf[i], the frame of address i of the stack
	// store (resolver.resolve), methodFrame (see resolver), and slots,
	// which finds the symbolised stacks by their frames: index+1 in
	// p.Stacks per slot (0: empty), at most half full. Without methods
	// there are no tables: see symboliseUnresolved.
	merging := b.methods() > 0
	// Without methods symOf is the identity, and only the threads'
	// samples and timelines index it rather than calling symStack.
	var ints []int
	if merging || len(b.order) > 0 {
		ints = make([]int, 2*nStacks)
		symOf, stackResolved = ints[:nStacks:nStacks], ints[nStacks:nStacks]
	}
	overCap := min(b.overCap+1, 1) // the over-the-cap frame
	p.Frames = make([]weighted.Frame, 0, nAddrs+overCap)
	p.Stacks = make([]weighted.Stack, 0, nStacks)
	arena := make([]int, 0, b.st.totalFrames()+overCap)
	if !merging {
		b.symboliseUnresolved(p, arena)
		if symOf == nil {
			return nil, nil
		}
		for i := range symOf {
			symOf[i] = i
		}
		return symOf, ints[nStacks:]
	}
	nSlots := max(2, 1<<bits.Len(uint(2*nStacks)))
	tables := make([]uint32, nAddrs+b.methods()+nSlots)
	frameOf, methodFrame, slots := tables[:nAddrs:nAddrs], tables[nAddrs:len(tables)-nSlots:len(tables)-nSlots], tables[len(tables)-nSlots:]
	mask := uint64(nSlots - 1)
	// Resolved frames merge by module and name; an unresolved address is a
	// frame of its own.
	var names frameNamer
	names.text.Grow(24 * nAddrs)
	// merge is asked once per method an address resolves to and once for
	// the over-the-cap frame: its table, sized once for that many, never
	// fills.
	mergeable := min(nAddrs, b.methods()) + overCap
	r := resolver{b: b, p: p, names: &names, methodFrame: methodFrame, mergeable: mergeable}
	// The frames are numbered in order of first sight in the stacks taken
	// in order. Every address is in a stack, and the store's addresses
	// are in that order already (a stack's new addresses are added with
	// it), so they are resolved in a loop of their own, with the
	// over-the-cap frame between the addresses of the stacks before the
	// over-the-cap stack and the others; the loop over the stacks then
	// only looks frames up.
	overCapFrame := -1
	for ai := range frameOf {
		if ai == b.overCapAddrs && b.overCap >= 0 {
			overCapFrame = r.overCapFrame()
		}
		frameOf[ai] = r.resolve(int32(ai))
	}
	if b.overCap >= 0 && overCapFrame < 0 { // no address after it
		overCapFrame = r.overCapFrame()
	}
	for i := range nStacks {
		// The stack's frames are appended to the arena (sized for every
		// raw stack: it never grows), and cut off again when the stack is
		// one of p.Stacks already.
		lo := len(arena)
		h, resolved := uint64(0), 0
		if i == b.overCap {
			arena = append(arena, overCapFrame)
			h = uint64(overCapFrame) * 0x9E3779B97F4A7C15
		}
		for _, ai := range b.st.stack(i) {
			v := frameOf[ai]
			arena = append(arena, int(v>>1)-1)
			resolved += int(v & 1)
			h = (h ^ uint64(v)) * 0x9E3779B97F4A7C15
			h ^= h >> 29
		}
		frames := arena[lo:]
		h = (h ^ uint64(len(frames))) * 0x9E3779B97F4A7C15
		j := h >> 32 & mask
		for slots[j] != 0 && !slices.Equal(p.Stacks[slots[j]-1].Frames, frames) {
			j = (j + 1) & mask
		}
		si := int(slots[j]) - 1
		if si < 0 {
			si = len(p.Stacks)
			slots[j] = uint32(si + 1)
			p.Stacks = append(p.Stacks, weighted.Stack{Frames: frames[:len(frames):len(frames)]})
			stackResolved = append(stackResolved, resolved)
		} else {
			arena = arena[:lo]
		}
		symOf[i] = si
	}
	return symOf, stackResolved
}

// symboliseUnresolved is symbolise for a trace without methods: every
// address is an unresolved frame of its own, numbered as the stack store
// numbers the addresses but for the over-the-cap frame, made between the
// addresses of the stacks before the over-the-cap stack and the others
// (from cut on, address ai is frame ai+1). The raw stacks, distinct as
// lists of addresses, are then distinct as lists of frames: each is one of
// p.Stacks, in the same order, with no frame resolved, and no table maps
// the addresses to frames or finds the stacks by their frames. arena is
// sized for every stack's frames.
func (b *Builder) symboliseUnresolved(p *Profile, arena []int) {
	addrs := b.st.addrs
	// Every address is named by hexText: "0x" and its digits, as many as
	// its value needs (a user-space address takes 12 of the 16 a uint64
	// may), counted rather than taken at most.
	var names frameNamer
	n := 0
	for _, a := range addrs {
		n += 2 + max(1, (bits.Len64(a)+3)/4)
	}
	names.text.Grow(n)
	cut, overCapFrame := len(addrs), -1
	if b.overCap >= 0 {
		cut = b.overCapAddrs
	}
	names.unresolvedAll(p, addrs[:cut])
	if b.overCap >= 0 {
		names.scratch = append(names.scratch[:0], OverCapFrame...)
		overCapFrame = names.merge(p, weighted.Frame{}, len(OverCapFrame), 1)
	}
	names.unresolvedAll(p, addrs[cut:])
	p.Symbols.Addresses += len(addrs)
	for i := range b.st.stacks() {
		lo := len(arena)
		if i == b.overCap {
			arena = append(arena, overCapFrame)
		}
		// Indexed stores rather than append's capacity test per frame.
		st := b.st.stack(i)
		frames := arena[len(arena) : len(arena)+len(st)]
		for j, ai := range st {
			f := int(ai)
			if f >= cut {
				f++
			}
			frames[j] = f
		}
		arena = arena[:len(arena)+len(st)]
		p.Stacks = append(p.Stacks, weighted.Stack{Frames: arena[lo:len(arena):len(arena)]})
	}
}

// symStack returns the Stack of raw stack raw and its resolved frames
// from symbolise's tables (raw and 0 when they are nil).
func symStack(symOf, stackResolved []int, raw int) (stack, resolved int) {
	if symOf == nil {
		return raw, 0
	}
	stack = symOf[raw]
	return stack, stackResolved[stack]
}

// resolver turns the addresses of the raw stacks into frames for
// symbolise. methodFrame[m] is 1 + the frame of method m of the symbol
// table (0: not yet): every return address in a method is one frame.
type resolver struct {
	b           *Builder
	p           *Profile
	names       *frameNamer
	methodFrame []uint32
	mergeable   int
}

// overCapFrame makes the frame of the over-the-cap stack.
func (r *resolver) overCapFrame() int {
	r.names.scratch = append(r.names.scratch[:0], OverCapFrame...)
	return r.names.merge(r.p, weighted.Frame{}, len(OverCapFrame), r.mergeable)
}

// resolve makes the frame of address ai of the stack store and returns
// (1 + the frame)<<1 | 1 if it is resolved (0 if not): its entry in
// symbolise's frameOf.
func (r *resolver) resolve(ai int32) uint32 {
	b, p := r.b, r.p
	addr := b.st.addrs[ai]
	p.Symbols.Addresses++
	mi := b.sym.symbols.index(addr)
	var v uint32
	if mi >= 0 {
		p.Symbols.ResolvedAddresses++
		fi := int(r.methodFrame[mi]) - 1
		if fi < 0 {
			var n int
			r.names.scratch, n = b.sym.symbols.appendNames(r.names.scratch[:0], mi)
			start, module := b.sym.symbols.method(mi)
			fi = r.names.merge(p, weighted.Frame{Module: module, Resolved: true, Address: start}, n, r.mergeable)
			r.methodFrame[mi] = uint32(fi + 1)
		}
		v = uint32(fi+1)<<1 | 1
	} else {
		v = uint32(r.names.unresolved(p, addr)+1) << 1
	}
	return v
}

// frameNamer names the frames symbolise makes: every name and signature
// is written to one strings.Builder and is a substring of what it holds
// (rather than four strings per method, or a buffer copied into one string
// at the end: strings.Builder's String does not copy, and what it has
// written never changes, so a substring stays valid when it grows). The
// frames that merge by module and name are found through a hash table.
type frameNamer struct {
	text strings.Builder
	// scratch holds the name and signature of the frame being merged
	// (written to text only when the frame is new).
	scratch []byte
	// slots finds the mergeable frames: p.Frames index+1 per slot (0:
	// empty), at most half full; nil until the first merge.
	slots []int32
	seed  maphash.Seed
}

// merge returns the frame of f's module whose name is scratch[:nameEnd]
// and whose signature is the rest of scratch, adding f so named when there
// is none. most bounds the frames merge is asked for (it sizes the table).
func (fn *frameNamer) merge(p *Profile, f weighted.Frame, nameEnd, most int) int {
	if fn.slots == nil {
		fn.seed = maphash.MakeSeed()
		fn.slots = make([]int32, max(64, 1<<bits.Len(uint(2*most))))
	}
	name := fn.scratch[:nameEnd]
	mask := uint64(len(fn.slots) - 1)
	j := maphash.Bytes(fn.seed, name) & mask
	for ; fn.slots[j] != 0; j = (j + 1) & mask {
		if g := &p.Frames[fn.slots[j]-1]; g.Name == string(name) && g.Module == f.Module {
			return int(fn.slots[j] - 1)
		}
	}
	f.Name, f.Signature = fn.add(nameEnd)
	fi := len(p.Frames)
	p.Frames = append(p.Frames, f)
	fn.slots[j] = int32(fi + 1)
	return fi
}

// add writes scratch to text and returns its name (scratch[:nameEnd]) and
// signature (the rest) as substrings of text.
func (fn *frameNamer) add(nameEnd int) (name, signature string) {
	fn.text.Write(fn.scratch)
	all := fn.text.String()
	s := all[len(all)-len(fn.scratch):]
	return s[:nameEnd], s[nameEnd:]
}

// unresolved adds the frame of an address no method holds, named by the
// address in hex, and returns its index.
func (fn *frameNamer) unresolved(p *Profile, addr uint64) int {
	fn.unresolvedAll(p, []uint64{addr})
	return len(p.Frames) - 1
}

// unresolvedAll adds the frame of each of addrs, addresses no method
// holds, named by the address in hex. The frames are filled in place in
// p.Frames grown once (symbolise sized it): appending a Frame literal
// copied all 64 bytes of it, through the write barrier while the
// collector marks. A name is written once into the names' text.
func (fn *frameNamer) unresolvedAll(p *Profile, addrs []uint64) {
	fi := len(p.Frames)
	p.Frames = slices.Grow(p.Frames, len(addrs))[:fi+len(addrs)]
	frames := p.Frames[fi:]
	for k, a := range addrs {
		buf, i := hexText(a)
		fn.text.Write(buf[i:])
		all := fn.text.String()
		f := &frames[k]
		f.Name, f.Address = all[len(all)-(len(buf)-i):], a
	}
}

// appendHex appends "0x" and v in lower-case hex, as
// strconv.AppendUint(append(b, "0x"...), v, 16) does, without a loop per
// digit (an unresolved frame is named so for each address): all 16 digits
// are made eight at a time, then the leading zeros skipped.
func appendHex(b []byte, v uint64) []byte {
	buf, i := hexText(v)
	return append(b, buf[i:]...)
}

// hexText returns appendHex's text of v as buf[i:].
func hexText(v uint64) (buf [18]byte, i int) {
	binary.BigEndian.PutUint64(buf[2:], hexDigits8(uint32(v>>32)))
	binary.BigEndian.PutUint64(buf[10:], hexDigits8(uint32(v)))
	i = 16 - max(1, (bits.Len64(v)+3)/4) // the first digit is buf[i+2]
	buf[i], buf[i+1] = '0', 'x'
	return buf, i
}

// hexDigits8 returns the eight hex digits of x, the least significant in
// the low byte: each nibble spread into a byte of its own, then 0-9 offset
// to '0'-'9' and 10-15 to 'a'-'f' (n+6 carries into bit 4 exactly when
// n >= 10; no byte overflows into the next).
func hexDigits8(x uint32) uint64 {
	y := uint64(x)
	y = (y | y<<16) & 0x0000FFFF0000FFFF
	y = (y | y<<8) & 0x00FF00FF00FF00FF
	y = (y | y<<4) & 0x0F0F0F0F0F0F0F0F
	letters := (y + 0x0606060606060606) >> 4 & 0x0101010101010101
	return y + 0x3030303030303030 + letters*('a'-'0'-10)
}
