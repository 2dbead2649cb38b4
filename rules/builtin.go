package rules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/exceptions"
	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/internal/safefile"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/logs"
	"github.com/clrdiag/clrdiag/stacks"
)

// The outputs of the built-in actions.
const (
	OutputEgressPath = "EgressPath"
	OutputExitCode   = "ExitCode"
	OutputValue      = "Value"
)

// DefaultActions returns a registry of the built-in action types:
// CollectTrace, CollectDump, CollectGCDump, CollectStacks, CollectLogs,
// CollectLiveMetrics, CollectExceptions, Execute, LoadProfiler,
// SetEnvironmentVariable and GetEnvironmentVariable, with dotnet-monitor's
// settings.
func DefaultActions() *Registry {
	r := NewRegistry()
	art := []string{OutputEgressPath}
	r.Register(ActionType{Name: "CollectTrace", Outputs: art, Artifact: true, New: newCollectTrace})
	r.Register(ActionType{Name: "CollectDump", Outputs: art, Artifact: true, New: newCollectDump})
	r.Register(ActionType{Name: "CollectGCDump", Outputs: art, Artifact: true, New: newCollectGCDump})
	r.Register(ActionType{Name: "CollectStacks", Outputs: art, Artifact: true, New: newCollectStacks})
	r.Register(ActionType{Name: "CollectLogs", Outputs: art, Artifact: true, New: newCollectLogs})
	r.Register(ActionType{Name: "CollectLiveMetrics", Outputs: art, Artifact: true, New: newCollectLiveMetrics})
	r.Register(ActionType{Name: "CollectExceptions", Outputs: art, Artifact: true, New: newCollectExceptions})
	r.Register(ActionType{Name: "Execute", Outputs: []string{OutputExitCode}, New: newExecute})
	r.Register(ActionType{Name: "LoadProfiler", New: newLoadProfiler})
	r.Register(ActionType{Name: "SetEnvironmentVariable", New: newSetEnv})
	r.Register(ActionType{Name: "GetEnvironmentVariable", Outputs: []string{OutputValue}, New: newGetEnv})
	return r
}

// artifactFile creates the action's file in r.Dir: RULE_ACTION_PID_TIME.ext.
func artifactFile(r *Run, ext string) (*os.File, string, error) {
	name := fmt.Sprintf("%s_%s_%d_%s%s", r.Rule, sanitize(r.Action.Label()), r.Process.PID, r.Now.UTC().Format("20060102_150405"), ext)
	path := filepath.Join(r.Dir, name)
	f, err := safefile.Create(path, safefile.Options{Private: true})
	if errors.Is(err, fs.ErrExist) {
		// Two runs in one second: number the next.
		for i := 2; i < 100 && errors.Is(err, fs.ErrExist); i++ {
			path = filepath.Join(r.Dir, strings.TrimSuffix(name, ext)+"_"+strconv.Itoa(i)+ext)
			f, err = safefile.Create(path, safefile.Options{Private: true})
		}
	}
	if err != nil {
		return nil, "", fmt.Errorf("create the artifact file: %w", err)
	}
	return f, path, nil
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// finish closes f, removing the file when err is set, and stores it.
func finish(ctx context.Context, r *Run, f *os.File, path, kind, ctype string, err error) (Outputs, error) {
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write %s: %w", path, cerr)
	}
	if err != nil {
		_ = os.Remove(path)
		return nil, err
	}
	where, err := r.Store(ctx, Artifact{Path: path, Kind: kind, ContentType: ctype})
	if err != nil {
		return nil, err
	}
	return Outputs{OutputEgressPath: where}, nil
}

// ---- CollectTrace

type collectTrace struct {
	cfg      eventpipe.Config
	duration time.Duration
	stopping *eventpipe.EventFilter
}

// traceProfiles maps dotnet-monitor's TraceProfile names to providers.
func traceProfileProviders(name string) ([]eventpipe.Provider, uint64, bool, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "cpu":
		name = "cpu-sampling"
	case "gccollect":
		name = "gc-collect"
	case "logs":
		return logs.Config{}.Providers(), 0, false, nil
	case "metrics":
		p, err := counters.NewPlan(counters.Config{RuntimeMajor: 3})
		if err != nil {
			return nil, 0, false, err
		}
		return p.Providers, 0, false, nil
	case "http":
		return []eventpipe.Provider{AspNetProvider()}, eventpipe.DefaultRundownKeyword, false, nil
	}
	prof, ok := eventpipe.LookupProfile(strings.TrimSpace(name))
	if !ok {
		return nil, 0, false, fmt.Errorf("unknown profile %q: give Cpu, Http, Logs, Metrics, GcCollect or a clrdiag profile (clrdiag trace list-profiles)", name)
	}
	rk := prof.RundownKeyword
	if rk == 0 {
		rk = eventpipe.DefaultRundownKeyword
	}
	return prof.Providers, rk, prof.DropRundownOnFallback, nil
}

func newCollectTrace(s *Settings) (Action, error) {
	a := &collectTrace{}
	profile := s.String("Profile", false)
	provs := s.List("Providers")
	rundown := s.Bool("RequestRundown", true)
	buf := s.Int("BufferSizeMegabytes", 256, 1, 1024)
	a.duration = s.Duration("Duration", 30*time.Second, time.Second, 24*time.Hour)
	switch {
	case profile != "" && len(provs) > 0:
		s.Errorf("Providers", "give Profile or Providers, not both")
	case profile == "" && len(provs) == 0:
		s.Errorf("Profile", "give Profile (Cpu, Http, Logs, Metrics, GcCollect or a clrdiag profile) or Providers")
	}
	var providers []eventpipe.Provider
	var rundownKW uint64
	if profile != "" {
		for _, p := range strings.Split(profile, ",") {
			ps, rk, drop, err := traceProfileProviders(p)
			if err != nil {
				s.Errorf("Profile", "%v", err)
				continue
			}
			providers = append(providers, ps...)
			rundownKW |= rk
			a.cfg.DropRundownOnFallback = a.cfg.DropRundownOnFallback || drop
		}
	}
	for _, p := range provs {
		prov := eventpipe.Provider{Name: p.String("Name", true), Keywords: ^uint64(0), Level: eventpipe.LevelVerbose}
		if kw := p.String("Keywords", false); kw != "" {
			k, err := parseKeywords(kw)
			if err != nil {
				p.Errorf("Keywords", "%v", err)
			}
			prov.Keywords = k
		}
		if lv := p.String("EventLevel", false); lv != "" {
			l, err := eventpipe.ParseLevel(lv)
			if err != nil {
				p.Errorf("EventLevel", "%v", err)
			}
			prov.Level = l
		}
		args := p.Map("Arguments")
		keys := make([]string, 0, len(args))
		for k := range args {
			keys = append(keys, k)
		}
		sortStrings(keys)
		for _, k := range keys {
			prov.Args = append(prov.Args, eventpipe.Arg{Key: k, Value: args[k]})
		}
		p.Done()
		providers = append(providers, prov)
	}
	if len(provs) > 0 && rundown {
		rundownKW = eventpipe.DefaultRundownKeyword
	}
	if st := s.Section("StoppingEvent"); s.Has("StoppingEvent") {
		if len(provs) == 0 {
			s.Errorf("StoppingEvent", "a stopping event needs Providers (not Profile), as in dotnet-monitor")
		}
		a.stopping = &eventpipe.EventFilter{Provider: st.String("ProviderName", true), Event: st.String("EventName", true), Payload: st.Map("PayloadFilter")}
		st.Done()
	}
	merged, err := eventpipe.MergeProviders(providers)
	if err != nil {
		return nil, err
	}
	a.cfg.Providers = merged
	a.cfg.BufferSizeMB = uint32(buf)
	a.cfg.RundownKeyword = rundownKW
	a.cfg.NoRundown = rundownKW == 0
	return a, nil
}

func (a *collectTrace) Run(ctx context.Context, r *Run) (Outputs, error) {
	f, path, err := artifactFile(r, ".nettrace")
	if err != nil {
		return nil, err
	}
	err = a.collect(ctx, r, f)
	return finish(ctx, r, f, path, "trace", "application/octet-stream", err)
}

func (a *collectTrace) collect(ctx context.Context, r *Run, w io.Writer) error {
	sess, err := eventpipe.Start(ctx, r.Target, a.cfg)
	if err != nil {
		return fmt.Errorf("start the trace session: %w", err)
	}
	defer sess.Close()
	for _, warn := range sess.Warnings {
		r.Logger.Warn("trace session", "warning", warn)
	}
	dc := eventpipe.DrainConfig{Duration: a.duration}
	var res eventpipe.DrainResult
	if a.stopping != nil {
		// The stream is decoded as it is written (at the decoder's pace)
		// and the collection stops at the stopping event.
		res, err = sess.DrainDecode(ctx, w, dc, a.stopping.StopAt())
	} else {
		res, err = sess.Drain(ctx, w, dc)
	}
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r.Logger.Debug("trace collected", "bytes", res.Bytes, "reason", res.Reason.String(), "rundown", res.Rundown.String())
	return nil
}

// ---- CollectDump

var dumpTypes = map[string]ipc.DumpType{"mini": ipc.DumpNormal, "full": ipc.DumpFull, "triage": ipc.DumpTriage, "withheap": ipc.DumpWithHeap}

type collectDump struct{ typ ipc.DumpType }

func newCollectDump(s *Settings) (Action, error) {
	t := s.Enum("Type", "WithHeap", "Mini", "Full", "Triage", "WithHeap")
	return &collectDump{typ: dumpTypes[strings.ToLower(t)]}, nil
}

func (a *collectDump) Run(ctx context.Context, r *Run) (Outputs, error) {
	name := fmt.Sprintf("%s_%s_%d_%s.dmp", r.Rule, sanitize(r.Action.Label()), r.Process.PID, r.Now.UTC().Format("20060102_150405"))
	path := filepath.Join(r.Dir, name)
	// The runtime opens the path itself: refuse what is in the way.
	if err := safefile.Prepare(path, false); err != nil {
		return nil, fmt.Errorf("dump path: %w", err)
	}
	if err := r.Target.WriteDump(ctx, diag.DumpRequest{Path: path, Type: a.typ}); err != nil {
		return nil, fmt.Errorf("write the dump: %w", err)
	}
	if _, err := safefile.Seal(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("the runtime reported the dump written but %s is not there: the target sees another file system (a container?); give the monitor an artifact directory both can see", path)
		}
		return nil, fmt.Errorf("the dump at %s is not safe to keep: %w", path, safefile.SealAdvice(path, err))
	}
	where, err := r.Store(ctx, Artifact{Path: path, Kind: "dump", ContentType: "application/octet-stream"})
	if err != nil {
		return nil, err
	}
	return Outputs{OutputEgressPath: where}, nil
}

// ---- CollectGCDump

type collectGCDump struct{}

func newCollectGCDump(*Settings) (Action, error) { return collectGCDump{}, nil }

func (collectGCDump) Run(ctx context.Context, r *Run) (Outputs, error) {
	g, err := gcdump.Collect(ctx, r.Target, gcdump.CollectConfig{ProcessName: r.Process.Name, ProcessID: r.Process.PID})
	if err != nil {
		return nil, fmt.Errorf("heap snapshot: %w", err)
	}
	f, path, err := artifactFile(r, ".gcdump")
	if err != nil {
		return nil, err
	}
	return finish(ctx, r, f, path, "gcdump", "application/octet-stream", gcdump.Write(f, g))
}

// ---- CollectStacks

type collectStacks struct{ format string }

func newCollectStacks(s *Settings) (Action, error) {
	return &collectStacks{format: s.Enum("Format", "Json", "Json", "PlainText")}, nil
}

func (a *collectStacks) Run(ctx context.Context, r *Run) (Outputs, error) {
	snap, err := stacks.Capture(ctx, r.Target, stacks.Config{PID: localPID(r)})
	if err != nil {
		return nil, fmt.Errorf("stacks: %w", err)
	}
	ext, ctype := ".json", "application/json"
	if a.format == "PlainText" {
		ext, ctype = ".txt", "text/plain"
	}
	f, path, err := artifactFile(r, ext)
	if err != nil {
		return nil, err
	}
	if a.format == "PlainText" {
		err = snap.WriteText(f)
	} else {
		enc := json.NewEncoder(f)
		enc.SetIndent("", "  ")
		err = enc.Encode(snap)
	}
	return finish(ctx, r, f, path, "stacks", ctype, err)
}

// localPID is the pid for /proc thread names: only for a process of this
// machine (a reverse connection's pid is in another namespace).
func localPID(r *Run) int {
	if r.Process.Name == "" {
		return 0
	}
	return r.Process.PID
}

// ---- CollectLogs

type collectLogs struct {
	cfg      logs.Config
	format   string
	duration time.Duration
}

func newCollectLogs(s *Settings) (Action, error) {
	a := &collectLogs{}
	lvl := s.String("DefaultLevel", false)
	a.cfg.DefaultLevel = logs.Warning
	if lvl != "" {
		l, err := logs.ParseLevel(lvl)
		if err != nil {
			s.Errorf("DefaultLevel", "%v", err)
		}
		a.cfg.DefaultLevel = l
	}
	specs := s.Map("FilterSpecs")
	keys := make([]string, 0, len(specs))
	for k := range specs {
		keys = append(keys, k)
	}
	sortStrings(keys)
	for _, k := range keys {
		f := logs.Filter{Category: k, Level: a.cfg.DefaultLevel}
		if v := strings.TrimSpace(specs[k]); v != "" {
			l, err := logs.ParseLevel(v)
			if err != nil {
				s.Errorf("FilterSpecs."+k, "%v", err)
			}
			f.Level = l
		}
		a.cfg.Filters = append(a.cfg.Filters, f)
	}
	a.cfg.UseAppFilters = s.Bool("UseAppFilters", true)
	a.format = s.Enum("Format", "PlainText", "PlainText", "NewlineDelimitedJson", "JsonSequence")
	a.duration = s.Duration("Duration", 30*time.Second, time.Second, 24*time.Hour)
	return a, nil
}

func (a *collectLogs) Run(ctx context.Context, r *Run) (Outputs, error) {
	ext, ctype := ".txt", "text/plain"
	if a.format != "PlainText" {
		ext, ctype = ".json", "application/x-ndjson"
	}
	f, path, err := artifactFile(r, ext)
	if err != nil {
		return nil, err
	}
	var w logs.Writer
	switch a.format {
	case "PlainText":
		w = logs.NewTextWriter(f)
	case "JsonSequence":
		w = logs.NewJSONWriter(f, true)
	default:
		w = logs.NewJSONWriter(f, false)
	}
	err = logs.Collect(ctx, r.Target, a.cfg, logs.CollectConfig{Duration: a.duration}, w.Write)
	return finish(ctx, r, f, path, "logs", ctype, err)
}

// ---- CollectLiveMetrics

type collectLiveMetrics struct {
	cfg      counters.Config
	duration time.Duration
}

func newCollectLiveMetrics(s *Settings) (Action, error) {
	a := &collectLiveMetrics{}
	def := s.Bool("IncludeDefaultProviders", true)
	if s.Has("UseDefaultProviders") {
		def = s.Bool("UseDefaultProviders", def)
	}
	if def {
		a.cfg.Specs = append(a.cfg.Specs, counters.Spec{Provider: counters.DefaultProvider})
	}
	for _, p := range s.List("Providers") {
		sp := counters.Spec{Provider: p.String("ProviderName", true), Counters: p.Strings("CounterNames")}
		p.Done()
		a.cfg.Specs = append(a.cfg.Specs, sp)
	}
	for _, m := range s.List("Meters") {
		sp := counters.Spec{Provider: m.String("MeterName", true), Counters: m.Strings("InstrumentNames")}
		m.Done()
		a.cfg.Specs = append(a.cfg.Specs, sp)
	}
	if len(a.cfg.Specs) == 0 {
		s.Errorf("Providers", "nothing to collect: give Providers or Meters, or leave IncludeDefaultProviders true")
	}
	a.duration = s.Duration("Duration", 30*time.Second, time.Second, 24*time.Hour)
	if _, err := counters.NewPlan(a.cfg); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *collectLiveMetrics) Run(ctx context.Context, r *Run) (Outputs, error) {
	f, path, err := artifactFile(r, ".json")
	if err != nil {
		return nil, err
	}
	exp := counters.NewJSONExporter(f, fmt.Sprintf("%s[%d]", r.Process.Name, r.Process.PID), r.Now)
	cctx, cancel := context.WithTimeout(ctx, a.duration)
	defer cancel()
	err = counters.Follow(cctx, r.Target, a.cfg, counters.FollowConfig{}, func(u counters.Update) error {
		if u.Sample != nil {
			return exp.Write(u.Sample)
		}
		return nil
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = nil
	}
	if cerr := exp.Close(); err == nil {
		err = cerr
	}
	return finish(ctx, r, f, path, "metrics", "application/json", err)
}

// ---- CollectExceptions

// collectExceptions writes the exceptions the process throws during
// Duration (from the trigger on; dotnet-monitor writes those its
// in-process library has kept so far, which an EventPipe session cannot
// see), filtered, as text or JSON.
type collectExceptions struct {
	cfg      exceptions.Config
	format   string
	duration time.Duration
}

func newCollectExceptions(s *Settings) (Action, error) {
	a := &collectExceptions{}
	a.format = s.Enum("Format", "PlainText", "PlainText", "NewlineDelimitedJson", "JsonSequence")
	a.duration = s.Duration("Duration", 30*time.Second, time.Second, 24*time.Hour)
	f := s.Section("Filters")
	a.cfg.Filters.Include = readExceptionFilters(f, "Include")
	a.cfg.Filters.Exclude = readExceptionFilters(f, "Exclude")
	f.Done()
	return a, nil
}

// readExceptionFilters reads a list of dotnet-monitor's ExceptionFilter:
// ExceptionType, MethodName, TypeName, ModuleName, at least one of them.
func readExceptionFilters(s *Settings, key string) []exceptions.Filter {
	var out []exceptions.Filter
	for _, e := range s.List(key) {
		f := exceptions.Filter{ExceptionType: e.String("ExceptionType", false), MethodName: e.String("MethodName", false),
			TypeName: e.String("TypeName", false), ModuleName: e.String("ModuleName", false)}
		if f == (exceptions.Filter{}) {
			e.Errorf("", "give ExceptionType, MethodName, TypeName or ModuleName (MethodName, TypeName and ModuleName compare the method that threw)")
		}
		e.Done()
		out = append(out, f)
	}
	return out
}

func (a *collectExceptions) Run(ctx context.Context, r *Run) (Outputs, error) {
	res, err := exceptions.Collect(ctx, r.Target, a.cfg, exceptions.CollectConfig{Duration: a.duration})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("exceptions: %w", err)
	}
	for _, w := range res.Warnings {
		r.Logger.Warn("exceptions session", "warning", w)
	}
	ext, ctype := ".txt", "text/plain"
	if a.format != "PlainText" {
		ext, ctype = ".json", "application/x-ndjson"
		if a.format == "JsonSequence" {
			ctype = "application/json-seq"
		}
	}
	f, path, err := artifactFile(r, ext)
	if err != nil {
		return nil, err
	}
	if a.format == "PlainText" {
		err = exceptions.WriteText(f, res.Exceptions)
	} else {
		err = exceptions.WriteJSON(f, res.Exceptions, a.format == "JsonSequence")
	}
	r.Logger.Debug("exceptions collected", "thrown", res.Thrown, "written", len(res.Exceptions), "filtered", res.Filtered, "dropped", res.Dropped)
	return finish(ctx, r, f, path, "exceptions", ctype, err)
}

// ---- Execute

// DefaultExecuteTimeout bounds an Execute action that sets no Timeout.
const DefaultExecuteTimeout = 5 * time.Minute

type execute struct {
	path       Template
	args       Template
	ignoreExit bool
	timeout    time.Duration
}

func newExecute(s *Settings) (Action, error) {
	a := &execute{path: s.Template("Path", true), args: s.Template("Arguments", false)}
	a.ignoreExit = s.Bool("IgnoreExitCode", false)
	a.timeout = s.Duration("Timeout", DefaultExecuteTimeout, time.Second, 24*time.Hour)
	if _, err := SplitArgs(a.args.Text()); err != nil {
		s.Errorf("Arguments", "%v", err)
	}
	return a, nil
}

func (a *execute) Run(ctx context.Context, r *Run) (Outputs, error) {
	path := r.Expand(a.path)
	args, err := SplitArgs(r.Expand(a.args))
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, path, args...)
	cmd.WaitDelay = 5 * time.Second
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	code := -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	outs := Outputs{OutputExitCode: strconv.Itoa(code)}
	switch {
	case cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
		return outs, fmt.Errorf("%s did not finish within %s and was killed; raise Timeout%s", path, FormatDuration(a.timeout), out.tail())
	case ctx.Err() != nil:
		return outs, ctx.Err()
	case err != nil && code < 0:
		return outs, fmt.Errorf("run %s: %w", path, err)
	case code != 0 && !a.ignoreExit:
		return outs, fmt.Errorf("%s exited with status %d (set IgnoreExitCode to accept it)%s", path, code, out.tail())
	}
	r.Logger.Debug("executed", "path", path, "exitCode", code)
	return outs, nil
}

// tailBuffer keeps the last 2 KiB written, for error messages.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = append(t.b[:0], t.b[len(t.b)-2048:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) tail() string {
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return ""
	}
	return "; its output ended: " + s
}

// SplitArgs splits a command line into arguments: spaces separate them,
// double quotes group (a backslash escapes a quote or a backslash inside
// them), as Execute's Arguments is read.
func SplitArgs(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quoted, has := false, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\'):
			cur.WriteByte(s[i+1])
			i++
		case c == '"':
			quoted = !quoted
			has = true
		case !quoted && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			if in || has {
				out = append(out, cur.String())
				cur.Reset()
			}
			in, has = false, false
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quoted {
		return nil, errors.New("unbalanced double quote in the arguments")
	}
	if in || has {
		out = append(out, cur.String())
	}
	return out, nil
}

// ---- LoadProfiler

type loadProfiler struct {
	path  string
	clsid ipc.GUID
}

func newLoadProfiler(s *Settings) (Action, error) {
	a := &loadProfiler{path: s.String("Path", true)}
	if c := s.String("Clsid", true); c != "" {
		g, err := ipc.ParseGUID(c)
		if err != nil {
			s.Errorf("Clsid", "%q is not a GUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", c)
		}
		a.clsid = g
	}
	if a.path != "" && !filepath.IsAbs(a.path) && !strings.HasPrefix(a.path, `\\`) && !(len(a.path) > 2 && a.path[1] == ':') {
		s.Errorf("Path", "%q: give the absolute path of the profiler library as the target sees it", a.path)
	}
	return a, nil
}

func (a *loadProfiler) Run(ctx context.Context, r *Run) (Outputs, error) {
	if err := r.Target.AttachProfiler(ctx, diag.AttachProfilerRequest{Path: a.path, CLSID: a.clsid}); err != nil {
		return nil, fmt.Errorf("load profiler %s: %w", a.path, err)
	}
	return nil, nil
}

// ---- SetEnvironmentVariable, GetEnvironmentVariable

type setEnv struct {
	name  string
	value Template
}

func newSetEnv(s *Settings) (Action, error) {
	a := &setEnv{name: s.String("Name", true), value: s.Template("Value", false)}
	if strings.ContainsAny(a.name, "=\x00") {
		s.Errorf("Name", "a variable name must not contain '=' or NUL")
	}
	return a, nil
}

func (a *setEnv) Run(ctx context.Context, r *Run) (Outputs, error) {
	if err := r.Target.SetEnvironmentVariable(ctx, a.name, r.Expand(a.value)); err != nil {
		return nil, fmt.Errorf("set %s: %w", a.name, err)
	}
	return nil, nil
}

type getEnv struct{ name string }

func newGetEnv(s *Settings) (Action, error) { return &getEnv{name: s.String("Name", true)}, nil }

func (a *getEnv) Run(ctx context.Context, r *Run) (Outputs, error) {
	env, err := r.Target.Environment(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the environment: %w", err)
	}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == a.name {
			return Outputs{OutputValue: v}, nil
		}
	}
	return nil, fmt.Errorf("the process has no environment variable %s", a.name)
}
