// Package nettrace decodes and writes the EventPipe trace formats of the .NET
// runtime: NetPerf V3 (.NET Core 2.1/2.2), NetTrace V4 with the V5 metadata
// tags (.NET Core 3.0 to today's runtimes) and NetTrace V6 (block-framed,
// written by newer tooling such as one-collect / dotnet-trace collect-linux).
// NetPerf V1/V2 (.NET Core 2.0) are refused with ErrUnsupportedFormat.
//
// # Reading
//
// NewReader checks the stream header and reads the trace header at once;
// ReadEvent then pulls one event at a time and returns io.EOF at a clean end.
// Only an io.Reader is needed, so the same code reads files, pipes and a live
// EventPipe session socket:
//
//	r, err := nettrace.NewReader(f)
//	if err != nil {
//		return err
//	}
//	var ev nettrace.Event
//	for {
//		err := r.ReadEvent(&ev)
//		if err == io.EOF {
//			break
//		}
//		if err != nil {
//			return err // *FormatError: damaged or truncated input
//		}
//		fmt.Println(ev.Time(), ev.Metadata.ProviderName, ev.Metadata.EventID)
//	}
//
// Reader.All wraps the loop in an iterator. Each event carries its metadata
// (provider, id, name, version, level, keywords, opcode, field layout),
// thread and capture thread, sequence number, processor, activity ids, stack
// (Event.Frames, Event.AppendStack) and raw payload. DecodePayload (or
// Event.Fields) turns the payload of a self-describing event (EventSource,
// EventCounters, TraceLogging) into named, typed values. The runtime's own
// events (Microsoft-Windows-DotNETRuntime and friends) carry no field
// metadata; their layout comes from the runtime's manifest.
//
// Events are delivered in stream order, which is timestamp order per capture
// thread but not across threads. Timestamp deltas may be negative; the reader
// uses wrapping arithmetic, so they decode correctly. Stack ids restart after
// each sequence point, and the reader resolves them against the current
// region.
//
// Dropped events (the runtime's buffers were full) are detected from gaps in
// the per-thread sequence numbers and from sequence points and counted in
// Stats.DroppedEvents.
//
// # Damaged input
//
// Truncated and damaged streams are common (a killed process, Ctrl+C, a file
// copied while recording). The reader delivers every complete event before
// the damage, then returns a *FormatError with the byte offset and what it
// expected there; FormatError.Truncated tells a stream that merely stops
// from one that is corrupt. Every length read from the stream is checked
// against what is left of its block, blocks are bounded by
// ReaderConfig.MaxBlockSize, and buffers grow no faster than data actually
// arrives, so hostile input cannot make the reader allocate large amounts of
// memory, panic or loop.
//
// CompleteLength and EndOfStream repair a file whose stream stopped early: cut
// it after the last whole block and append the end-of-stream marker.
//
// # Live sources and cancellation
//
// ReadEvent blocks until its source delivers bytes or fails; it never needs
// io.Seeker. To stop reading a live session, close the source (or set a
// deadline on the net.Conn): the pending read fails and ReadEvent returns an
// error. ReadEvent does not poll a context itself, because a blocked
// io.Reader cannot be interrupted any other way.
//
// # Writing
//
// Writer produces V4 or V6 streams (compressed or fixed event headers,
// 4- or 8-byte pointers): metadata, events, stacks, sequence points and, for
// V6, thread, remove-thread and label-list blocks. AppendPayload encodes
// payload values for a field list. Tests and fake diagnostic servers use it
// to build traces.
//
// # Performance and ownership
//
// The reader reads each block into one reused buffer and decodes events in
// place; ReadEvent does not allocate once the buffers have grown to the
// largest block. Event.Payload and the stack alias that buffer and are valid
// only until the next ReadEvent call: copy them to keep them. Metadata
// pointers stay valid for the life of the Reader, and Metadata.Index numbers
// them densely, so a consumer can keep per-kind state in slices instead of
// maps.
//
// ReadEvent decodes the common compressed event (short varints, known
// metadata, a stack id of the current region) in one function without
// calls, and hands everything else to a general decoder; a test and the
// fuzzer check that the two agree on every input.
//
// # Every core on one trace
//
// ReadParallel reads the rest of a stream with one goroutine that frames
// blocks and keeps the metadata, stack, thread and label tables, workers
// that decode event blocks into consumer-defined Parts, and a merge, on the
// calling goroutine, that receives the parts in stream order. Tables are
// shared with the workers copy-on-write; sequence-number gaps, sequence
// points and metadata defined inside event blocks are settled by the merge
// in stream order (a block that needs it is decoded again there), so the
// events, the error and the Stats are exactly those of ReadEvent. Blocks in
// flight are bounded (ParallelConfig.MaxInFlight), so memory stays flat on
// streams of any length. Use it when the consumer's work commutes across
// blocks (counts, ranges, stacks aggregated into a profile); use ReadEvent
// for the events in stream order.
//
// # Concurrency
//
// A Reader or Writer must be used by one goroutine at a time (ReadParallel
// runs its own goroutines and returns when they are done). Distinct Readers
// share nothing. The package has no global mutable state.
//
// # Debugging
//
// A *FormatError gives the byte offset of the problem; Reader.InputOffset gives
// the offset just past the last event returned, so a suspicious event can be
// found in a hex dump. "clrdiag trace stats FILE" and "clrdiag trace events
// FILE --json" show what the reader sees. Tests: "go test -run
// TestCapturesGolden ./nettrace -args -update" regenerates the golden
// summaries of the shared captures; fuzz with "go test -fuzz FuzzReader
// -fuzzminimizetime 5s ./nettrace" (the seeds are whole traces, and the default
// minimisation time makes the fuzzer look stalled while it shrinks them).
//
// # Format notes
//
// The V6 layout follows the published format description. Where it leaves a
// detail open, this package treats the uint16 size of a V6 metadata row and of
// a field description as counting the bytes that follow the size field. No
// public V6 capture exists to check this against.
//
// Stability: part of the public API (README: Stability): changed with care,
// the release notes say how.
package nettrace
