// Hot is the real-runtime target for CPU profile tests. It prints
// "READY <pid>" and runs two named threads that burn CPU: "HotWorker" spends
// three quarters of its time in Hot.Burner.MostlyHot and one quarter in
// Hot.Burner.SometimesHot, in slices of a few milliseconds. The main thread
// waits on standard input; "exit N" ends the process.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Hot
{
    public static class Burner
    {
        static volatile int sink;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void MostlyHot(long ticks)
        {
            long end = Stopwatch.GetTimestamp() + ticks;
            int x = 0;
            while (Stopwatch.GetTimestamp() < end) { for (int i = 0; i < 1000; i++) x += i * x + 1; }
            sink = x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void SometimesHot(long ticks)
        {
            long end = Stopwatch.GetTimestamp() + ticks;
            int x = 0;
            while (Stopwatch.GetTimestamp() < end) { for (int i = 0; i < 1000; i++) x += i * x + 3; }
            sink = x;
        }

        public static void Loop()
        {
            long slice = Stopwatch.Frequency / 1000; // 1 ms
            while (true)
            {
                MostlyHot(3 * slice);
                SometimesHot(slice);
            }
        }
    }

    public static class Program
    {
        public static int Main(string[] args)
        {
            Thread.CurrentThread.Name = "HotMain";
            Thread t = new Thread(Burner.Loop);
            t.IsBackground = true;
            t.Name = "HotWorker";
            t.Start();
            Console.WriteLine("READY " + Process.GetCurrentProcess().Id);
            Console.Out.Flush();
            string line;
            while ((line = Console.ReadLine()) != null)
            {
                if (line.StartsWith("exit ")) return int.Parse(line.Substring(5));
                if (line == "ping") { Console.WriteLine("PONG"); Console.Out.Flush(); }
            }
            return 0;
        }
    }
}
