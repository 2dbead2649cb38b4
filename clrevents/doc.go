// Package clrevents names and decodes the runtime's own events:
// Microsoft-Windows-DotNETRuntime, Microsoft-Windows-DotNETRuntimeRundown,
// Microsoft-Windows-DotNETRuntimePrivate, Microsoft-Windows-DotNETRuntimeStress
// and Microsoft-DotNETCore-SampleProfiler.
//
// In an EventPipe trace these events carry no field metadata and an empty
// event name; their layout comes from the runtime's manifest, keyed by
// (provider, event id, version). This package holds that knowledge as data
// (Lookup returns an event's name, keywords, aliases and field layout per
// version) and as typed decoders:
//
//	name := clrevents.EventName(md.ProviderName, md.EventID, md.EventName)    // "GCStart"
//	ok := clrevents.MatchEventName(md.ProviderName, md.EventID, md.EventName, "GC/Start")
//	m, err := clrevents.DecodeMethodLoadVerbose(payload, version)             // typed
//	v, err := clrevents.Decode(provider, id, version, ptrSize, payload)        // any typed value
//	fs, err := clrevents.DecodeFields(provider, id, version, ptrSize, payload) // table-driven
//
// Names are the manifest's (version-less) event names; MatchEventName also
// accepts the versioned manifest symbols ("ExceptionThrown_V1") and the
// "Task/Opcode" names of TraceEvent and dotnet-trace ("Method/JittingStarted").
// Both are meant to be called once per metadata record, not per event.
//
// Newer versions of an event only append fields, so a version above the
// newest known one decodes its known prefix, and trailing bytes are ignored.
// A payload shorter than its layout, or a string without its NUL, gives a
// *DecodeError naming the event, version, field and offset; decoders never
// panic and size allocations from the payload only after checking that the
// payload holds the data.
//
// Pointer-sized fields (marked TypePointer) are 4 or 8 bytes as the trace
// header says; method and module addresses in the method and module events
// are always 64-bit. Strings are UTF-16LE on the wire and are converted with
// one allocation each; Decode<Name>Into fills a caller-owned value and
// allocates nothing else.
//
// # Generated code
//
// The id constants, payload structs, Decode<Name> functions, layouts and
// tables in events_gen.go are generated from the layout table in
// internal/spec by internal/gen (go generate ./clrevents); a test fails when
// the file is stale. To add an event, edit internal/spec and regenerate.
// DecodeMethodRange, the GCReason and SampleKind names and the helper
// methods are written by hand.
//
// The package has no state; everything is safe for concurrent use.
//
// Stability: part of the public API (README: Stability): changed with care,
// the release notes say how. The generated tables grow with the runtime's
// manifest.
package clrevents
