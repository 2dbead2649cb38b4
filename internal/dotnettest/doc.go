// Package dotnettest gives tests a real .NET Core 3.1 runtime: it finds the
// runtime installed by scripts/test.sh (npm package dotnet-3.1-linux-x64 in
// .cache/), compiles C# test targets from testdata/targets with Mono's mcs
// against the runtime's own assemblies, and starts them as real processes
// whose diagnostic socket the tests then talk to.
//
// When the runtime or the compiler is missing, tests skip with a loud
// reason, except when the environment variable CI is "true": then they fail,
// so a CI run can never pass by skipping the real-runtime tests.
//
// Environment:
//
//	CLRDIAG_DOTNET   path of the dotnet host (default: <module>/.cache/dotnet-3.1/package/dotnet)
//	CLRDIAG_MCS      path of mcs (default: mcs on PATH)
package dotnettest
