package ipc

import "fmt"

// Command sets.
const (
	SetDump      uint8 = 0x01
	SetEventPipe uint8 = 0x02
	SetProfiler  uint8 = 0x03
	SetProcess   uint8 = 0x04
	SetServer    uint8 = 0xFF
)

// Dump commands (set 0x01).
const (
	CmdGenerateCoreDump  uint8 = 0x01
	CmdGenerateCoreDump2 uint8 = 0x02
	CmdGenerateCoreDump3 uint8 = 0x03
)

// EventPipe commands (set 0x02).
const (
	CmdStopTracing     uint8 = 0x01
	CmdCollectTracing  uint8 = 0x02
	CmdCollectTracing2 uint8 = 0x03
	CmdCollectTracing3 uint8 = 0x04
	CmdCollectTracing4 uint8 = 0x05
	CmdCollectTracing5 uint8 = 0x06
	CmdCollectTracing6 uint8 = 0x07
)

// Profiler commands (set 0x03).
const (
	CmdAttachProfiler  uint8 = 0x01
	CmdStartupProfiler uint8 = 0x02
)

// Process commands (set 0x04).
const (
	CmdProcessInfo            uint8 = 0x00
	CmdResumeRuntime          uint8 = 0x01
	CmdProcessEnvironment     uint8 = 0x02
	CmdSetEnvironmentVariable uint8 = 0x03
	CmdProcessInfo2           uint8 = 0x04
	CmdEnablePerfMap          uint8 = 0x05
	CmdDisablePerfMap         uint8 = 0x06
	CmdApplyStartupHook       uint8 = 0x07
	CmdProcessInfo3           uint8 = 0x08
)

// Server replies (set 0xFF).
const (
	CmdOK    uint8 = 0x00
	CmdError uint8 = 0xFF
)

// Command describes one command of the protocol.
type Command struct {
	Set, ID uint8
	// Name is the protocol name, e.g. "ProcessInfo2".
	Name string
	// Since is the first runtime that knows the command, e.g. ".NET 6".
	Since string
	// Major is the major version of Since (3 for .NET Core 3.0 and 3.1; the
	// minor part is in Minor).
	Major, Minor int
}

// commands is the read-only table of every known command.
var commands = [...]Command{
	{SetDump, CmdGenerateCoreDump, "GenerateCoreDump", ".NET Core 3.0", 3, 0},
	{SetDump, CmdGenerateCoreDump2, "GenerateCoreDump2", ".NET 6", 6, 0},
	{SetDump, CmdGenerateCoreDump3, "GenerateCoreDump3", ".NET 7", 7, 0},
	{SetEventPipe, CmdStopTracing, "StopTracing", ".NET Core 3.0", 3, 0},
	{SetEventPipe, CmdCollectTracing, "CollectTracing", ".NET Core 3.0", 3, 0},
	{SetEventPipe, CmdCollectTracing2, "CollectTracing2", ".NET Core 3.1", 3, 1},
	{SetEventPipe, CmdCollectTracing3, "CollectTracing3", ".NET 8", 8, 0},
	{SetEventPipe, CmdCollectTracing4, "CollectTracing4", ".NET 9", 9, 0},
	{SetEventPipe, CmdCollectTracing5, "CollectTracing5", ".NET 10", 10, 0},
	{SetEventPipe, CmdCollectTracing6, "CollectTracing6", ".NET 11", 11, 0},
	{SetProfiler, CmdAttachProfiler, "AttachProfiler", ".NET Core 3.0", 3, 0},
	{SetProfiler, CmdStartupProfiler, "StartupProfiler", ".NET 6", 6, 0},
	{SetProcess, CmdProcessInfo, "ProcessInfo", ".NET 5", 5, 0},
	{SetProcess, CmdResumeRuntime, "ResumeRuntime", ".NET 5", 5, 0},
	{SetProcess, CmdProcessEnvironment, "ProcessEnvironment", ".NET 5", 5, 0},
	{SetProcess, CmdSetEnvironmentVariable, "SetEnvironmentVariable", ".NET 6", 6, 0},
	{SetProcess, CmdProcessInfo2, "ProcessInfo2", ".NET 6", 6, 0},
	{SetProcess, CmdEnablePerfMap, "EnablePerfMap", ".NET 8", 8, 0},
	{SetProcess, CmdDisablePerfMap, "DisablePerfMap", ".NET 8", 8, 0},
	{SetProcess, CmdApplyStartupHook, "ApplyStartupHook", ".NET 8", 8, 0},
	{SetProcess, CmdProcessInfo3, "ProcessInfo3", ".NET 8", 8, 0},
}

// Commands returns a copy of the command table.
func Commands() []Command { return append([]Command(nil), commands[:]...) }

// LookupCommand returns the table entry of a command.
func LookupCommand(set, id uint8) (Command, bool) {
	for _, c := range commands {
		if c.Set == set && c.ID == id {
			return c, true
		}
	}
	return Command{}, false
}

// CommandName returns the protocol name of a command, or a hex form such
// as "command 0x0409" for an unknown one.
func CommandName(set, id uint8) string {
	if c, ok := LookupCommand(set, id); ok {
		return c.Name
	}
	switch {
	case set == SetServer && id == CmdOK:
		return "OK"
	case set == SetServer && id == CmdError:
		return "Error"
	}
	return fmt.Sprintf("command 0x%02X%02X", set, id)
}
