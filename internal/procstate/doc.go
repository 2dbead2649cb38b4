// Package procstate reads whether a process is stopped (by SIGSTOP, Ctrl-Z
// or a debugger) from /proc/PID/stat, so that a command can refuse to open
// an EventPipe session in it: a stopped runtime cannot answer, and on .NET
// Core 3.1 a session that a client gives up on while the process is
// stopped makes the runtime crash (SIGSEGV) when the process continues.
//
// On systems without /proc every process reads as running.
package procstate
