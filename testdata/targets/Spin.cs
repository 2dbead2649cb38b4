// Spin is the real-runtime target for the ranking of threads that waited
// the whole trace. One thread spins in P.Spin, never leaving managed code,
// holding a lock; the main thread blocks on that lock in P.Main for the
// rest of the process's life (Monitor.Enter is a call into the runtime, so
// its stack ends in P.Main). The spinner prints "READY <pid>" once the main
// thread is blocked. Both threads are sampled at every tick of a CPU trace,
// so P.Main and P.Spin have the same wall time. The process has no command
// loop: the test kills it.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

static class P
{
    static readonly object gate = new object();
    static volatile bool holding, entering;
    static Thread main;
    public static volatile int Sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Spin()
    {
        Monitor.Enter(gate);
        holding = true;
        while (!entering || (main.ThreadState & System.Threading.ThreadState.WaitSleepJoin) == 0)
        {
            Thread.Sleep(1);
        }
        Console.WriteLine("READY " + Process.GetCurrentProcess().Id);
        Console.Out.Flush();
        int x = 1;
        while (true)
        {
            x = x * 31 + 7;
            if (x == 0) Sink = x;
        }
    }

    static void Main()
    {
        main = Thread.CurrentThread;
        Thread t = new Thread(Spin);
        t.IsBackground = true;
        t.Start();
        while (!holding) Thread.Sleep(1);
        entering = true; // from now on, WaitSleepJoin is the wait for the lock
        Monitor.Enter(gate); // held by Spin for ever
    }
}
