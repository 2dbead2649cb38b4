// Basic is the general-purpose real-runtime test target. It prints
// "READY <pid>" and then obeys one command per line on standard input:
//
//   env NAME     prints "ENV NAME=<value>" (or "ENV NAME unset")
//   gc           forces a full garbage collection, prints "GC done"
//   throw        throws and catches an exception, prints "THROWN"
//   ping         prints "PONG"
//   jit X        calls JitA, JitB or JitC (X = A, B or C), methods that
//                nothing else calls, so the first call compiles them;
//                prints "JITTED X"
//   exit N       exits with status N
//
// It exits with status 0 when standard input closes.
using System;
using System.Runtime.CompilerServices;
using System.Threading;

public static class Basic
{
    public static int Main(string[] args)
    {
        Thread.CurrentThread.Name = "BasicMain";
        Console.WriteLine("READY " + System.Diagnostics.Process.GetCurrentProcess().Id);
        Console.Out.Flush();
        string line;
        while ((line = Console.ReadLine()) != null)
        {
            string[] parts = line.Split(new char[] { ' ' }, 2);
            switch (parts[0])
            {
                case "env":
                    string v = Environment.GetEnvironmentVariable(parts[1]);
                    Console.WriteLine(v == null ? "ENV " + parts[1] + " unset" : "ENV " + parts[1] + "=" + v);
                    break;
                case "gc":
                    GC.Collect();
                    Console.WriteLine("GC done");
                    break;
                case "throw":
                    try { throw new InvalidOperationException("test exception"); }
                    catch (InvalidOperationException) { Console.WriteLine("THROWN"); }
                    break;
                case "ping":
                    Console.WriteLine("PONG");
                    break;
                case "jit":
                    int r = parts[1] == "A" ? JitA(1) : parts[1] == "B" ? JitB(2) : JitC(3);
                    Console.WriteLine("JITTED " + parts[1] + " " + r);
                    break;
                case "exit":
                    return int.Parse(parts[1]);
            }
            Console.Out.Flush();
        }
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int JitA(int x) { return x * 7 + 1; }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int JitB(int x) { return x * 11 + 2; }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int JitC(int x) { return x * 13 + 3; }
}
