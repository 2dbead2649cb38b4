// Heap is the real-runtime target for heap snapshot (gcdump) tests. It
// keeps an exact number of objects of its own types alive through three
// kinds of roots, then prints "READY <pid>":
//
//   static field  Heap.Program.s_held   -> StaticItem[100] -> 100 StaticItem (long, long)
//   a local of the blocked thread "HeapHolder" -> LocalItem[50] -> 50 LocalItem (int)
//   a strong GC handle                   -> HandleItem[25] -> 25 HandleItem (object),
//                                           each referring to its own HandlePayload
//   static field  Heap.Program.s_leaks   -> Leak[] (empty at start)
//   static fields of array types whose names the runtime spells in every
//   way: s_grid string[2,3] of 6 strings, s_jagged int[3][] (3 int[4]),
//   s_mixed int[2,2][] (4 int[1]; the runtime's System.Int32[][,]),
//   s_lists List<string>[2] (2 lists)
//
// Commands, one per line on standard input:
//   grow N   replaces s_leaks by an array N longer that holds the old Leak
//            objects and N new ones; prints "GROWN <total>"
//   ping     prints "PONG"
//   exit N   exits with status N
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace Heap
{
    public sealed class StaticItem { public long A; public long B; }
    public sealed class LocalItem { public int X; }
    public sealed class HandleItem { public object Payload; }
    public sealed class HandlePayload { public int Y; }
    public sealed class Leak { public int Z; }

    public static class Program
    {
        static StaticItem[] s_held;
        static Leak[] s_leaks = new Leak[0];
        static readonly ManualResetEvent s_ready = new ManualResetEvent(false);
        static readonly ManualResetEvent s_never = new ManualResetEvent(false);
        static GCHandle s_handle;
        static string[,] s_grid;
        static int[][] s_jagged;
        static int[,][] s_mixed;
        static List<string>[] s_lists;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void FillArrays()
        {
            string[,] grid = new string[2, 3];
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 3; j++)
                    grid[i, j] = new string('g', i * 3 + j + 1);
            s_grid = grid;
            int[][] jagged = new int[3][];
            for (int i = 0; i < 3; i++) jagged[i] = new int[4];
            s_jagged = jagged;
            int[,][] mixed = new int[2, 2][];
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++)
                    mixed[i, j] = new int[1];
            s_mixed = mixed;
            s_lists = new List<string>[] { new List<string>(), new List<string>() };
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void FillStatic()
        {
            StaticItem[] a = new StaticItem[100];
            for (int i = 0; i < a.Length; i++) a[i] = new StaticItem { A = i, B = -i };
            s_held = a;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void FillHandle()
        {
            HandleItem[] a = new HandleItem[25];
            for (int i = 0; i < a.Length; i++) a[i] = new HandleItem { Payload = new HandlePayload { Y = i } };
            s_handle = GCHandle.Alloc(a, GCHandleType.Normal);
        }

        // The items are made in a frame of their own: in Hold's, the
        // optimizing JIT of .NET 5+ would keep the last item in a stack
        // slot, a second root.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static LocalItem[] MakeLocals()
        {
            LocalItem[] local = new LocalItem[50];
            for (int i = 0; i < local.Length; i++) local[i] = new LocalItem { X = i };
            return local;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Hold()
        {
            LocalItem[] local = MakeLocals();
            s_ready.Set();
            s_never.WaitOne();
            GC.KeepAlive(local);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Grow(int n)
        {
            Leak[] next = new Leak[s_leaks.Length + n];
            Array.Copy(s_leaks, next, s_leaks.Length);
            for (int i = s_leaks.Length; i < next.Length; i++) next[i] = new Leak { Z = i };
            s_leaks = next;
            return next.Length;
        }

        public static int Main(string[] args)
        {
            FillStatic();
            FillHandle();
            FillArrays();
            Thread holder = new Thread(Hold);
            holder.Name = "HeapHolder";
            holder.IsBackground = true;
            holder.Start();
            s_ready.WaitOne();
            GC.Collect();
            Console.WriteLine("READY " + System.Diagnostics.Process.GetCurrentProcess().Id);
            Console.Out.Flush();
            string line;
            while ((line = Console.ReadLine()) != null)
            {
                string[] parts = line.Split(new char[] { ' ' }, 2);
                switch (parts[0])
                {
                    case "grow":
                        Console.WriteLine("GROWN " + Grow(int.Parse(parts[1])));
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
