// Web is the ASP.NET Core target of the live tests on .NET 8 and later
// (compiled by Roslyn's csc against Microsoft.AspNetCore.App:
// dotnettest BuildWith(t, "Web", BuildOptions{Web: true})). It listens on
// 127.0.0.1 on a free port (or the URL given as its first argument), prints
// "READY <pid> <url>" once it serves, then obeys one command per line on
// standard input, like the other targets:
//
//   ping         prints "PONG"
//   stats        prints "STATS requests=N throws=N logs=N locks=N" (what it
//                served so far, counted by the app itself)
//   exit N       exits with status N (0 when standard input closes)
//
// Endpoints (each request is counted by route on the Meter below):
//   GET /           "hello"
//   GET /throw      throws and catches an InvalidOperationException; 500
//   GET /lock       four work items contend for one lock (each holds it
//                   5 ms), so every request makes lock contention; "locked"
//   GET /log        logs a Warning through ILogger: category
//                   "Clrdiag.Web.Requests", event id 42 ("SlowRequest"),
//                   message "Slow request /log took 123 ms"; "logged"
//   GET /alloc?mb=N allocates N MB (default 1) in 8 KB arrays; "allocated"
//   GET /status?code=N answers with status N (default 404)
//
// Meter "Clrdiag.Web" (version 1.0):
//   clrdiag.web.requests  Counter<long>, unit {request}, tag route
//   clrdiag.web.duration  Histogram<double>, unit ms, tag route
//   clrdiag.web.inflight  UpDownCounter<long>, unit {request}
//
// Logging goes only to the EventSource logger (Microsoft-Extensions-Logging),
// so stdout carries nothing but the lines above.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Threading;
using System.Threading.Tasks;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

public static class WebTarget
{
    static readonly Meter meter = new Meter("Clrdiag.Web", "1.0");
    static readonly Counter<long> requests = meter.CreateCounter<long>("clrdiag.web.requests", "{request}", "Requests served, by route");
    static readonly Histogram<double> duration = meter.CreateHistogram<double>("clrdiag.web.duration", "ms", "Time to serve a request, by route");
    static readonly UpDownCounter<long> inflight = meter.CreateUpDownCounter<long>("clrdiag.web.inflight", "{request}", "Requests being served");
    static readonly object gate = new object();
    static long served, throws, logs, locks;
    static readonly List<byte[]> kept = new List<byte[]>();

    public static int Main(string[] args)
    {
        string url = args.Length > 0 ? args[0] : "http://127.0.0.1:0";
        var builder = WebApplication.CreateBuilder(new WebApplicationOptions { Args = new string[0] });
        builder.Logging.ClearProviders();
        builder.Logging.AddEventSourceLogger();
        builder.Logging.SetMinimumLevel(LogLevel.Debug);
        builder.WebHost.UseUrls(url);
        var app = builder.Build();
        var log = app.Services.GetRequiredService<ILoggerFactory>().CreateLogger("Clrdiag.Web.Requests");

        app.Use(async (HttpContext ctx, Func<Task> next) =>
        {
            var sw = Stopwatch.StartNew();
            inflight.Add(1);
            try
            {
                await next();
            }
            finally
            {
                inflight.Add(-1);
                var route = new KeyValuePair<string, object>("route", ctx.Request.Path.Value);
                requests.Add(1, route);
                duration.Record(sw.Elapsed.TotalMilliseconds, route);
                Interlocked.Increment(ref served);
            }
        });
        app.MapGet("/", (RequestDelegate)(ctx => ctx.Response.WriteAsync("hello")));
        app.MapGet("/throw", (RequestDelegate)(ctx =>
        {
            try
            {
                throw new InvalidOperationException("clrdiag test exception");
            }
            catch (InvalidOperationException)
            {
                Interlocked.Increment(ref throws);
            }
            ctx.Response.StatusCode = 500;
            return ctx.Response.WriteAsync("thrown");
        }));
        app.MapGet("/lock", (RequestDelegate)(ctx =>
        {
            var tasks = new Task[4];
            for (int i = 0; i < tasks.Length; i++)
            {
                tasks[i] = Task.Run(() =>
                {
                    lock (gate)
                    {
                        Thread.Sleep(5);
                    }
                });
            }
            Task.WaitAll(tasks);
            Interlocked.Increment(ref locks);
            return ctx.Response.WriteAsync("locked");
        }));
        app.MapGet("/log", (RequestDelegate)(ctx =>
        {
            log.LogWarning(new EventId(42, "SlowRequest"), "Slow request {Route} took {Ms} ms", "/log", 123);
            Interlocked.Increment(ref logs);
            return ctx.Response.WriteAsync("logged");
        }));
        app.MapGet("/alloc", (RequestDelegate)(ctx =>
        {
            int mb;
            if (!int.TryParse(ctx.Request.Query["mb"], out mb) || mb <= 0) mb = 1;
            var chunks = new byte[mb * 128][];
            for (int i = 0; i < chunks.Length; i++) chunks[i] = new byte[8192];
            lock (kept)
            {
                kept.Clear();
                kept.Add(chunks[chunks.Length - 1]);
            }
            return ctx.Response.WriteAsync("allocated");
        }));
        app.MapGet("/status", (RequestDelegate)(ctx =>
        {
            int code;
            if (!int.TryParse(ctx.Request.Query["code"], out code) || code < 100 || code > 599) code = 404;
            ctx.Response.StatusCode = code;
            return ctx.Response.WriteAsync("status " + code);
        }));

        app.Start();
        string bound = url;
        var addrs = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>();
        if (addrs != null)
        {
            foreach (var a in addrs.Addresses)
            {
                bound = a;
                break;
            }
        }
        Console.WriteLine("READY " + Environment.ProcessId + " " + bound);

        string line;
        while ((line = Console.ReadLine()) != null)
        {
            var parts = line.Split(' ');
            switch (parts[0])
            {
                case "ping":
                    Console.WriteLine("PONG");
                    break;
                case "stats":
                    Console.WriteLine("STATS requests=" + Interlocked.Read(ref served) + " throws=" + Interlocked.Read(ref throws) +
                        " logs=" + Interlocked.Read(ref logs) + " locks=" + Interlocked.Read(ref locks));
                    break;
                case "exit":
                    int code = parts.Length > 1 ? int.Parse(parts[1]) : 0;
                    app.StopAsync().Wait(TimeSpan.FromSeconds(5));
                    return code;
            }
        }
        app.StopAsync().Wait(TimeSpan.FromSeconds(5));
        return 0;
    }
}
