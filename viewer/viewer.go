package viewer

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/google/pprof/driver"
	"github.com/google/pprof/profile"
)

// ErrEmpty is returned by New for a profile without samples.
var ErrEmpty = errors.New("viewer: the profile has no samples")

// Config configures a Viewer. The zero value is the default.
type Config struct {
	// Log receives the messages of pprof's driver: errors met while
	// rendering a view (they are also shown in the page). nil discards
	// them.
	Log io.Writer
	// LookPath finds Graphviz's dot before each graph view; nil means
	// exec.LookPath. The graph view is replaced by a page explaining how
	// to install Graphviz when it fails.
	LookPath func(file string) (string, error)
}

// Viewer serves pprof's web UI for one profile. It is an http.Handler
// rooted at "/": mount it with http.StripPrefix.
type Viewer struct {
	handlers map[string]http.Handler
	lookPath func(string) (string, error)
}

// newMu serializes driver.PProf: pprof's driver keeps its current
// configuration in package variables, which PProf sets from its flags.
var newMu sync.Mutex

// New prepares the views of p. It does not start a server: serve the
// Viewer with Serve or mount it in a mux. p is copied; the caller may
// change or drop it afterwards.
func New(p *profile.Profile, cfg Config) (*Viewer, error) {
	if p == nil || len(p.Sample) == 0 {
		return nil, ErrEmpty
	}
	q := p.Copy()
	for _, f := range q.Function {
		// The source view would look for files of this machine named
		// after these (module names, from the traced process).
		f.Filename = ""
		// Names come from the traced process: pages escape HTML but
		// carry control and bidirectional characters raw (peek and
		// source as text).
		f.Name, f.SystemName = termsafe.String(f.Name), termsafe.String(f.SystemName)
	}
	for _, m := range q.Mapping {
		m.File = termsafe.String(m.File)
	}
	for _, s := range q.Sample {
		for k, vs := range s.Label {
			for i, v := range vs {
				vs[i] = termsafe.String(v)
			}
			s.Label[k] = vs
		}
	}
	for i, c := range q.Comments {
		q.Comments[i] = termsafe.String(c)
	}
	if err := q.CheckValid(); err != nil {
		return nil, fmt.Errorf("viewer: %w", err)
	}
	log := cfg.Log
	if log == nil {
		log = io.Discard
	}
	var handlers map[string]http.Handler
	o := &driver.Options{
		Writer: refuseWriter{},
		// -http makes the driver build its web UI and hand it to
		// HTTPServer, which keeps the handlers and returns: nothing
		// listens. Port 0 is not used for anything.
		Flagset:       newFlagSet([]string{"-http=127.0.0.1:0", "-no_browser", "-symbolize=none", "clrdiag"}),
		Fetch:         fetcher{q},
		Sym:           noSymbolizer{},
		Obj:           noObjTool{},
		UI:            quietUI{log},
		HTTPTransport: refuseTransport{},
		HTTPServer: func(a *driver.HTTPServerArgs) error {
			handlers = a.Handlers
			return nil
		},
	}
	newMu.Lock()
	err := driver.PProf(o)
	newMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("viewer: %w", err)
	}
	if handlers == nil {
		return nil, errors.New("viewer: pprof's driver did not build its web interface")
	}
	lp := cfg.LookPath
	if lp == nil {
		lp = exec.LookPath
	}
	return &Viewer{handlers: handlers, lookPath: lp}, nil
}

// csp lets pprof's pages run their inline scripts and styles but load
// nothing from elsewhere, and be framed only by their own origin (the
// monitor's dashboard shows a flame graph in a frame).
const csp = "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; frame-ancestors 'self'; form-action 'self'; base-uri 'none'"

// ServeHTTP implements http.Handler.
func (v *Viewer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	path := r.URL.Path
	switch path {
	case "":
		// The mount point without its slash (/ui): "ui/flamegraph"
		// resolves to the flame graph under it.
		redirect(w, r, lastSegment(r.RequestURI)+"/flamegraph")
		return
	case "/saveconfig", "/deleteconfig":
		http.Error(w, "this viewer does not save settings (nothing is written to disk); "+
			"bookmark the page's address instead: it holds the view's settings", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch path {
	case "/graph":
		if _, err := v.lookPath("dot"); err != nil {
			noGraphviz(w, err)
			return
		}
	case "/source", "/disasm":
		noSource(w, r)
		return
	}
	handler := v.handlers[path]
	if handler == nil {
		http.Error(w, "no such view: try ./flamegraph, ./top, ./peek or ./graph", http.StatusNotFound)
		return
	}
	if path == "/download" {
		handler.ServeHTTP(w, r)
		return
	}
	// A page: pprof's, with the menu entries that cannot work hidden.
	pw := &pageWriter{header: h}
	handler.ServeHTTP(pw, r)
	_, dotErr := v.lookPath("dot")
	pw.flush(w, dotErr == nil)
}

// hiddenCSS hides the entries of pprof's menus that lead nowhere for a
// .NET profile: Source and Disassemble (the View menu, the flame graph's
// right-click menu), which read the profiled program's binaries and source
// files, and Config, whose "Save as" this viewer refuses (it writes
// nothing). hiddenGraphCSS hides Graph too when Graphviz's dot is missing.
const (
	hiddenCSS      = "#list,#disasm,#action-source,#action-source-tab,#action-source-tab+hr,#config{display:none}"
	hiddenGraphCSS = "#graphbtn{display:none}"
)

// pageWriter holds a page of pprof's (which pprof renders whole in memory
// before writing it) to add hiddenCSS to it.
type pageWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (p *pageWriter) Header() http.Header { return p.header }

func (p *pageWriter) WriteHeader(code int) {
	if p.status == 0 {
		p.status = code
	}
}

func (p *pageWriter) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return p.body.Write(b)
}

// flush writes the page to w, its style after <head> when it is HTML.
func (p *pageWriter) flush(w http.ResponseWriter, graph bool) {
	body := p.body.Bytes()
	if strings.HasPrefix(p.header.Get("Content-Type"), "text/html") {
		if i := bytes.Index(body, []byte("<head>")); i >= 0 {
			css := hiddenCSS
			if !graph {
				css += hiddenGraphCSS
			}
			i += len("<head>")
			body = slices.Concat(body[:i], []byte("\n<style>"+css+"</style>"), body[i:])
			p.header.Del("Content-Length")
		}
	}
	if p.status == 0 {
		p.status = http.StatusOK
	}
	w.WriteHeader(p.status)
	_, _ = w.Write(body)
}

// lastSegment is the last element of the path of a request URI, for a
// relative redirect from a mount point without its trailing slash.
func lastSegment(requestURI string) string {
	path, _, _ := strings.Cut(requestURI, "?")
	return path[strings.LastIndexByte(path, '/')+1:]
}

// redirect answers 303 with a relative Location, keeping the query.
func redirect(w http.ResponseWriter, r *http.Request, to string) {
	if r.URL.RawQuery != "" {
		to += "?" + r.URL.RawQuery
	}
	w.Header().Set("Location", to)
	w.WriteHeader(http.StatusSeeOther)
}

// noSourceHTML is the page of the Source and Disassemble views, which a
// .NET profile cannot have (their menu entries are hidden). Links keep the
// method asked for (f).
const noSourceHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>No source or disassembly for a .NET profile</title>
<style>body{font-family:system-ui,sans-serif;max-width:46em;margin:2em auto;padding:0 1em;line-height:1.5}code{background:#eee;padding:0 .2em}</style>
</head><body>
<h1>No source or disassembly for a .NET profile</h1>
<p>pprof's Source and Disassemble views read the profiled program's source files and machine code. A .NET profile has neither: a trace names the methods and modules of code compiled just in time inside the traced process, without source lines, and a heap snapshot names types. These views have nothing to show, so this viewer leaves them out of its menus.</p>
<p>{{if .F}}The callers and callees of <code>{{.F}}</code>: {{end}}<a href="./peek{{.Query}}">Peek</a>, or the <a href="./flamegraph{{.Query}}">Flame graph</a> and <a href="./top{{.Query}}">Top</a>.</p>
</body></html>
`

func noSource(w http.ResponseWriter, r *http.Request) {
	page := template.Must(template.New("source").Parse(noSourceHTML))
	data := struct{ F, Query string }{F: r.URL.Query().Get("f")}
	if data.F != "" {
		data.Query = "?" + url.Values{"f": {data.F}}.Encode()
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	_ = page.Execute(w, data)
}

// noGraphvizHTML is the page shown when the graph view cannot be drawn. It
// is parsed when shown, not at program start (which every clrdiag command
// would pay).
const noGraphvizHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Graph view needs Graphviz</title>
<style>body{font-family:system-ui,sans-serif;max-width:46em;margin:2em auto;padding:0 1em;line-height:1.5}code{background:#eee;padding:0 .2em}</style>
</head><body>
<h1>The graph view needs Graphviz</h1>
<p>pprof draws the call graph with Graphviz's <code>dot</code> program, which was not found on this machine's PATH ({{.}}).</p>
<p>Install it (Debian and Ubuntu: <code>apt-get install graphviz</code>; Fedora: <code>dnf install graphviz</code>; macOS: <code>brew install graphviz</code>) and reload this page. The other views do not need it:</p>
<ul><li><a href="./flamegraph">Flame graph</a></li><li><a href="./top">Top</a></li><li><a href="./peek">Peek</a></li></ul>
</body></html>
`

func noGraphviz(w http.ResponseWriter, err error) {
	page := template.Must(template.New("graph").Parse(noGraphvizHTML))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusNotImplemented)
	_ = page.Execute(w, err.Error())
}

// fetcher hands the driver the profile. The empty source name marks it as
// local, so the driver does not save a copy.
type fetcher struct{ p *profile.Profile }

func (f fetcher) Fetch(string, time.Duration, time.Duration) (*profile.Profile, string, error) {
	return f.p, "", nil
}

// errRefused is what the tools given to the driver answer.
var errRefused = errors.New("viewer: refused (the viewer reads no files and uses no network)")

type refuseWriter struct{}

func (refuseWriter) Open(string) (io.WriteCloser, error) { return nil, errRefused }

type noSymbolizer struct{}

func (noSymbolizer) Symbolize(string, driver.MappingSources, *profile.Profile) error { return nil }

type noObjTool struct{}

func (noObjTool) Open(string, uint64, uint64, uint64, string) (driver.ObjFile, error) {
	return nil, errRefused
}

func (noObjTool) Disasm(string, uint64, uint64, bool) ([]driver.Inst, error) { return nil, errRefused }

type refuseTransport struct{}

func (refuseTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, errRefused }

// quietUI sends the driver's messages to a log; it has no terminal and
// never opens a browser.
type quietUI struct{ w io.Writer }

func (quietUI) ReadLine(string) (string, error) { return "", io.EOF }

// servingPrefix starts the driver's "Serving web UI on
// http://127.0.0.1:0", which names no real address.
const servingPrefix = "Serving web UI on "

func (u quietUI) Print(args ...any) {
	msg := fmt.Sprint(args...)
	if !strings.HasPrefix(msg, servingPrefix) {
		u.line(msg)
	}
}

func (u quietUI) PrintErr(args ...any)              { u.line(fmt.Sprint(args...)) }
func (quietUI) IsTerminal() bool                    { return false }
func (quietUI) WantBrowser() bool                   { return false }
func (quietUI) SetAutoComplete(func(string) string) {}

func (u quietUI) line(msg string) {
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	_, _ = io.WriteString(u.w, "pprof: "+msg)
}

// flagSet is the driver's command line: the standard flag package over a
// fixed argument list.
type flagSet struct {
	fs    *flag.FlagSet
	args  []string
	extra string
}

func newFlagSet(args []string) *flagSet {
	fs := flag.NewFlagSet("pprof", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &flagSet{fs: fs, args: args}
}

func (f *flagSet) Bool(name string, def bool, usage string) *bool {
	return f.fs.Bool(name, def, usage)
}
func (f *flagSet) Int(name string, def int, usage string) *int { return f.fs.Int(name, def, usage) }
func (f *flagSet) Float64(name string, def float64, usage string) *float64 {
	return f.fs.Float64(name, def, usage)
}
func (f *flagSet) String(name string, def string, usage string) *string {
	return f.fs.String(name, def, usage)
}

func (f *flagSet) StringList(name string, def string, usage string) *[]*string {
	var list []*string
	if def != "" {
		list = append(list, &def)
	}
	f.fs.Func(name, usage, func(s string) error {
		list = append(list, &s)
		return nil
	})
	return &list
}

func (f *flagSet) ExtraUsage() string      { return f.extra }
func (f *flagSet) AddExtraUsage(eu string) { f.extra += eu }

func (f *flagSet) Parse(usage func()) []string {
	if err := f.fs.Parse(f.args); err != nil {
		usage()
		return nil
	}
	return f.fs.Args()
}
