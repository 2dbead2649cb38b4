// Logging is the real-runtime target of the logs tests. The .NET Core 3.1
// runtime package has no Microsoft.Extensions.Logging, so this target
// stands in for it: it defines an EventSource named
// "Microsoft-Extensions-Logging" whose events have the ids, names, keywords
// and payload fields of Microsoft.Extensions.Logging 3.1's
// LoggingEventSource (FormattedMessage 1, MessageJson 5, ActivityJsonStart
// 6, ActivityJsonStop 7; self-describing format), honours its FilterSpecs
// argument the way that EventSource does (Category:Level entries, a '*'
// suffix for a prefix, UseAppFilters), and a small logger that writes them
// as EventSourceLogger does: per log call a FormattedMessage then a
// MessageJson event, per scope an ActivityJsonStart/Stop pair.
//
// It prints "READY <pid>" and obeys one command per line:
//
//   demo         writes the fixed sequence below, prints "DEMO done"
//   log L|C|ID|NAME|TEXT  logs TEXT at level L (a LogLevel number) in
//                category C with event id ID and name NAME, prints "LOGGED"
//   wait-enabled waits until a session enables the source and its
//                FilterSpecs are applied, prints "ENABLED"
//   exit N       exits with status N
//
// The demo sequence, from an async method (scopes flow across awaits):
//   Information App.Startup[1] "Started in 12 ms" ({OriginalFormat} "Started in {Elapsed} ms", Elapsed 12)
//   Debug       App.Startup[2] "Config loaded"
//   scope "RequestId:42" (App.Requests) {
//     Warning   App.Requests[10] "Slow request /orders took 1500 ms"
//     scope "Order 7" (App.Orders) {
//       Error   App.Orders[20] OrderFailed "Order 7 failed" + InvalidOperationException("out of stock")
//     }
//   }
//   Critical    Microsoft.Hosting.Lifetime[0] "Stopping"
using System;
using System.Collections.Generic;
using System.Diagnostics.Tracing;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

public enum LogLevel { Trace = 0, Debug = 1, Information = 2, Warning = 3, Error = 4, Critical = 5, None = 6 }

[EventSource(Name = "Microsoft-Extensions-Logging")]
public sealed class LoggingEventSource : EventSource
{
    public static readonly LoggingEventSource Log = new LoggingEventSource();

    public static class Keywords
    {
        public const EventKeywords Meta = (EventKeywords)1;
        public const EventKeywords Message = (EventKeywords)2;
        public const EventKeywords FormattedMessage = (EventKeywords)4;
        public const EventKeywords JsonMessage = (EventKeywords)8;
    }

    volatile KeyValuePair<string, LogLevel>[] filters = new KeyValuePair<string, LogLevel>[0];
    volatile bool useAppFilters;
    // Configured is set once a command's FilterSpecs are in place: the
    // runtime marks the source enabled before it calls OnEventCommand, so
    // IsEnabled alone can be true while the filters are still the empty
    // ones (a demo then lost its first, Debug and Information, messages).
    public volatile bool Configured;

    private LoggingEventSource() : base(EventSourceSettings.EtwSelfDescribingEventFormat) { }

    [Event(1, Keywords = Keywords.FormattedMessage, Level = EventLevel.LogAlways)]
    public void FormattedMessage(LogLevel Level, int FactoryID, string LoggerName, int EventId, string EventName, string FormattedMessage)
    {
        WriteEvent(1, Level, FactoryID, LoggerName, EventId, EventName, FormattedMessage);
    }

    [Event(5, Keywords = Keywords.JsonMessage, Level = EventLevel.LogAlways)]
    public void MessageJson(LogLevel Level, int FactoryID, string LoggerName, int EventId, string EventName, string ExceptionJson, string ArgumentsJson)
    {
        WriteEvent(5, Level, FactoryID, LoggerName, EventId, EventName, ExceptionJson, ArgumentsJson);
    }

    [Event(6, Keywords = Keywords.JsonMessage | Keywords.FormattedMessage, Level = EventLevel.LogAlways, ActivityOptions = EventActivityOptions.Recursive)]
    public void ActivityJsonStart(int ID, int FactoryID, string LoggerName, string ArgumentsJson)
    {
        WriteEvent(6, ID, FactoryID, LoggerName, ArgumentsJson);
    }

    [Event(7, Keywords = Keywords.JsonMessage | Keywords.FormattedMessage, Level = EventLevel.LogAlways)]
    public void ActivityJsonStop(int ID, int FactoryID, string LoggerName)
    {
        WriteEvent(7, ID, FactoryID, LoggerName);
    }

    protected override void OnEventCommand(EventCommandEventArgs command)
    {
        if (command.Command != EventCommand.Update && command.Command != EventCommand.Enable) return;
        string spec;
        if (command.Arguments == null || !command.Arguments.TryGetValue("FilterSpecs", out spec)) spec = "";
        var list = new List<KeyValuePair<string, LogLevel>>();
        bool app = false;
        foreach (string part in spec.Split(new[] { ';' }, StringSplitOptions.RemoveEmptyEntries))
        {
            if (part.Equals("UseAppFilters", StringComparison.OrdinalIgnoreCase)) { app = true; continue; }
            string[] kv = part.Split(new[] { ':' }, 2);
            LogLevel level = LogLevel.Debug;
            if (kv.Length == 2 && !Enum.TryParse(kv[1], out level)) continue;
            list.Add(new KeyValuePair<string, LogLevel>(kv[0].TrimEnd('*'), level));
        }
        filters = list.ToArray();
        useAppFilters = app;
        Configured = true;
    }

    // Allowed decides as LoggerFilterRule selection does: the longest
    // matching category prefix wins; with UseAppFilters, a category no
    // rule names gets the application's level (Information here).
    [NonEvent]
    public bool Allowed(string category, LogLevel level)
    {
        int best = -1;
        LogLevel min = useAppFilters ? LogLevel.Information : LogLevel.None;
        foreach (var f in filters)
        {
            if (category.StartsWith(f.Key, StringComparison.OrdinalIgnoreCase) && f.Key.Length > best)
            {
                best = f.Key.Length;
                min = f.Value;
            }
        }
        return level >= min && level != LogLevel.None;
    }
}

public sealed class Logger
{
    static int nextScope;
    const int FactoryID = 1;
    readonly string category;

    public Logger(string category) { this.category = category; }

    public void Log(LogLevel level, int eventId, string eventName, Exception ex, string format, params object[] args)
    {
        var src = LoggingEventSource.Log;
        if (!src.IsEnabled() || !src.Allowed(category, level)) return;
        var pairs = Pairs(format, args);
        string message = Format(format, pairs);
        if (src.IsEnabled(EventLevel.LogAlways, LoggingEventSource.Keywords.FormattedMessage))
            src.FormattedMessage(level, FactoryID, category, eventId, eventName, message);
        if (src.IsEnabled(EventLevel.LogAlways, LoggingEventSource.Keywords.JsonMessage))
            src.MessageJson(level, FactoryID, category, eventId, eventName, ExceptionJson(ex), Json(pairs));
    }

    public IDisposable BeginScope(string format, params object[] args)
    {
        var src = LoggingEventSource.Log;
        int id = Interlocked.Increment(ref nextScope);
        if (!src.IsEnabled(EventLevel.LogAlways, LoggingEventSource.Keywords.JsonMessage | LoggingEventSource.Keywords.FormattedMessage))
            return new Scope(null, 0, null);
        src.ActivityJsonStart(id, FactoryID, category, Json(Pairs(format, args)));
        return new Scope(src, id, category);
    }

    sealed class Scope : IDisposable
    {
        readonly LoggingEventSource src; readonly int id; readonly string category;
        public Scope(LoggingEventSource src, int id, string category) { this.src = src; this.id = id; this.category = category; }
        public void Dispose() { if (src != null) src.ActivityJsonStop(id, 1, category); }
    }

    // Pairs names the arguments after the format's holes, and adds
    // {OriginalFormat} last, as FormattedLogValues does.
    static List<KeyValuePair<string, string>> Pairs(string format, object[] args)
    {
        var list = new List<KeyValuePair<string, string>>();
        int a = 0, i = 0;
        while (a < args.Length && (i = format.IndexOf('{', i)) >= 0)
        {
            int j = format.IndexOf('}', i);
            if (j < 0) break;
            list.Add(new KeyValuePair<string, string>(format.Substring(i + 1, j - i - 1), Convert.ToString(args[a++], System.Globalization.CultureInfo.InvariantCulture)));
            i = j + 1;
        }
        list.Add(new KeyValuePair<string, string>("{OriginalFormat}", format));
        return list;
    }

    static string Format(string format, List<KeyValuePair<string, string>> pairs)
    {
        var sb = new StringBuilder(format);
        foreach (var p in pairs)
            if (p.Key != "{OriginalFormat}") sb.Replace("{" + p.Key + "}", p.Value);
        return sb.ToString();
    }

    static string Json(List<KeyValuePair<string, string>> pairs)
    {
        var sb = new StringBuilder("{");
        for (int i = 0; i < pairs.Count; i++)
        {
            if (i > 0) sb.Append(',');
            sb.Append(Quote(pairs[i].Key)).Append(':').Append(Quote(pairs[i].Value));
        }
        return sb.Append('}').ToString();
    }

    static string ExceptionJson(Exception ex)
    {
        if (ex == null) return "{}";
        return "{\"TypeName\":" + Quote(ex.GetType().FullName) + ",\"Message\":" + Quote(ex.Message) +
            ",\"HResult\":\"" + ex.HResult + "\",\"VerboseMessage\":" + Quote(ex.ToString()) + "}";
    }

    static string Quote(string s)
    {
        var sb = new StringBuilder("\"");
        foreach (char c in s ?? "")
        {
            if (c == '"' || c == '\\') sb.Append('\\').Append(c);
            else if (c == '\n') sb.Append("\\n");
            else if (c == '\r') sb.Append("\\r");
            else if (c < ' ') sb.Append("\\u").Append(((int)c).ToString("x4"));
            else sb.Append(c);
        }
        return sb.Append('"').ToString();
    }
}

public static class Program
{
    static async Task Demo()
    {
        var startup = new Logger("App.Startup");
        var requests = new Logger("App.Requests");
        var orders = new Logger("App.Orders");
        startup.Log(LogLevel.Information, 1, "", null, "Started in {Elapsed} ms", 12);
        startup.Log(LogLevel.Debug, 2, "", null, "Config loaded");
        using (requests.BeginScope("RequestId:{RequestId}", 42))
        {
            await Task.Yield();
            requests.Log(LogLevel.Warning, 10, "", null, "Slow request {Path} took {Ms} ms", "/orders", 1500);
            using (orders.BeginScope("Order {OrderId}", 7))
            {
                await Task.Delay(1);
                Exception ex;
                try { throw new InvalidOperationException("out of stock"); } catch (Exception e) { ex = e; }
                orders.Log(LogLevel.Error, 20, "OrderFailed", ex, "Order {OrderId} failed", 7);
            }
        }
        new Logger("Microsoft.Hosting.Lifetime").Log(LogLevel.Critical, 0, "", null, "Stopping");
    }

    public static int Main(string[] args)
    {
        Console.WriteLine("READY " + System.Diagnostics.Process.GetCurrentProcess().Id);
        Console.Out.Flush();
        string line;
        while ((line = Console.ReadLine()) != null)
        {
            string[] parts = line.Split(new char[] { ' ' }, 2);
            switch (parts[0])
            {
                case "demo":
                    Demo().Wait();
                    Console.WriteLine("DEMO done");
                    break;
                case "log":
                    string[] f = parts[1].Split('|');
                    new Logger(f[1]).Log((LogLevel)int.Parse(f[0]), int.Parse(f[2]), f[3], null, f[4]);
                    Console.WriteLine("LOGGED");
                    break;
                case "wait-enabled":
                    DateTime until = DateTime.UtcNow.AddSeconds(20);
                    while (!(LoggingEventSource.Log.IsEnabled() && LoggingEventSource.Log.Configured) && DateTime.UtcNow < until) Thread.Sleep(10);
                    Console.WriteLine(LoggingEventSource.Log.IsEnabled() && LoggingEventSource.Log.Configured ? "ENABLED" : "NOT-ENABLED");
                    break;
                case "exit":
                    return int.Parse(parts[1]);
            }
            Console.Out.Flush();
        }
        return 0;
    }
}
