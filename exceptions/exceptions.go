package exceptions

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/profile"
)

// Exception is one exception thrown.
type Exception struct {
	// ID numbers the exceptions of a Result from 1, in the order thrown.
	ID        int       `json:"id"`
	Timestamp time.Time `json:"timestamp"`
	// TypeName is the exception's type, with its namespace
	// (System.InvalidOperationException).
	TypeName string `json:"typeName"`
	Message  string `json:"message"`
	// HResult is the exception's HRESULT.
	HResult int32 `json:"hResult"`
	// Rethrown is set for a throw of an exception already thrown
	// (throw; in a catch block).
	Rethrown bool  `json:"rethrown,omitempty"`
	Stack    Stack `json:"stack"`
}

// Stack is the managed stack of a throw.
type Stack struct {
	ThreadID uint64 `json:"threadId"`
	// Frames are the managed frames, innermost (the throwing method)
	// first.
	Frames []Frame `json:"frames"`
}

// Frame is one managed method of a stack.
type Frame struct {
	// MethodName is the method's name (Invalid, .ctor, MoveNext).
	MethodName string `json:"methodName"`
	// TypeName is its declaring type with its namespace; ModuleName the
	// module (assembly file name without .dll).
	TypeName   string `json:"typeName,omitempty"`
	ModuleName string `json:"moduleName,omitempty"`
	// Signature is the runtime's signature of the method, e.g.
	// "void  (int32)".
	Signature string `json:"signature,omitempty"`
}

// Name is Type.Method, or Method when the type is not known.
func (f Frame) Name() string {
	if f.TypeName == "" {
		return f.MethodName
	}
	return f.TypeName + "." + f.MethodName
}

// Result is what a stream held.
type Result struct {
	// Exceptions are those kept and passing the filters, in the order
	// thrown.
	Exceptions []Exception
	// Thrown counts every ExceptionThrown event read; Dropped those past
	// Config.MaxExceptions; Filtered those the filters left out.
	Thrown, Dropped, Filtered int
	// UnresolvedFrames counts the stack addresses that no method of the
	// session or its rundown covers (native code, stubs): left out.
	UnresolvedFrames int
	// Undecoded counts the ExceptionThrown events whose payload did not
	// decode (left out).
	Undecoded int
	// Warnings say what made the result incomplete (a rundown cut short,
	// a damaged stream, a session the process ended).
	Warnings []string
}

// TypeNotReported is the TypeName of an exception whose event does not
// say its type (ExceptionThrown version 0, of runtimes before .NET Core).
const TypeNotReported = "(type not reported)"

// Defaults of Config.
const (
	DefaultMaxExceptions = 10000
	DefaultMaxFrames     = 256
)

// Config configures a Builder. The zero value keeps every exception up to
// DefaultMaxExceptions.
type Config struct {
	Filters Filters
	// MaxExceptions bounds the exceptions kept (before filtering);
	// 0 means DefaultMaxExceptions.
	MaxExceptions int
	// MaxFrames bounds the frames kept of each stack; 0 means
	// DefaultMaxFrames.
	MaxFrames int
}

// Filter describes exceptions: every field set must match. ExceptionType
// is compared with the exception's type, the others with its innermost
// managed frame (ModuleName with or without .dll); all comparisons are
// exact.
type Filter struct {
	ExceptionType string `json:"exceptionType,omitempty"`
	MethodName    string `json:"methodName,omitempty"`
	TypeName      string `json:"typeName,omitempty"`
	ModuleName    string `json:"moduleName,omitempty"`
}

// Matches reports whether the exception matches every field of f.
func (f Filter) Matches(e *Exception) bool {
	if f.ExceptionType != "" && f.ExceptionType != e.TypeName {
		return false
	}
	if f.MethodName == "" && f.TypeName == "" && f.ModuleName == "" {
		return true
	}
	if len(e.Stack.Frames) == 0 {
		return false
	}
	top := e.Stack.Frames[0]
	return (f.MethodName == "" || f.MethodName == top.MethodName) &&
		(f.TypeName == "" || f.TypeName == top.TypeName) &&
		(f.ModuleName == "" || f.ModuleName == top.ModuleName || strings.TrimSuffix(f.ModuleName, ".dll") == top.ModuleName)
}

// Filters select exceptions: those matching any Include filter (every
// exception when there is none), less those matching any Exclude filter.
type Filters struct {
	Include []Filter `json:"include,omitempty"`
	Exclude []Filter `json:"exclude,omitempty"`
}

// Keep reports whether the filters keep the exception.
func (fs Filters) Keep(e *Exception) bool {
	if len(fs.Include) > 0 && !slices.ContainsFunc(fs.Include, func(f Filter) bool { return f.Matches(e) }) {
		return false
	}
	return !slices.ContainsFunc(fs.Exclude, func(f Filter) bool { return f.Matches(e) })
}

// thrown is an exception as read, its stack not resolved yet.
type thrown struct {
	time     time.Time
	thread   uint64
	typ, msg string
	hresult  uint32
	flags    uint16
	stack    int32 // index in Builder.stacks, -1: none
}

type stackKey struct {
	region uint64
	id     uint32
}

// Builder reads the events of one stream into a Result.
type Builder struct {
	cfg     Config
	ptrSize int
	res     Result
	thrown  []thrown
	stacks  [][]uint64
	byKey   map[stackKey]int32
	// addrs are the stacks' addresses, sorted when sorted is set: the
	// rundown methods kept are those that cover one.
	addrs  []uint64
	sorted bool
	syms   profile.SymbolTable
}

// NewBuilder returns a Builder for a stream with header h.
func NewBuilder(h nettrace.Header, cfg Config) *Builder {
	if cfg.MaxExceptions <= 0 {
		cfg.MaxExceptions = DefaultMaxExceptions
	}
	if cfg.MaxFrames <= 0 {
		cfg.MaxFrames = DefaultMaxFrames
	}
	return &Builder{cfg: cfg, ptrSize: h.PointerSize, byKey: map[stackKey]int32{}}
}

// Add reads one event: ExceptionThrown, the methods and modules that name
// the stacks; other events are ignored.
func (b *Builder) Add(ev *nettrace.Event) {
	md := ev.Metadata
	if md == nil {
		return
	}
	version := uint8(min(md.Version, 255))
	switch md.ProviderName {
	case clrevents.ProviderRuntime:
		switch uint16(md.EventID) {
		case clrevents.IDExceptionThrown:
			b.addThrown(ev, version)
		case clrevents.IDMethodLoadVerbose:
			_ = b.syms.AddMethodPayload(ev.Payload, version)
		case clrevents.IDModuleLoad:
			b.addModule(ev, version)
		}
	case clrevents.ProviderRundown:
		switch uint16(md.EventID) {
		case clrevents.IDMethodDCStartVerbose, clrevents.IDMethodDCEndVerbose:
			b.addRundownMethod(ev.Payload, version)
		case clrevents.IDModuleDCStart, clrevents.IDModuleDCEnd:
			b.addModule(ev, version)
		}
	}
}

func (b *Builder) addModule(ev *nettrace.Event, version uint8) {
	m, err := clrevents.DecodeModuleLoad(ev.Payload, version)
	if err == nil {
		b.syms.AddModule(&m)
	}
}

func (b *Builder) addThrown(ev *nettrace.Event, version uint8) {
	b.res.Thrown++
	if len(b.thrown) >= b.cfg.MaxExceptions {
		b.res.Dropped++
		return
	}
	x, err := clrevents.DecodeExceptionThrown(ev.Payload, version, b.ptrSize)
	if err != nil {
		b.res.Undecoded++
		return
	}
	if x.ExceptionType == "" {
		x.ExceptionType = TypeNotReported
	}
	t := thrown{time: ev.Time(), thread: ev.ThreadID, typ: x.ExceptionType, msg: x.ExceptionMessage,
		hresult: x.ExceptionHRESULT, flags: x.ExceptionFlags, stack: -1}
	if n := ev.StackLen(); n > 0 {
		key := stackKey{ev.StackRegion, ev.StackID}
		idx, ok := b.byKey[key]
		if !ok || ev.StackID == 0 {
			st := ev.AppendStack(nil)
			if len(st) > b.cfg.MaxFrames {
				st = st[:b.cfg.MaxFrames]
			}
			idx = int32(len(b.stacks))
			b.stacks = append(b.stacks, st)
			b.addrs = append(b.addrs, st...)
			b.sorted = false
			if ev.StackID != 0 {
				b.byKey[key] = idx
			}
		}
		t.stack = idx
	}
	b.thrown = append(b.thrown, t)
}

// addRundownMethod keeps a rundown method when a stack points into it:
// a rundown lists every method loaded, often 100 000.
func (b *Builder) addRundownMethod(pl []byte, version uint8) {
	r, err := clrevents.DecodeMethodRange(pl, version)
	if err != nil || r.MethodSize == 0 {
		return
	}
	if !b.sorted {
		slices.Sort(b.addrs)
		b.addrs = slices.Compact(b.addrs)
		b.sorted = true
	}
	start, end := r.MethodStartAddress, r.MethodStartAddress+uint64(r.MethodSize)
	// A return address may be the method's end (a call as its last
	// instruction): end is included, as SymbolTable.Lookup does.
	i, _ := slices.BinarySearch(b.addrs, start)
	if i < len(b.addrs) && b.addrs[i] <= end {
		_ = b.syms.AddMethodPayload(pl, version)
	}
}

// Finish resolves the stacks and returns the result; the Builder is
// done.
func (b *Builder) Finish() *Result {
	res := b.res
	frames := make([][]Frame, len(b.stacks))
	for i, st := range b.stacks {
		fs := make([]Frame, 0, len(st))
		for _, a := range st {
			s, ok := b.syms.Lookup(a)
			if !ok {
				res.UnresolvedFrames++
				continue
			}
			typ, method := splitName(s.Name)
			fs = append(fs, Frame{MethodName: method, TypeName: typ, ModuleName: s.Module, Signature: s.Signature})
		}
		frames[i] = trimDispatch(fs)
	}
	for _, t := range b.thrown {
		e := Exception{Timestamp: t.time.UTC(), TypeName: t.typ, Message: t.msg, HResult: int32(t.hresult),
			Rethrown: t.flags&0x4 != 0, Stack: Stack{ThreadID: t.thread, Frames: []Frame{}}}
		if t.stack >= 0 {
			e.Stack.Frames = frames[t.stack]
		}
		if !b.cfg.Filters.Keep(&e) {
			res.Filtered++
			continue
		}
		e.ID = len(res.Exceptions) + 1
		res.Exceptions = append(res.Exceptions, e)
	}
	return &res
}

// dispatchTypes are the types of the runtime's managed exception dispatch
// (.NET 9 and later), whose frames are on top of the throwing method's in
// an ExceptionThrown stack.
func isDispatch(typ string) bool {
	return typ == "System.Runtime.EH" || typ == "System.Runtime.ExceptionServices.InternalCalls"
}

// trimDispatch leaves out the leading frames of the exception dispatch, so
// that the first frame is the method that threw, on every runtime.
func trimDispatch(fs []Frame) []Frame {
	i := 0
	for i < len(fs)-1 && isDispatch(fs[i].TypeName) {
		i++
	}
	return fs[i:]
}

// splitName splits the runtime's Namespace.Type.Method into the type and
// the method (.ctor and .cctor kept whole); a dot inside brackets (generic
// arguments) does not split.
func splitName(full string) (typ, method string) {
	depth := 0
	cut := -1
	for i := len(full) - 1; i >= 0 && cut < 0; i-- {
		switch full[i] {
		case ']', '>':
			depth++
		case '[', '<':
			depth--
		case '.':
			if depth == 0 {
				cut = i
			}
		}
	}
	if cut <= 0 {
		return "", full
	}
	if cut > 0 && full[cut-1] == '.' && (full[cut+1:] == "ctor" || full[cut+1:] == "cctor") {
		cut--
	}
	if cut <= 0 {
		return "", full
	}
	return full[:cut], full[cut+1:]
}

// Read reads a nettrace stream to its end and returns its exceptions.
// A stream damaged part way gives the exceptions before the damage and
// the error; one that does not start as a nettrace stream gives only the
// error.
func Read(r io.Reader, cfg Config) (*Result, error) {
	nr, err := nettrace.NewReaderConfig(bufio.NewReaderSize(r, 1<<16), readerConfig())
	if err != nil {
		return nil, err
	}
	b := NewBuilder(nr.Header(), cfg)
	var ev nettrace.Event
	for {
		err := nr.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			return b.Finish(), nil
		}
		if err != nil {
			res := b.Finish()
			res.Warnings = append(res.Warnings, fmt.Sprintf("the stream is damaged (%v): the exceptions before it are listed", err))
			return res, err
		}
		b.Add(&ev)
	}
}

// readerConfig bounds what a stream can make the reader hold.
func readerConfig() nettrace.ReaderConfig {
	return nettrace.ReaderConfig{MaxBlockSize: 16 << 20, MaxMetadata: 1 << 16, MaxStackBytes: 64 << 20, MaxThreads: 1 << 16}
}

// TypeCounts counts exceptions by type, most thrown first (then by name).
func TypeCounts(exs []Exception) []TypeCount {
	m := map[string]int{}
	for _, e := range exs {
		m[e.TypeName]++
	}
	out := make([]TypeCount, 0, len(m))
	for t, n := range m {
		out = append(out, TypeCount{t, n})
	}
	slices.SortFunc(out, func(a, b TypeCount) int { return cmp.Or(b.Count-a.Count, strings.Compare(a.Type, b.Type)) })
	return out
}

// TypeCount is a number of exceptions of a type.
type TypeCount struct {
	Type  string
	Count int
}
