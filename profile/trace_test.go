package profile

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/nettrace"
)

// le builds runtime event payloads.
type le struct {
	b   []byte
	ptr int
}

func (p *le) u8(v uint8) *le   { p.b = append(p.b, v); return p }
func (p *le) u16(v uint16) *le { p.b = binary.LittleEndian.AppendUint16(p.b, v); return p }
func (p *le) u32(v uint32) *le { p.b = binary.LittleEndian.AppendUint32(p.b, v); return p }
func (p *le) u64(v uint64) *le { p.b = binary.LittleEndian.AppendUint64(p.b, v); return p }
func (p *le) ptrv(v uint64) *le {
	if p.ptr == 4 {
		return p.u32(uint32(v))
	}
	return p.u64(v)
}
func (p *le) str(s string) *le {
	for _, u := range utf16.Encode([]rune(s)) {
		p.u16(u)
	}
	return p.u16(0)
}

func methodPayload(start uint64, size uint32, module uint64, ns, name string) []byte {
	return (&le{}).u64(start).u64(module).u64(start).u32(size).u32(0x06000001).u32(8).
		str(ns).str(name).str("void  ()").u16(9).u64(0).b
}

func modulePayload(id uint64, path string) []byte {
	return (&le{}).u64(id).u64(id + 1).u32(0).u32(0).str(path).str("").u16(9).b
}

// Addresses of the synthetic program. Main calls Work, which calls Leaf;
// 0xdead0000 is in no method.
const (
	addrMain = 0x10000010
	addrWork = 0x10001020
	addrLeaf = 0x10002030
	addrJit  = 0x10003004 // covered only by a MethodLoadVerbose (jitted during the session)
	addrNone = 0xdead0000
)

// synthTrace writes a small trace the way a runtime would: samples first,
// some jitting, GC, an exception and a contended lock during the session,
// and the rundown (method and module ranges) at the end.
//
// Thread 100 gets 6 managed samples Main>Work>Leaf every 2 ms, thread 200
// gets 3 external samples Main>Work>0xdead0000 and 1 Main>Jitted sample.
func synthTrace(t testing.TB, ptrSize int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := nettrace.NewWriter(&buf, nettrace.WriterConfig{PointerSize: ptrSize, ProcessID: 42,
		ExpectedCPUSamplingRate: 1000000, SyncTimeUTC: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	mds := map[string]*nettrace.Metadata{}
	id := uint32(0)
	md := func(provider string, event uint32, version uint32) *nettrace.Metadata {
		key := provider + "/" + string(rune(event)) + "/" + string(rune(version))
		if m, ok := mds[key]; ok {
			return m
		}
		id++
		m := &nettrace.Metadata{ID: id, ProviderName: provider, EventID: event, Version: version}
		if err := w.AddMetadata(m); err != nil {
			t.Fatal(err)
		}
		mds[key] = m
		return m
	}
	seq := map[uint64]uint32{}
	write := func(m *nettrace.Metadata, thread uint64, ts int64, stack uint32, payload []byte) {
		seq[thread]++
		ev := &nettrace.Event{Metadata: m, ThreadID: thread, CaptureThreadID: thread, SequenceNumber: seq[thread],
			Timestamp: ts, StackID: stack, Payload: payload}
		if err := w.WriteEvent(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteStacks(1, [][]uint64{
		{addrLeaf, addrWork, addrMain}, // 1
		{addrNone, addrWork, addrMain}, // 2
		{addrJit, addrMain},            // 3
		{addrWork + 4, addrMain},       // 4: throw site in Work
		{},                             // 5
	}); err != nil {
		t.Fatal(err)
	}
	// The session starts with the target's command line.
	write(md("Microsoft-DotNETCore-EventPipe", 1, 0), 100, 999_000_000, 0, (&le{}).str(`dotnet C:\app\app.dll --serve`).b)
	sample := md(clrevents.ProviderSampleProfiler, 0, 0)
	managed := (&le{}).u32(2).b
	external := (&le{}).u32(1).b
	ms := int64(time.Millisecond)
	base := int64(1_000_000_000)
	for i := range int64(6) {
		write(sample, 100, base+i*2*ms, 1, managed)
	}
	for i := range int64(3) {
		write(sample, 200, base+i*2*ms, 2, external)
	}
	write(sample, 200, base+6*ms, 3, managed)
	write(sample, 300, base+ms, 5, external)
	// Jitting during the session.
	write(md(clrevents.ProviderRuntime, 143, 2), 200, base+ms, 0, methodPayload(0x10003000, 0x10, 7, "App.Lazy", "Jitted"))
	// A gen1 induced GC with a 3 ms pause, and a 1 ms non-GC suspension.
	write(md(clrevents.ProviderRuntime, 9, 1), 300, base+2*ms, 0, (&le{}).u32(1).u32(1).u16(9).b)
	write(md(clrevents.ProviderRuntime, 1, 2), 300, base+3*ms, 0, (&le{}).u32(1).u32(1).u32(1).u32(0).u16(9).u64(0).b)
	write(md(clrevents.ProviderRuntime, 3, 1), 300, base+5*ms, 0, (&le{}).u16(9).b)
	write(md(clrevents.ProviderRuntime, 9, 1), 300, base+6*ms, 0, (&le{}).u32(0).u32(2).u16(9).b)
	write(md(clrevents.ProviderRuntime, 3, 1), 300, base+7*ms, 0, (&le{}).u16(9).b)
	tick := (&le{ptr: ptrSize}).u32(100000).u32(0).u16(9).u64(250000).ptrv(0x5000).str("System.Byte[]").u32(0).ptrv(0x6000).u64(1024).b
	write(md(clrevents.ProviderRuntime, 10, 4), 100, base+ms, 1, tick)
	// Two exceptions thrown in Work.
	exc := (&le{ptr: ptrSize}).str("System.InvalidOperationException").str("boom").ptrv(addrWork + 4).u32(0x80131509).u16(0).u16(9).b
	write(md(clrevents.ProviderRuntime, 80, 1), 100, base+3*ms, 4, exc)
	write(md(clrevents.ProviderRuntime, 80, 1), 100, base+4*ms, 4, exc)
	// A contended lock: 2 ms by timestamps (version 0, no duration field).
	write(md(clrevents.ProviderRuntime, 81, 1), 200, base+8*ms, 4, (&le{}).u8(0).u16(9).b)
	write(md(clrevents.ProviderRuntime, 91, 0), 200, base+10*ms, 0, (&le{}).u8(0).u16(9).b)
	// Rundown at the end.
	write(md(clrevents.ProviderRundown, 154, 1), 300, base+20*ms, 0, modulePayload(7, `C:\app\App.dll`))
	write(md(clrevents.ProviderRundown, 144, 2), 300, base+20*ms, 0, methodPayload(0x10000000, 0x100, 7, "App.Program", "Main"))
	write(md(clrevents.ProviderRundown, 144, 2), 300, base+20*ms, 0, methodPayload(0x10001000, 0x100, 7, "App.Worker", "Work"))
	write(md(clrevents.ProviderRundown, 144, 2), 300, base+20*ms, 0, methodPayload(0x10002000, 0x100, 7, "App.Worker", "Leaf"))
	write(md(clrevents.ProviderRundown, 144, 2), 300, base+20*ms, 0, methodPayload(0x10005000, 0x100, 7, "App.Worker", "Unused"))
	write(md(clrevents.ProviderRundown, 146, 1), 300, base+20*ms, 0, (&le{}).u16(9).b)
	// RuntimeInformation as .NET Core 3.1 writes it: CLR 4.0.30319.0.
	write(md(clrevents.ProviderRundown, 187, 0), 300, base+20*ms, 0, (&le{}).u16(9).u16(2).u16(4).u16(0).u16(0).u16(0).
		u16(4).u16(0).u16(30319).u16(0).u32(0).u8(2).str("").u64(0).u64(0).
		str("/usr/share/dotnet/shared/Microsoft.NETCore.App/3.1.2/libcoreclr.so").b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// capture returns the bytes of a real capture (see internal/testcapture),
// unzipping .zip files. It skips when the capture is not committed and
// CLRDIAG_CAPTURES does not provide it.
func capture(t testing.TB, rel string) []byte {
	t.Helper()
	return testcapture.Load(t, rel)
}
