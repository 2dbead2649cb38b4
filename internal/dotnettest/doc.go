// Package dotnettest gives tests real .NET runtimes: .NET Core 3.1 and
// .NET 8, 10 and 11 (Majors). It finds them, compiles the C# test targets of
// testdata/targets for each (Mono's mcs against 3.1's assemblies, Roslyn's
// csc against the runtime's own for .NET 5 and later, ASP.NET Core included
// with BuildOptions.Web), and starts them as real processes whose
// diagnostic socket the tests then talk to.
//
//	rt := dotnettest.FindVersion(t, 8)             // or Find(t) for 3.1
//	tg := rt.Start(t, rt.Build(t, "Events"), nil, nil)
//
//	dotnettest.ForEach(t, dotnettest.Modern, func(t *testing.T, rt *dotnettest.Runtime) {
//		// runs as subtests net8, net10, net11
//	})
//
// Runtimes are looked for, in this order: the dotnet roots named by
// CLRDIAG_DOTNET_ROOTS (and the root of CLRDIAG_DOTNET), the root of
// `dotnet` on PATH, <cache>/runtimes/dotnet-* (scripts/test.sh unpacks
// ../shared/runtimes there) and, for 3.1, the npm package that
// scripts/test.sh installs in <cache>/dotnet-3.1. The first root that has a
// major version provides it. FindTools finds Microsoft's dotnet-trace,
// dotnet-gcdump and dotnet-counters, which some tests use as a second
// source of truth.
//
// When a runtime, a compiler or a tool is missing, tests skip with a loud
// reason, except when the environment variable CI is "true": then they fail,
// so a CI run can never pass by skipping the real-runtime tests. A major
// left out of CLRDIAG_RUNTIMES (when set) is skipped on purpose; a major in
// CLRDIAG_SMOKE_RUNTIMES (and not in CLRDIAG_RUNTIMES) runs only the tests
// of the smoke subset, those that use ForEachSmoke rather than ForEach.
// Every real-runtime test skips with go test -short, the quick loop of unit
// tests (CI runs the full mode).
//
// Environment:
//
//	CLRDIAG_DOTNET_ROOTS    dotnet roots to use first (a list separated like PATH)
//	CLRDIAG_DOTNET          the dotnet host of .NET Core 3.1 (its root is used)
//	CLRDIAG_CACHE           where runtimes, tools and built targets are (default <module>/.cache)
//	CLRDIAG_RUNTIMES        majors to test, e.g. "3,8,11" (default: all of Majors)
//	CLRDIAG_SMOKE_RUNTIMES  majors that run only the smoke subset, e.g. "10"
//	CLRDIAG_MCS             path of mcs (default: mcs on PATH)
//	CLRDIAG_CSC             path of Roslyn's csc.dll (default: <cache>/runtimes/csc/csc.dll)
//	CLRDIAG_DOTNET_TOOLS    directory of Microsoft's tools (default: <cache>/runtimes/tools)
package dotnettest
