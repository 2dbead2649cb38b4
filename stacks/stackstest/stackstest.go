package stackstest

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
)

// Addresses in the session's stacks.
const (
	AddrMain    = 0x10000000 + 0x10 // in App.Program.Main
	AddrWait    = 0x10001000 + 0x20 // in App.Program.Wait
	AddrSpin    = 0x10002000 + 0x30 // in App.Worker.Spin
	AddrUnknown = 0xdead0000        // in no method
)

// DefaultProcessID is the process id in the trace header when
// Config.ProcessID is 0.
const DefaultProcessID = 4242

// Config shapes the session. The zero value writes the samples and the
// rundown at once.
type Config struct {
	// NoSamples writes no sample, only the rundown.
	NoSamples bool
	// RundownDelay delays the rundown after the stop.
	RundownDelay time.Duration
	// ProcessID is the trace header's process id; 0 means
	// DefaultProcessID.
	ProcessID int
}

// WriteSession writes the session into s: the samples, then, once s is
// stopped, the rundown. Use it as (or in) ipctest.Config.Tracing. It
// returns early with ctx's error when ctx ends before the stop.
func WriteSession(ctx context.Context, s *ipctest.TracingSession, cfg Config) error {
	pid := cfg.ProcessID
	if pid == 0 {
		pid = DefaultProcessID
	}
	w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{PointerSize: 8, ProcessID: pid, ExpectedCPUSamplingRate: 1000000})
	if err != nil {
		return fmt.Errorf("stackstest: %w", err)
	}
	sw := &sessionWriter{w: w, mds: map[string]*nettrace.Metadata{}, seq: map[uint64]uint32{}}
	if !cfg.NoSamples {
		if err := w.WriteStacks(1, [][]uint64{
			{AddrSpin, AddrMain},              // 1: the worker, busy
			{AddrWait, AddrMain},              // 2: main, blocked
			{AddrUnknown, AddrSpin, AddrMain}, // 3: the worker in code no method covers
		}); err != nil {
			return fmt.Errorf("stackstest: %w", err)
		}
		sample := sw.metadata(clrevents.ProviderSampleProfiler, 0, 0)
		external, managed := le32(uint32(clrevents.SampleExternal)), le32(uint32(clrevents.SampleManaged))
		sw.write(sample, 0x101, 1000, 2, external)
		sw.write(sample, 0x202, 1000, 3, managed)
		sw.write(sample, 0x101, 2000, 1, managed)
		sw.write(sample, 0x202, 2000, 1, managed)
		if sw.err == nil {
			sw.err = w.Flush()
		}
		if sw.err != nil {
			return fmt.Errorf("stackstest: %w", sw.err)
		}
	}
	select {
	case <-s.Stopped:
	case <-ctx.Done():
		return ctx.Err()
	}
	if cfg.RundownDelay > 0 {
		t := time.NewTimer(cfg.RundownDelay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// ModuleDCEnd (version 1): module 7, /app/App.dll.
	module := binary.LittleEndian.AppendUint64(nil, 7)
	module = binary.LittleEndian.AppendUint64(module, 0) // assembly
	module = binary.LittleEndian.AppendUint32(module, 0) // flags
	module = binary.LittleEndian.AppendUint32(module, 0) // reserved
	module = appendUTF16(module, "/app/App.dll")
	module = appendUTF16(module, "")
	sw.write(sw.metadata(clrevents.ProviderRundown, 154, 1), 0x303, 9000, 0, append(module, 9, 0)) // ClrInstanceID
	for _, m := range []struct {
		start      uint64
		ns, method string
	}{{0x10000000, "App.Program", "Main"}, {0x10001000, "App.Program", "Wait"}, {0x10002000, "App.Worker", "Spin"}} {
		sw.write(sw.metadata(clrevents.ProviderRundown, 144, 2), 0x303, 9000, 0, methodPayload(m.start, 0x100, 7, m.ns, m.method))
	}
	if sw.err == nil {
		sw.err = w.Close()
	}
	if sw.err != nil {
		return fmt.Errorf("stackstest: %w", sw.err)
	}
	return nil
}

// sessionWriter writes events, numbering them per thread, and keeps the
// first error.
type sessionWriter struct {
	w   *nettrace.Writer
	mds map[string]*nettrace.Metadata
	seq map[uint64]uint32
	err error
}

func (sw *sessionWriter) metadata(provider string, id, version uint32) *nettrace.Metadata {
	k := fmt.Sprintf("%s/%d/%d", provider, id, version)
	if m := sw.mds[k]; m != nil {
		return m
	}
	m := &nettrace.Metadata{ID: uint32(len(sw.mds) + 1), ProviderName: provider, EventID: id, Version: version}
	if err := sw.w.AddMetadata(m); err != nil && sw.err == nil {
		sw.err = err
	}
	sw.mds[k] = m
	return m
}

func (sw *sessionWriter) write(m *nettrace.Metadata, thread uint64, ts int64, stack uint32, payload []byte) {
	if sw.err != nil {
		return
	}
	sw.seq[thread]++
	sw.err = sw.w.WriteEvent(&nettrace.Event{Metadata: m, ThreadID: thread, CaptureThreadID: thread,
		SequenceNumber: sw.seq[thread], Timestamp: ts, StackID: stack, Payload: payload})
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func appendUTF16(b []byte, s string) []byte {
	for _, r := range s {
		b = binary.LittleEndian.AppendUint16(b, uint16(r))
	}
	return append(b, 0, 0)
}

// methodPayload is a MethodDCEndVerbose (version 2) payload.
func methodPayload(start uint64, size uint32, module uint64, ns, name string) []byte {
	b := binary.LittleEndian.AppendUint64(nil, start) // MethodID
	b = binary.LittleEndian.AppendUint64(b, module)
	b = binary.LittleEndian.AppendUint64(b, start)
	b = binary.LittleEndian.AppendUint32(b, size)
	b = binary.LittleEndian.AppendUint32(b, 0x06000001) // token
	b = binary.LittleEndian.AppendUint32(b, 0)          // flags
	b = appendUTF16(b, ns)
	b = appendUTF16(b, name)
	b = appendUTF16(b, "void ()")
	b = binary.LittleEndian.AppendUint16(b, 9)    // ClrInstanceID
	return binary.LittleEndian.AppendUint64(b, 0) // ReJITID
}
