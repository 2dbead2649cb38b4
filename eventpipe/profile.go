package eventpipe

import "strings"

// Well-known provider names.
const (
	ProviderRuntime        = "Microsoft-Windows-DotNETRuntime"
	ProviderRuntimePrivate = "Microsoft-Windows-DotNETRuntimePrivate"
	ProviderRundown        = "Microsoft-Windows-DotNETRuntimeRundown"
	ProviderSampleProfiler = "Microsoft-DotNETCore-SampleProfiler"
	ProviderTPL            = "System.Threading.Tasks.TplEventSource"
	ProviderDiagSource     = "Microsoft-Diagnostics-DiagnosticSource"
)

// DefaultRundownKeyword is the rundown keyword the .NET client uses:
// GC|Loader|Jit|NGen|0x100|JittedMethodILToNativeMap|ThreadTransfer.
const DefaultRundownKeyword uint64 = 0x80020139

// Profile is a named set of providers, as dotnet-trace's --profile.
type Profile struct {
	Name        string
	Description string
	Providers   []Provider
	// RundownKeyword, when non-zero, is the rundown keyword the profile
	// asks for instead of the default.
	RundownKeyword uint64
	// DropRundownOnFallback says that an older runtime that cannot take the
	// custom rundown keyword gets no rundown at all (gc-collect) rather than
	// the default rundown.
	DropRundownOnFallback bool
	// Legacy marks definitions kept for compatibility with older tools.
	Legacy bool
}

// databaseSpecs is the FilterAndPayloadSpecs of the database profile: it maps
// SqlClient and Entity Framework Core command events to activities.
const databaseSpecs = "SqlClientDiagnosticListener/System.Data.SqlClient.WriteCommandBefore@Activity1Start:-Command;Command.CommandText;ConnectionId;Operation;Command.Connection.ServerVersion;Command.CommandTimeout;Command.CommandType;Command.Connection.ConnectionString;Command.Connection.Database;Command.Connection.DataSource;Command.Connection.PacketSize\r\n" +
	"SqlClientDiagnosticListener/System.Data.SqlClient.WriteCommandAfter@Activity1Stop:\r\n" +
	"Microsoft.EntityFrameworkCore/Microsoft.EntityFrameworkCore.Database.Command.CommandExecuting@Activity2Start:-Command;Command.CommandText;Command.Connection.ServerVersion;Command.CommandTimeout;Command.CommandType;Command.Connection.ConnectionString;Command.Connection.Database;Command.Connection.DataSource;Command.Connection.PacketSize\r\n" +
	"Microsoft.EntityFrameworkCore/Microsoft.EntityFrameworkCore.Database.Command.CommandExecuted@Activity2Stop:"

// Profiles returns the profiles clrdiag knows, in display order. The
// returned slice is freshly built and may be modified by the caller.
func Profiles() []Profile {
	return []Profile{
		{
			Name:        "dotnet-common",
			Description: "Lightweight .NET runtime diagnostics: GC, assembly loader, loader, JIT, exceptions, threading, IL-to-native maps and compilation, at Informational level.",
			Providers:   []Provider{{Name: ProviderRuntime, Keywords: 0x100003801D, Level: LevelInformational}},
		},
		{
			Name:        "dotnet-sampled-thread-time",
			Description: "Samples the managed stacks of every thread at a fixed interval (SampleProfiler, about every millisecond), for CPU and thread-time profiles.",
			Providers:   []Provider{{Name: ProviderSampleProfiler, Keywords: 0xF00000000000, Level: LevelInformational}},
		},
		{
			Name:        "gc-verbose",
			Description: "Tracks GC collections and samples object allocations (GC, GCHandle and exceptions at Verbose).",
			Providers:   []Provider{{Name: ProviderRuntime, Keywords: 0x8003, Level: LevelVerbose}},
		},
		{
			Name:        "gc-collect",
			Description: "Tracks GC collections only, at very low overhead; asks for a GC-only rundown.",
			Providers: []Provider{
				{Name: ProviderRuntime, Keywords: 0x1, Level: LevelInformational},
				{Name: ProviderRuntimePrivate, Keywords: 0x1, Level: LevelInformational},
			},
			RundownKeyword:        0x1,
			DropRundownOnFallback: true,
		},
		{
			Name:        "database",
			Description: "Captures ADO.NET and Entity Framework database commands as activities.",
			Providers: []Provider{
				{Name: ProviderTPL, Keywords: 0x80, Level: LevelInformational},
				{Name: ProviderDiagSource, Keywords: 0x3, Level: LevelVerbose, Args: []Arg{{Key: "FilterAndPayloadSpecs", Value: databaseSpecs}}},
			},
		},
		{
			Name:        "cpu-sampling",
			Description: "Older dotnet-trace default: SampleProfiler plus runtime events at Informational (ClrTraceEventParser default keywords).",
			Providers: []Provider{
				{Name: ProviderSampleProfiler, Keywords: 0xF00000000000, Level: LevelInformational},
				{Name: ProviderRuntime, Keywords: 0x14C14FCCBD, Level: LevelInformational},
			},
			Legacy: true,
		},
	}
}

// LookupProfile finds a profile by name, case-insensitively.
func LookupProfile(name string) (Profile, bool) {
	for _, p := range Profiles() {
		if strings.EqualFold(p.Name, strings.TrimSpace(name)) {
			return p, true
		}
	}
	return Profile{}, false
}

// DefaultProfiles are used when no providers, profiles or --clrevents are given.
var defaultProfiles = [...]string{"dotnet-common", "dotnet-sampled-thread-time"}

// DefaultProfileNames returns the profiles used when nothing is asked for.
func DefaultProfileNames() []string { return defaultProfiles[:] }
