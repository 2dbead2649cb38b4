// Events is the real-runtime target for EventPipe session and counter tests.
// It defines the EventSource "Clrdiag-Test" and prints "READY <pid>", then
// obeys one command per line on standard input:
//
//   emit N       writes N rounds of the test events (see below), prints "EMITTED N"
//   counters     starts the counter sequence: every 100 ms the EventCounter
//                "test-latency" gets the next value of 1,2,3,... and the
//                IncrementingEventCounter "test-requests" is incremented by 5;
//                prints "COUNTERS started"
//   flood S      writes Flood events as fast as possible for S seconds,
//                prints "FLOODED <count>"
//   stop-event   writes the Finish event once (for stop-on-event tests)
//   throw        throws and catches InvalidOperationException
//   seq N        the deterministic counter sequence: writes 1,2,...,N to the
//                EventCounter "seq-value" and increments the
//                IncrementingEventCounter "seq-increments" by 5 after each
//                value, one value every 50 ms from this one thread (so an
//                interval always holds a contiguous run of values); prints
//                "SEQ done N"
//   throw-n N    throws and catches N exceptions, prints "THROWN N"
//   gc N         runs N gen-0 collections (GC.Collect(0)), prints "GC done N"
//   ping         prints "PONG"
//   wait-enabled waits until a session enables Clrdiag-Test, prints "ENABLED"
//   exit N       exits with status N
//
// One round of "emit" writes, in order:
//   Hello(i, "hello i")                    id 1, keyword Basic,  Informational
//   Numbers(i, -i, i*1000000000L, 1.5*i, i%2==0) id 2, keyword Basic, Verbose
//   Warn("warning i")                      id 3, keyword Detail, Warning
//   Mixed(byteval, shortval, guid, "s")    id 4, keyword Detail, Informational
using System;
using System.Diagnostics.Tracing;
using System.Threading;

[EventSource(Name = "Clrdiag-Test")]
public sealed class TestSource : EventSource
{
    public static readonly TestSource Log = new TestSource();

    public static class Keywords
    {
        public const EventKeywords Basic = (EventKeywords)1;
        public const EventKeywords Detail = (EventKeywords)2;
        public const EventKeywords Flood = (EventKeywords)4;
        public const EventKeywords Control = (EventKeywords)8;
    }

    private EventCounter latency;
    private IncrementingEventCounter requests;

    private TestSource() { }

    [NonEvent]
    public void StartCounters()
    {
        if (latency == null)
        {
            latency = new EventCounter("test-latency", this) { DisplayName = "Test Latency", DisplayUnits = "ms" };
            requests = new IncrementingEventCounter("test-requests", this) { DisplayName = "Test Requests", DisplayRateTimeScale = TimeSpan.FromSeconds(1) };
        }
    }

    private EventCounter seqValue;
    private IncrementingEventCounter seqIncrements;

    [NonEvent]
    public void StartSeqCounters()
    {
        if (seqValue == null)
        {
            seqValue = new EventCounter("seq-value", this) { DisplayName = "Sequence Value" };
            seqIncrements = new IncrementingEventCounter("seq-increments", this) { DisplayName = "Sequence Increments", DisplayRateTimeScale = TimeSpan.FromSeconds(1) };
        }
    }

    [NonEvent]
    public void WriteSeq(double v) { seqValue.WriteMetric(v); seqIncrements.Increment(5); }

    [NonEvent]
    public void WriteLatency(double v) { latency.WriteMetric(v); }
    [NonEvent]
    public void AddRequests(double v) { requests.Increment(v); }

    [Event(1, Keywords = Keywords.Basic, Level = EventLevel.Informational)]
    public void Hello(int index, string message) { WriteEvent(1, index, message); }

    [Event(2, Keywords = Keywords.Basic, Level = EventLevel.Verbose)]
    public void Numbers(int a, int b, long big, double d, bool flag) { WriteEvent(2, a, b, big, d, flag); }

    [Event(3, Keywords = Keywords.Detail, Level = EventLevel.Warning)]
    public void Warn(string text) { WriteEvent(3, text); }

    [Event(4, Keywords = Keywords.Detail, Level = EventLevel.Informational)]
    public void Mixed(byte b, short s, Guid g, string text) { WriteEvent(4, b, s, g, text); }

    [Event(5, Keywords = Keywords.Flood, Level = EventLevel.Informational)]
    public void Flood(long seq) { WriteEvent(5, seq); }

    // Not named "Stop": EventSource treats names ending in Start/Stop as
    // activity opcodes and refuses a bare "Stop" without its task.
    [Event(6, Keywords = Keywords.Control, Level = EventLevel.Informational)]
    public void Finish(string reason, int code) { WriteEvent(6, reason, code); }
}

public static class Events
{
    public static readonly Guid FixedGuid = new Guid("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");

    public static int Main(string[] args)
    {
        Thread.CurrentThread.Name = "EventsMain";
        TestSource.Log.StartCounters();
        TestSource.Log.StartSeqCounters();
        Console.WriteLine("READY " + System.Diagnostics.Process.GetCurrentProcess().Id);
        Console.Out.Flush();
        string line;
        while ((line = Console.ReadLine()) != null)
        {
            string[] parts = line.Split(new char[] { ' ' }, 2);
            switch (parts[0])
            {
                case "emit":
                    int n = int.Parse(parts[1]);
                    for (int i = 0; i < n; i++)
                    {
                        TestSource.Log.Hello(i, "hello " + i);
                        TestSource.Log.Numbers(i, -i, i * 1000000000L, 1.5 * i, i % 2 == 0);
                        TestSource.Log.Warn("warning " + i);
                        TestSource.Log.Mixed((byte)(i & 0xff), (short)(-i), FixedGuid, "s" + i);
                    }
                    Console.WriteLine("EMITTED " + n);
                    break;
                case "counters":
                    Thread t = new Thread(CounterLoop);
                    t.IsBackground = true;
                    t.Name = "CounterLoop";
                    t.Start();
                    Console.WriteLine("COUNTERS started");
                    break;
                case "flood":
                    double secs = double.Parse(parts[1], System.Globalization.CultureInfo.InvariantCulture);
                    long count = 0;
                    DateTime end = DateTime.UtcNow.AddSeconds(secs);
                    while (DateTime.UtcNow < end)
                    {
                        for (int k = 0; k < 1000; k++) TestSource.Log.Flood(count++);
                    }
                    Console.WriteLine("FLOODED " + count);
                    break;
                case "stop-event":
                    TestSource.Log.Finish("done", 42);
                    Console.WriteLine("STOP-EVENT written");
                    break;
                case "throw":
                    try { throw new InvalidOperationException("test exception"); }
                    catch (InvalidOperationException) { Console.WriteLine("THROWN"); }
                    break;
                case "seq":
                    int seqN = int.Parse(parts[1]);
                    for (int i = 1; i <= seqN; i++)
                    {
                        TestSource.Log.WriteSeq(i);
                        Thread.Sleep(50);
                    }
                    Console.WriteLine("SEQ done " + seqN);
                    break;
                case "throw-n":
                    int throwN = int.Parse(parts[1]);
                    for (int i = 0; i < throwN; i++)
                    {
                        try { throw new InvalidOperationException("test exception " + i); }
                        catch (InvalidOperationException) { }
                    }
                    Console.WriteLine("THROWN " + throwN);
                    break;
                case "gc":
                    int gcN = int.Parse(parts[1]);
                    for (int i = 0; i < gcN; i++) GC.Collect(0);
                    Console.WriteLine("GC done " + gcN);
                    break;
                case "ping":
                    Console.WriteLine("PONG");
                    break;
                case "wait-enabled":
                    // Sessions enable the source asynchronously: wait until
                    // it is on before emitting, so no test event is lost.
                    DateTime until = DateTime.UtcNow.AddSeconds(20);
                    while (!TestSource.Log.IsEnabled() && DateTime.UtcNow < until) Thread.Sleep(10);
                    Console.WriteLine(TestSource.Log.IsEnabled() ? "ENABLED" : "NOT-ENABLED");
                    break;
                case "exit":
                    return int.Parse(parts[1]);
            }
            Console.Out.Flush();
        }
        return 0;
    }

    static void CounterLoop()
    {
        int v = 0;
        while (true)
        {
            v++;
            TestSource.Log.WriteLatency(v);
            TestSource.Log.AddRequests(5);
            Thread.Sleep(100);
        }
    }
}
