// Package eventfmt renders the events of a nettrace stream as text or JSON
// lines, the output of `clrdiag trace events` and `clrdiag trace stream`,
// and summarizes a trace (`clrdiag trace stats`).
//
// A Filter selects events by provider and by event id or name, and names
// each kind of event once (the runtime's own events by the clrevents
// table). Print reads a Reader to its end, writing one line per selected
// event:
//
//	f, err := eventfmt.NewFilter([]string{"System.Runtime"}, nil)
//	...
//	n, err := eventfmt.Print(ctx, os.Stdout, r, f, eventfmt.Options{JSON: true})
//
// A text line holds the time, provider, event name and id, thread and the
// decoded payload fields; a JSON line holds one object with the same facts
// (see Options). Self-describing events are decoded with the trace's own
// field metadata; the runtime's own events with clrevents' layouts; the
// payload of an event nobody knows shows in hexadecimal. Strings from the
// trace are made safe for a terminal (no control sequences).
//
// When the filter matched no event, Print returns a *NoMatchError listing
// the providers and events the trace does have; a failure to read the trace
// comes back as a *ReadError after every complete event was written.
//
// Summarize reads a whole trace (on every core) into a Summary, the
// output of `clrdiag trace stats`: the header's facts, the reader's counts,
// the time span and the events per provider and per event id, named as
// above; WriteText writes it as text, and its JSON encoding is the JSON form.
//
// Stability: not yet in the list of README: Stability. The text and JSON
// lines are those of the CLI and change with care; the Go API (its error
// messages name the CLI's --provider and --event) may still change.
package eventfmt
