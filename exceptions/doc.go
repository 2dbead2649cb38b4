// Package exceptions lists the exceptions a running .NET process throws,
// one by one (type, message, time, thread and the managed stack at the
// throw), from the runtime's ExceptionThrown events, with no .NET on this
// side: what dotnet-monitor's exceptions history and CollectExceptions
// action give, from an EventPipe session instead of a library loaded
// into the process.
//
//	res, err := exceptions.Collect(ctx, client, exceptions.Config{},
//		exceptions.CollectConfig{Duration: 30 * time.Second})
//	if err != nil {
//		return err
//	}
//	exceptions.WriteText(os.Stdout, res.Exceptions)
//
// Collect opens a session of the runtime provider's Exception keyword
// (ExceptionThrown events with their stacks) for Duration and asks for the
// rundown at its end, which names the methods of the stacks; Read does
// the same with a nettrace stream that holds such events (a trace
// collected with --clrevents exception, or a live session's stream). A
// Builder does it event by event.
//
// An exception is every throw the runtime reports (first chance, each
// rethrow included), in the order thrown. Its frames are the managed
// methods of the stack, innermost first; an address no method of the
// session or the rundown covers (native code, a stub) is left out and
// counted in Result.UnresolvedFrames. What events cannot say is not
// guessed: the inner exceptions and the module of the exception's type
// are not reported.
//
// Filters (Include, Exclude) select exceptions by type and by the method,
// type and module of their innermost managed frame, as dotnet-monitor's
// ExceptionsConfiguration does.
//
// Memory is bounded: at most Config.MaxExceptions exceptions are kept
// (the rest are counted in Result.Dropped), each stack is stored once
// however often it throws and holds at most Config.MaxFrames frames, and
// of the rundown only the methods a stack points into are kept.
//
// WriteText writes dotnet-monitor's plain-text layout, WriteJSON its
// newline-delimited JSON or JSON sequence (ExceptionInstance fields:
// id, timestamp, typeName, message, stack with threadId and frames).
//
// The package has no mutable package state; a Builder is for one stream.
package exceptions
