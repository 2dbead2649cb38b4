// Workloads is the real-runtime target for the allocation, contention and
// exception profiles. It defines the EventSource "Clrdiag-Workloads" (its
// Done event ends a collection with --stopping-event-*) and prints
// "READY <pid>", then obeys one command per line on standard input:
//
//   wait-enabled   waits until a session enables Clrdiag-Workloads, prints
//                  "ENABLED"
//   alloc MB       allocates about MB megabytes of two types of the same
//                  size, each object chosen at random (a fixed seed) with
//                  probability 3/4 a Workloads.Order made by
//                  Workloads.Allocator.MakeOrder and 1/4 a Workloads.Invoice
//                  made by Workloads.Allocator.MakeInvoice; prints
//                  "ALLOCATED <orders> <invoices>" (object counts)
//   alloc-loop     the same mix forever on a background thread
//                  "AllocLoop", paced (about 50 MB/s); prints "LOOPING"
//   throw          throws and catches 7 InvalidOperationException from
//                  Workloads.Thrower.Invalid and 3 ArgumentException from
//                  Workloads.Thrower.Argument, prints "THROWN 7 3"
//   throw-loop     the same 7:3 mix forever on a background thread
//                  "ThrowLoop", paced; prints "LOOPING"
//   contend N MS   N lock waits of the thread "LockWaiter" in
//                  Workloads.Contention.WaitForGate, each at least MS
//                  milliseconds: a holder thread takes the lock, waits until
//                  the waiter is blocked on it (ContentionStart written),
//                  then holds it MS more. Then one more wait, in
//                  Workloads.Contention.WaitStuck, that does not end until
//                  "release". Prints "CONTENDED N" once the stuck waiter is
//                  blocked.
//   release        ends the stuck wait, prints "RELEASED"
//   done           writes the Done event, prints "DONE"
//   ping           prints "PONG"
//   exit N         exits with status N
using System;
using System.Diagnostics;
using System.Diagnostics.Tracing;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Workloads
{
    [EventSource(Name = "Clrdiag-Workloads")]
    public sealed class Source : EventSource
    {
        public static readonly Source Log = new Source();

        // Events need a keyword: on .NET Core 3.1 an EventSource event
        // without one is not written to EventPipe sessions (seen on 3.1.2).
        public static class Keywords
        {
            public const EventKeywords Control = (EventKeywords)1;
        }

        private Source() { }

        [Event(1, Keywords = Keywords.Control, Level = EventLevel.Informational)]
        public void Done(string what) { WriteEvent(1, what); }
    }

    // Order and Invoice have the same fields, so the same size.
    public sealed class Order
    {
        public long A, B, C, D;
    }

    public sealed class Invoice
    {
        public long A, B, C, D;
    }

    public static class Allocator
    {
        public static volatile object Sink;
        // Ring keeps the last objects alive a little, like real code.
        static readonly object[] ring = new object[256];

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void MakeOrder(int i)
        {
            Order o = new Order();
            o.A = i;
            ring[i & 255] = o;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void MakeInvoice(int i)
        {
            Invoice v = new Invoice();
            v.A = i;
            ring[i & 255] = v;
        }

        // Mix allocates n objects, 3/4 orders and 1/4 invoices chosen by a
        // xorshift generator, and returns the counts.
        public static long[] Mix(long n, ref uint seed)
        {
            long orders = 0, invoices = 0;
            for (long k = 0; k < n; k++)
            {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                if ((seed & 3) != 0)
                {
                    MakeOrder((int)k);
                    orders++;
                }
                else
                {
                    MakeInvoice((int)k);
                    invoices++;
                }
            }
            Sink = ring[0];
            return new long[] { orders, invoices };
        }

        public static void Loop()
        {
            uint seed = 12345;
            while (true)
            {
                Mix(50000, ref seed); // about 2.5 MB
                Thread.Sleep(50);
            }
        }
    }

    public static class Thrower
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Invalid(int i)
        {
            throw new InvalidOperationException("invalid " + i);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Argument(int i)
        {
            throw new ArgumentException("argument " + i);
        }

        public static void Throw()
        {
            for (int i = 0; i < 7; i++)
            {
                try { Invalid(i); } catch (InvalidOperationException) { }
            }
            for (int i = 0; i < 3; i++)
            {
                try { Argument(i); } catch (ArgumentException) { }
            }
        }

        public static void Loop()
        {
            while (true)
            {
                Throw();
                Thread.Sleep(20);
            }
        }
    }

    public static class Contention
    {
        static readonly object gate = new object();
        static readonly object stuckGate = new object();
        static volatile bool atGate;
        static Thread waiter;
        static readonly AutoResetEvent go = new AutoResetEvent(false);
        static readonly AutoResetEvent waited = new AutoResetEvent(false);
        static readonly ManualResetEvent release = new ManualResetEvent(false);
        static volatile bool stuck;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void WaitForGate()
        {
            atGate = true;
            lock (gate) { }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void WaitStuck()
        {
            atGate = true;
            lock (stuckGate) { }
        }

        static void WaiterLoop()
        {
            while (true)
            {
                go.WaitOne();
                if (stuck) WaitStuck(); else WaitForGate();
                waited.Set();
            }
        }

        // WaitBlocked returns once the waiter is blocked on a lock: it said
        // it is at the gate and its state is WaitSleepJoin (the runtime
        // writes ContentionStart before it blocks).
        static void WaitBlocked()
        {
            while (!atGate || (waiter.ThreadState & System.Threading.ThreadState.WaitSleepJoin) == 0) Thread.Sleep(1);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void HoldGate(int ms)
        {
            lock (gate)
            {
                atGate = false;
                go.Set();
                WaitBlocked();
                Thread.Sleep(ms);
            }
        }

        public static void Run(int n, int ms)
        {
            if (waiter == null)
            {
                waiter = new Thread(WaiterLoop);
                waiter.IsBackground = true;
                waiter.Name = "LockWaiter";
                waiter.Start();
            }
            for (int i = 0; i < n; i++)
            {
                Thread h = new Thread(() => HoldGate(ms));
                h.Name = "LockHolder";
                h.Start();
                waited.WaitOne();
                h.Join();
            }
            // The stuck wait: the lock is held until "release".
            release.Reset();
            Thread holder = new Thread(() =>
            {
                lock (stuckGate)
                {
                    atGate = false;
                    stuck = true;
                    go.Set();
                    release.WaitOne();
                }
            });
            holder.IsBackground = true;
            holder.Name = "StuckHolder";
            holder.Start();
            while (!stuck) Thread.Sleep(1);
            WaitBlocked();
        }

        public static void Release()
        {
            release.Set();
            waited.WaitOne();
            stuck = false;
        }
    }

    public static class Program
    {
        public static int Main(string[] args)
        {
            Console.WriteLine("READY " + Process.GetCurrentProcess().Id);
            Console.Out.Flush();
            uint seed = 2463534242;
            string line;
            while ((line = Console.ReadLine()) != null)
            {
                string[] parts = line.Split(' ');
                switch (parts[0])
                {
                    case "wait-enabled":
                        DateTime until = DateTime.UtcNow.AddSeconds(20);
                        while (!Source.Log.IsEnabled() && DateTime.UtcNow < until) Thread.Sleep(10);
                        Console.WriteLine(Source.Log.IsEnabled() ? "ENABLED" : "NOT-ENABLED");
                        break;
                    case "alloc":
                        long bytes = long.Parse(parts[1]) * 1024 * 1024;
                        long[] counts = Allocator.Mix(bytes / 48, ref seed); // 48 bytes an object on 64-bit
                        Console.WriteLine("ALLOCATED " + counts[0] + " " + counts[1]);
                        break;
                    case "alloc-loop":
                        Thread a = new Thread(Allocator.Loop);
                        a.IsBackground = true;
                        a.Name = "AllocLoop";
                        a.Start();
                        Console.WriteLine("LOOPING");
                        break;
                    case "throw":
                        Thrower.Throw();
                        Console.WriteLine("THROWN 7 3");
                        break;
                    case "throw-loop":
                        Thread x = new Thread(Thrower.Loop);
                        x.IsBackground = true;
                        x.Name = "ThrowLoop";
                        x.Start();
                        Console.WriteLine("LOOPING");
                        break;
                    case "contend":
                        Contention.Run(int.Parse(parts[1]), int.Parse(parts[2]));
                        Console.WriteLine("CONTENDED " + parts[1]);
                        break;
                    case "release":
                        Contention.Release();
                        Console.WriteLine("RELEASED");
                        break;
                    case "done":
                        Source.Log.Done("done");
                        Console.WriteLine("DONE");
                        break;
                    case "ping":
                        Console.WriteLine("PONG");
                        break;
                    case "exit":
                        return int.Parse(parts[1]);
                }
                Console.Out.Flush();
            }
            return 0;
        }
    }
}
