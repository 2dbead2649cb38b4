// Package procstate reads facts about a process from /proc.
//
// Whether it is stopped (by SIGSTOP, Ctrl-Z or a debugger), from
// /proc/PID/stat, so that a command can refuse to open an EventPipe
// session in it: a stopped runtime cannot answer, and on .NET Core 3.1 a
// session that a client gives up on while the process is stopped makes the
// runtime crash (SIGSEGV) when the process continues.
//
// Where a file it writes lands (Locate: its own file system when it runs
// in another mount namespace, reached through /proc/PID/root) and whether
// its user can create that file (CheckDir, by the ids of /proc/PID/status):
// a runtime asked to write a dump where it cannot answers a bare E_FAIL,
// so a client checks first.
//
// On systems without /proc every process reads as running and every file
// as shared; file ownership is read on Unix only. FS's zero value reads the
// host's /proc; the package has no package-level mutable state.
package procstate
