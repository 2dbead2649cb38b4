// Package stackstest plays the runtime's side of a stack snapshot for tests
// of code built on package stacks: WriteSession writes a small
// SampleProfiler session into an ipctest tracing session.
//
// The session has two threads, each sampled twice before the stop (only
// the first sample of each counts for a snapshot):
//
//	thread 0x101, blocked:        App.Program.Wait <- App.Program.Main
//	thread 0x202, running managed: 0xdead0000 (no method) <- App.Worker.Spin <- App.Program.Main
//
// and, after StopTracing, a rundown that names module 7 (/app/App.dll, so
// frames print as App!...) and its three methods, each "void ()".
//
// Stability: test support; it may change with package stacks.
package stackstest
