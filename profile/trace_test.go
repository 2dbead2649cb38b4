package profile

import (
	"bytes"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/internal/wire"
	"github.com/clrdiag/clrdiag/nettrace"
)

func methodPayload(start uint64, size uint32, module uint64, ns, name string) []byte {
	return (&wire.Builder{}).U64(start).U64(module).U64(start).U32(size).U32(0x06000001).U32(8).
		UTF16Z(ns).UTF16Z(name).UTF16Z("void  ()").U16(9).U64(0).B
}

func modulePayload(id uint64, path string) []byte {
	return (&wire.Builder{}).U64(id).U64(id + 1).U32(0).U32(0).UTF16Z(path).UTF16Z("").U16(9).B
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
	write(md("Microsoft-DotNETCore-EventPipe", 1, 0), 100, 999_000_000, 0, (&wire.Builder{}).UTF16Z(`dotnet C:\app\app.dll --serve`).B)
	sample := md(clrevents.ProviderSampleProfiler, 0, 0)
	managed := (&wire.Builder{}).U32(2).B
	external := (&wire.Builder{}).U32(1).B
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
	write(md(clrevents.ProviderRuntime, 9, 1), 300, base+2*ms, 0, (&wire.Builder{}).U32(1).U32(1).U16(9).B)
	write(md(clrevents.ProviderRuntime, 1, 2), 300, base+3*ms, 0, (&wire.Builder{}).U32(1).U32(1).U32(1).U32(0).U16(9).U64(0).B)
	write(md(clrevents.ProviderRuntime, 3, 1), 300, base+5*ms, 0, (&wire.Builder{}).U16(9).B)
	write(md(clrevents.ProviderRuntime, 9, 1), 300, base+6*ms, 0, (&wire.Builder{}).U32(0).U32(2).U16(9).B)
	write(md(clrevents.ProviderRuntime, 3, 1), 300, base+7*ms, 0, (&wire.Builder{}).U16(9).B)
	tick := (&wire.Builder{PtrSize: ptrSize}).U32(100000).U32(0).U16(9).U64(250000).Ptr(0x5000).UTF16Z("System.Byte[]").U32(0).Ptr(0x6000).U64(1024).B
	write(md(clrevents.ProviderRuntime, 10, 4), 100, base+ms, 1, tick)
	// Two exceptions thrown in Work.
	exc := (&wire.Builder{PtrSize: ptrSize}).UTF16Z("System.InvalidOperationException").UTF16Z("boom").Ptr(addrWork + 4).U32(0x80131509).U16(0).U16(9).B
	write(md(clrevents.ProviderRuntime, 80, 1), 100, base+3*ms, 4, exc)
	write(md(clrevents.ProviderRuntime, 80, 1), 100, base+4*ms, 4, exc)
	// A contended lock: 2 ms by timestamps (version 0, no duration field).
	write(md(clrevents.ProviderRuntime, 81, 1), 200, base+8*ms, 4, (&wire.Builder{}).U8(0).U16(9).B)
	write(md(clrevents.ProviderRuntime, 91, 0), 200, base+10*ms, 0, (&wire.Builder{}).U8(0).U16(9).B)
	// Rundown at the end.
	write(md(clrevents.ProviderRundown, 154, 1), 300, base+20*ms, 0, modulePayload(7, `C:\app\App.dll`))
	write(md(clrevents.ProviderRundown, 144, 2), 300, base+20*ms, 0, methodPayload(0x10000000, 0x100, 7, "App.Program", "Main"))
	write(md(clrevents.ProviderRundown, 144, 2), 300, base+20*ms, 0, methodPayload(0x10001000, 0x100, 7, "App.Worker", "Work"))
	write(md(clrevents.ProviderRundown, 144, 2), 300, base+20*ms, 0, methodPayload(0x10002000, 0x100, 7, "App.Worker", "Leaf"))
	write(md(clrevents.ProviderRundown, 144, 2), 300, base+20*ms, 0, methodPayload(0x10005000, 0x100, 7, "App.Worker", "Unused"))
	write(md(clrevents.ProviderRundown, 146, 1), 300, base+20*ms, 0, (&wire.Builder{}).U16(9).B)
	// RuntimeInformation as .NET Core 3.1 writes it: CLR 4.0.30319.0.
	write(md(clrevents.ProviderRundown, 187, 0), 300, base+20*ms, 0, (&wire.Builder{}).U16(9).U16(2).U16(4).U16(0).U16(0).U16(0).
		U16(4).U16(0).U16(30319).U16(0).U32(0).U8(2).UTF16Z("").U64(0).U64(0).
		UTF16Z("/usr/share/dotnet/shared/Microsoft.NETCore.App/3.1.2/libcoreclr.so").B)
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
