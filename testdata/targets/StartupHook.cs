// StartupHook is a startup hook assembly for the startup-hook tests, built
// as a library (dotnettest BuildOptions{Library: true}). When a runtime runs
// it (DOTNET_STARTUP_HOOKS, or ApplyStartupHook through a diagnostic port
// of a runtime paused at startup), before the program's Main, Initialize
// sets the environment variable CLRDIAG_HOOK_RAN of the process to
// "pid <pid>": the Basic target's "env CLRDIAG_HOOK_RAN" then prints it.
using System;
using System.Diagnostics;

internal class StartupHook
{
    public static void Initialize()
    {
        Environment.SetEnvironmentVariable("CLRDIAG_HOOK_RAN", "pid " + Process.GetCurrentProcess().Id);
    }
}
