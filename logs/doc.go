// Package logs reads the ILogger messages of a running .NET process through
// the Microsoft-Extensions-Logging EventSource, as dotnet-monitor's /logs
// does, with no .NET on this side.
//
// Config selects the messages: a default level (LogLevel: Trace,
// Debug, Information, Warning, Error, Critical), levels per category
// (Filters, a category or a prefix ending in '*'), and whether the
// application's own logging configuration decides for the other
// categories (UseAppFilters). Config.Providers turns it into the
// EventPipe providers: LoggingEventSource with its FormattedMessage and
// JsonMessage keywords and a FilterSpecs argument, so the process only
// sends what was asked for, and TplEventSource's TasksFlowActivityIds,
// which gives every message the activity id of its logging scope.
//
//	err := logs.Collect(ctx, client, logs.Config{DefaultLevel: logs.Warning},
//		logs.CollectConfig{Duration: 30 * time.Second}, logs.NewTextWriter(os.Stdout).Write)
//
// Decoder turns the session's events into Entries: level, category, event
// id and name, the formatted message, the arguments ({OriginalFormat}
// included), the exception (type, message, ToString) and the scopes the
// message was written in. A log call is written as a FormattedMessage
// event and a MessageJson event; the Decoder pairs them (the MessageJson of
// runtimes before .NET 5 has no message text). Scopes are ActivityJsonStart
// and ActivityJsonStop events, matched to messages by activity id (or, when
// the events carry none, by thread).
//
// NewTextWriter writes dotnet-monitor's plain text (the console logger's
// layout), NewJSONWriter its newline-delimited JSON or JSON sequence.
//
// The package has no mutable package state; a Decoder is for one
// goroutine.
package logs
