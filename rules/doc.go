// Package rules runs collection rules in dotnet-monitor's model: when a
// process that passes a rule's filters shows the rule's trigger, the rule's
// actions run against it (a trace, a dump, a command...), within limits.
//
// # Configuration
//
// Load, LoadFile read rules from JSON or YAML and from environment
// variables, with dotnet-monitor's configuration names:
//
//	CollectionRules:
//	  HighCpu:
//	    Filters: [{Key: ProcessName, Value: myapp}]
//	    Trigger:
//	      Type: EventCounter
//	      Settings: {ProviderName: System.Runtime, CounterName: cpu-usage, GreaterThan: 80, SlidingWindowDuration: "00:00:10"}
//	    Actions:
//	      - {Name: Trace, Type: CollectTrace, Settings: {Profile: Cpu, Duration: "00:00:30", Egress: s3}}
//	      - {Type: Execute, Settings: {Path: /usr/local/bin/notify, Arguments: "$(Actions.Trace.EgressPath)"}}
//	    Limits: {ActionCount: 2, ActionCountSlidingWindowDuration: "01:00:00"}
//
// or CollectionRules__HighCpu__Trigger__Type=EventCounter (also with the
// DotnetMonitor_ prefix), which overrides the same key of a file. Keys are
// compared without regard to case, as .NET configuration does. Every key
// is checked when the configuration is loaded: a wrong or unknown setting
// is a FieldError naming its path (CollectionRules.HighCpu.Trigger.Settings.GreaterThan),
// all of them are reported together (ConfigError), and a configuration
// with any is refused whole.
//
// Filters compare ProcessId, ProcessName, CommandLine or RuntimeVersion,
// Exact (default) or Contains, without regard to case; all of a rule's
// filters must match.
//
// Triggers: Startup; EventCounter and EventMeter (GreaterThan, LessThan or
// both, held by every value published for SlidingWindowDuration; a Meter
// histogram's HistogramPercentile); AspNetRequestCount,
// AspNetRequestDuration and AspNetResponseStatus (requests counted in a
// sliding window, from the Microsoft.AspNetCore DiagnosticListener's
// request events, with IncludePaths/ExcludePaths globs); and
// EventPipeEvent, clrdiag's own: an event of any provider (ProviderName,
// EventName or EventId, PayloadFilter), Count times within a window. And
// dotnet-monitor's shortcuts CPUUsage, GCHeapSize and
// ThreadpoolQueueLength (EventCounter triggers on System.Runtime's
// cpu-usage, gc-heap-size and threadpool-queue-length, with its defaults).
//
// Actions are types in a Registry (DefaultActions: CollectTrace,
// CollectDump, CollectGCDump, CollectStacks, CollectLogs,
// CollectLiveMetrics, CollectExceptions, Execute, LoadProfiler,
// SetEnvironmentVariable, GetEnvironmentVariable); an ActionType's New
// reads its Settings and returns an Action. Outputs of named actions (EgressPath, ExitCode,
// Value) are used by later ones as $(Actions.NAME.OUTPUT), checked at
// load. An artifact goes to the Egress provider its action names, through
// the Egress interface (the egress package), or stays in the artifact
// directory.
//
// Limits: ActionCount (default 5) per ActionCountSlidingWindowDuration
// (or the rule's whole life), RuleDuration.
//
// # Engine
//
// An Engine applies a Config to processes (Add, Remove). It is fed counter
// samples (Sample, with counters.Sample from package counters), events
// (Event) and time (Tick, or Run); Watch opens the sessions a process's
// rules need (Needs) and feeds them. A trigger's window fires once: after
// it fires, its count starts again, and it is not evaluated while its
// actions run. Action lists of one process run one at a time, in the
// order their triggers fired, so the runtime never holds two sessions of
// the monitor's actions at once. Status is the state of every rule for
// every process (Running, ActionExecuting, Throttled, Finished, with the
// last trigger: /collectionrules), Operations the runs of artifact actions
// (status, egress path, error; Cancel: /operations). Every trigger and
// action is logged (log/slog) and counted (the Engine is a
// prometheus.Collector).
//
// The package has no mutable package state.
//
// Stability: its Go API serves the monitor and may change freely; the
// configuration format is documented in the README and changes with care.
package rules
