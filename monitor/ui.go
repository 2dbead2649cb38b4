package monitor

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// The dashboard's browser sessions.
const (
	// SessionCookie names the cookie of a signed-in browser.
	SessionCookie = "clrdiag_session"
	// CSRFHeader carries a session's CSRF token on the dashboard's
	// state-changing requests (a form sends the field "csrf").
	CSRFHeader = "X-Clrdiag-CSRF"
	// SessionLifetime is how long a browser stays signed in.
	SessionLifetime = 12 * time.Hour
	// maxSessions bounds the signed-in browsers; the oldest is dropped.
	maxSessions = 256
	// uiPrefix is where the dashboard lives.
	uiPrefix = "/ui/"
)

//go:embed ui
var uiFiles embed.FS

// uiStatic is the dashboard's static files.
func uiStatic() fs.FS {
	sub, err := fs.Sub(uiFiles, "ui/static")
	if err != nil {
		panic(err) // a fixed, valid path in the embedded files
	}
	return sub
}

// uiSession is one signed-in browser.
type uiSession struct {
	csrf    string
	expires time.Time
}

// ui serves the dashboard under /ui/: the process list, live charts of the
// counters the /metrics collector keeps, and actions (CPU profile, stacks,
// dump, heap snapshot) whose results open in the page.
type ui struct {
	s     *Server
	token string // the login link's token; "" with NoAuth
	mux   *http.ServeMux
	// pages are the HTML templates, parsed by newUI rather than at program
	// start, which every clrdiag command would pay.
	pages *template.Template
	// coreclrPath is coreclrPathPattern compiled.
	coreclrPath *regexp.Regexp

	mu       sync.Mutex
	sessions map[string]*uiSession
	jobs     *jobs
	versions map[int]versionEntry

	ctx    context.Context // ends with Server.Close; jobs run under it
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newUI(s *Server) *ui {
	u := &ui{s: s, mux: http.NewServeMux(), sessions: map[string]*uiSession{}, versions: map[int]versionEntry{},
		pages: template.Must(template.ParseFS(uiFiles, "ui/*.html")), coreclrPath: regexp.MustCompile(coreclrPathPattern)}
	if !s.cfg.NoAuth {
		u.token = rand.Text()
	}
	u.ctx, u.cancel = context.WithCancel(context.Background())
	u.jobs = newJobs()
	m := u.mux
	m.HandleFunc("GET /ui/{$}", u.index)
	m.HandleFunc("GET /ui/login", u.loginPage)
	m.HandleFunc("POST /ui/login", u.login)
	m.HandleFunc("POST /ui/logout", u.logout)
	m.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(uiStatic())))
	m.HandleFunc("GET /ui/api/processes", u.processes)
	m.HandleFunc("GET /ui/api/processes/{pid}/counters", u.counters)
	m.HandleFunc("GET /ui/api/processes/{pid}/stacks", u.stacks)
	m.HandleFunc("POST /ui/api/processes/{pid}/dump", s.withProcess(s.dump))
	m.HandleFunc("POST /ui/api/processes/{pid}/profile", u.startProfile)
	m.HandleFunc("POST /ui/api/processes/{pid}/gcdump", u.startGCDump)
	m.HandleFunc("GET /ui/api/jobs/{id}", u.job)
	m.HandleFunc("/ui/profiles/{id}/", u.profile)
	m.HandleFunc("/ui/api/", func(w http.ResponseWriter, r *http.Request) { noRoute(w, r, m, "/ui/api/", false) })
	return u
}

// close ends the jobs in progress and waits for them.
func (u *ui) close() {
	u.cancel()
	u.wg.Wait()
}

// public are the routes served without a session: the sign-in form and
// the files it needs.
func public(r *http.Request) bool {
	p := r.URL.Path
	return p == "/ui/login" || strings.HasPrefix(p, "/ui/static/")
}

// stateChanging tells whether a request must carry the CSRF token.
func stateChanging(r *http.Request) bool {
	return r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions
}

// ServeHTTP authenticates a dashboard request: no check with NoAuth; else
// the API key as a bearer token (scripts), or the session cookie, with the
// session's CSRF token on state-changing requests. A page load without a
// session is sent to the sign-in form (303); an API call gets 401.
func (u *ui) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if r.URL.Path == "/ui" {
		http.Redirect(w, r, uiPrefix, http.StatusSeeOther)
		return
	}
	if !u.s.cfg.NoAuth && !public(r) && !u.s.bearerOK(r) {
		sess := u.session(r)
		switch {
		case sess == nil && !strings.HasPrefix(r.URL.Path, "/ui/api/") && r.Method == http.MethodGet:
			http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
			return
		case sess == nil:
			writeError(w, http.StatusUnauthorized, errors.New("not signed in: open the dashboard link the monitor printed, or sign in with the API key at /ui/login"))
			return
		case stateChanging(r) && !sameToken(csrfOf(r), sess.csrf):
			writeError(w, http.StatusForbidden, errors.New("missing or wrong CSRF token: reload the dashboard"))
			return
		}
	}
	u.mux.ServeHTTP(w, r)
}

// csrfOf is the CSRF token a request carries: the header, or a form's
// field.
func csrfOf(r *http.Request) string {
	if t := r.Header.Get(CSRFHeader); t != "" {
		return t
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		r.Body = http.MaxBytesReader(nil, r.Body, 4<<10)
		return r.PostFormValue("csrf")
	}
	return ""
}

func sameToken(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// session returns the request's live session, or nil.
func (u *ui) session(r *http.Request) *uiSession {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.sessions[c.Value]
	if s == nil {
		return nil
	}
	if time.Now().After(s.expires) {
		delete(u.sessions, c.Value)
		return nil
	}
	return s
}

// signIn starts a session and sets its cookie.
func (u *ui) signIn(w http.ResponseWriter, r *http.Request) {
	id, now := rand.Text(), time.Now()
	u.mu.Lock()
	for k, s := range u.sessions {
		if now.After(s.expires) {
			delete(u.sessions, k)
		}
	}
	if len(u.sessions) >= maxSessions {
		var oldest string
		for k, s := range u.sessions {
			if oldest == "" || s.expires.Before(u.sessions[oldest].expires) {
				oldest = k
			}
		}
		delete(u.sessions, oldest)
	}
	u.sessions[id] = &uiSession{csrf: rand.Text(), expires: now.Add(SessionLifetime)}
	u.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: id, Path: uiPrefix, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(SessionLifetime / time.Second)})
}

// LoginToken is the token of the dashboard link the monitor prints,
// /ui/login?token=TOKEN: opening it signs the browser in. It is "" with
// NoAuth (open /ui/ directly). The token changes each time the Server is
// made; it grants what the API key grants, so keep the link as private.
func (s *Server) LoginToken() string { return s.ui.token }

// DashboardPath is the path to print for the dashboard: the login link
// with its token, or /ui/ with NoAuth.
func (s *Server) DashboardPath() string {
	if s.ui.token == "" {
		return uiPrefix
	}
	return "/ui/login?token=" + s.ui.token
}

type loginArgs struct {
	Error string
}

func (u *ui) loginPage(w http.ResponseWriter, r *http.Request) {
	if u.s.cfg.NoAuth {
		http.Redirect(w, r, uiPrefix, http.StatusSeeOther)
		return
	}
	if tok := r.URL.Query().Get("token"); tok != "" {
		if sameToken(tok, u.token) {
			u.signIn(w, r)
			http.Redirect(w, r, uiPrefix, http.StatusSeeOther)
			return
		}
		u.renderLogin(w, http.StatusUnauthorized, "This link's token is not this monitor's: the token changes each time the monitor starts. Open the link it printed last, or sign in with the API key.")
		return
	}
	if u.session(r) != nil {
		http.Redirect(w, r, uiPrefix, http.StatusSeeOther)
		return
	}
	u.renderLogin(w, http.StatusOK, "")
}

func (u *ui) login(w http.ResponseWriter, r *http.Request) {
	if u.s.cfg.NoAuth {
		http.Redirect(w, r, uiPrefix, http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if !sameToken(r.PostFormValue("key"), u.s.cfg.APIKey) {
		u.renderLogin(w, http.StatusUnauthorized, "Wrong API key.")
		return
	}
	u.signIn(w, r)
	http.Redirect(w, r, uiPrefix, http.StatusSeeOther)
}

func (u *ui) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil {
		u.mu.Lock()
		delete(u.sessions, c.Value)
		u.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: uiPrefix, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// pageCSP lets the dashboard's pages load their own files only, and frame
// only the profile viewer of the same origin.
const pageCSP = "default-src 'self'; img-src 'self' data:; frame-src 'self'; frame-ancestors 'none'; " +
	"form-action 'self'; base-uri 'none'; object-src 'none'"

func (u *ui) renderLogin(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = u.pages.ExecuteTemplate(w, "login.html", loginArgs{Error: msg})
}

type indexArgs struct {
	CSRF string
	Auth bool
}

func (u *ui) index(w http.ResponseWriter, r *http.Request) {
	args := indexArgs{Auth: !u.s.cfg.NoAuth}
	if sess := u.session(r); sess != nil {
		args.CSRF = sess.csrf
	}
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = u.pages.ExecuteTemplate(w, "index.html", args)
}
