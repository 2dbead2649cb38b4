// Package clrevents decodes the payloads of the .NET runtime's own events:
// Microsoft-Windows-DotNETRuntime, Microsoft-Windows-DotNETRuntimeRundown
// and Microsoft-DotNETCore-SampleProfiler.
//
// In an EventPipe trace these events carry no field metadata and an empty
// event name; their layout comes from the runtime's manifest, keyed by
// (provider, event id, version). This package holds that knowledge as data
// (Lookup returns an event's name, keywords and field layout per version)
// and as typed decoders:
//
//	info, ok := clrevents.Lookup(ev.ProviderName(), uint16(ev.EventID)) // name the event
//	m, err := clrevents.DecodeMethodLoadVerbose(payload, version)        // typed
//	v, err := clrevents.Decode(provider, id, version, ptrSize, payload)   // any typed value
//	fs, err := clrevents.DecodeFields(provider, id, version, ptrSize, payload) // table-driven
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
// one allocation each; DecodeMethodLoadVerboseInto allocates nothing else.
//
// The package has no state; everything is safe for concurrent use.
package clrevents
