//go:build unix

package monitor_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/monitor"
)

// served is a monitor behind Serve on a real listener, as the CLI runs it.
type served struct {
	url    string
	addr   string
	client *http.Client
}

func serveReal(t *testing.T, cfg monitor.Config, certFile, keyFile string) served {
	t.Helper()
	if cfg.APIKey == "" && !cfg.NoAuth {
		cfg.APIKey = key
	}
	m, err := monitor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, ln, certFile, keyFile) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		m.Close()
	})
	scheme := "http"
	if certFile != "" {
		scheme = "https"
	}
	return served{url: scheme + "://" + ln.Addr().String(), addr: ln.Addr().String(), client: &http.Client{Timeout: 30 * time.Second}}
}

// request sends method path with the API key and extra headers.
func (s served) request(t *testing.T, method, path string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// closedWithin waits for the server to close conn (a read returns EOF or
// a reset) and reports how long it took, or fails after limit.
func closedWithin(t *testing.T, conn net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	conn.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open for %v", limit)
	}
	return time.Since(start)
}

// TestIdleConnectionsClosed: a client that connects and sends nothing, or
// sends its headers a byte at a time, or keeps a keep-alive connection
// idle, is disconnected by the server's timeouts.
func TestIdleConnectionsClosed(t *testing.T) {
	s := serveReal(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{},
		ReadHeaderTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}, "", "")

	silent, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	t.Logf("silent connection closed after %v", closedWithin(t, silent, 10*time.Second))

	slow, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	go func() {
		for _, c := range []byte("GET /processes HTTP/1.1\r\nHost: 127.0.0.1\r\n") {
			if _, err := slow.Write([]byte{c}); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	t.Logf("slow-header connection closed after %v", closedWithin(t, slow, 10*time.Second))

	ka, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ka.Close()
	fmt.Fprintf(ka, "GET /processes HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n", key)
	resp, err := http.ReadResponse(bufio.NewReader(ka), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("keep-alive request: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	t.Logf("idle keep-alive connection closed after %v", closedWithin(t, ka, 10*time.Second))
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// TestConnectionCap: a client opening 200 connections that ask nothing
// (silent, or stopping after the first bytes of a request) gets at most
// MaxConns of them held by the server, and an authorized client is still
// served at once: a new connection takes the place of the oldest idle one.
// (Before, the server stopped accepting at the cap, and the flood locked
// everyone out until its connections timed out, ReadHeaderTimeout later:
// a minute here, 10 s by default, as often as the flood reconnects.)
func TestConnectionCap(t *testing.T) {
	const maxConns = 8
	s := serveReal(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{}, MaxConns: maxConns,
		ReadHeaderTimeout: time.Minute, IdleTimeout: time.Minute}, "", "")
	before := openFDs(t)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 200 {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatalf("after %d connections: %v", len(conns), err)
		}
		if i%2 == 1 {
			io.WriteString(c, "GET /proc") // a slow client's first bytes
		}
		conns = append(conns, c)
	}
	// The server takes each connection in turn, closing an older one: wait
	// until it has closed all but maxConns.
	open := conns
	for deadline := time.Now().Add(time.Minute); len(open) > maxConns; {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute %d of the flood's connections are still open (the server made no room), want %d", len(open), maxConns)
		}
		var still []net.Conn
		for _, c := range open {
			c.SetReadDeadline(time.Now().Add(time.Millisecond))
			if _, err := c.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
				still = append(still, c)
			}
		}
		open = still
	}
	server := openFDs(t) - before - len(conns)
	t.Logf("200 client connections: the server holds %d", server)
	if server > maxConns+1 {
		t.Errorf("the server holds %d connections, want at most %d", server, maxConns)
	}
	// An authorized client is served while the flood holds its connections.
	prompt := served{url: s.url, addr: s.addr, client: &http.Client{Timeout: 20 * time.Second}}
	for i := range 3 {
		if resp, body := prompt.request(t, "GET", "/processes", nil); resp.StatusCode != 200 {
			t.Errorf("request %d during the flood: %d %s", i, resp.StatusCode, body)
		}
	}
}

// TestConnectionCapWaitsForRequests: when every connection the server holds
// is in a request (here a trace of each of MaxConns processes), a further
// connection is not served until one ends; over HTTP and HTTPS (where the
// server sees TLS connections wrapping the ones it accepted).
func TestConnectionCapWaitsForRequests(t *testing.T) {
	t.Run("http", func(t *testing.T) { testConnectionCapWaits(t, false) })
	t.Run("https", func(t *testing.T) { testConnectionCapWaits(t, true) })
}

func testConnectionCapWaits(t *testing.T, useTLS bool) {
	const maxConns = 4
	var certFile, keyFile string
	newClient := func() *http.Client { return &http.Client{Transport: &http.Transport{}} }
	if useTLS {
		var pool *x509.CertPool
		certFile, keyFile, pool = selfSigned(t)
		newClient = func() *http.Client {
			return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		}
	}
	var src monitor.StaticSource
	var fakes []*ipctest.Server
	for i := range maxConns {
		f := fake(t, ipctest.Config{PID: 74 + i, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
			select {
			case <-s.Stopped:
			case <-ctx.Done():
			}
			return nil
		}})
		fakes = append(fakes, f)
		src = append(src, monitor.Process{PID: 74 + i, Dialer: f})
	}
	s := serveReal(t, monitor.Config{NoMetrics: true, MaxConns: maxConns, Source: src}, certFile, keyFile)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	firstCtx, endFirst := context.WithCancel(ctx)
	for i := range maxConns {
		c := ctx
		if i == 0 {
			c = firstCtx
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(c, "GET", fmt.Sprintf("%s/processes/%d/trace?duration=10m", s.url, 74+i), nil)
			req.Header.Set("Authorization", "Bearer "+key)
			if resp, err := newClient().Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	// Every trace has reached its runtime: every connection is in a request.
	for i, f := range fakes {
		for deadline := time.Now().Add(30 * time.Second); len(f.Requests()) == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the trace of process %d did not start", 74+i)
			}
		}
	}
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/processes", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := newClient().Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	select {
	case code := <-answered:
		t.Fatalf("a request beyond the cap was answered (%d) while every connection was in a request", code)
	case <-time.After(500 * time.Millisecond):
	}
	endFirst() // one trace ends, its connection closes: the waiting request is served
	select {
	case code := <-answered:
		if code != 200 {
			t.Errorf("the waiting request: %d, want 200", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiting request was not served after a request ended")
	}
}

// TestHostCheck: a DNS-rebinding page reaches the server under its own
// name; only IP addresses, localhost and allowed names pass.
func TestHostCheck(t *testing.T) {
	for _, noAuth := range []bool{true, false} {
		s := serveReal(t, monitor.Config{NoAuth: noAuth, NoMetrics: true, Source: monitor.StaticSource{}, AllowedHosts: []string{"mon.internal"}}, "", "")
		_, port, _ := net.SplitHostPort(s.addr)
		for host, want := range map[string]int{
			"127.0.0.1:" + port:        200,
			"localhost:" + port:        200,
			"LOCALHOST.":               200,
			"app.localhost":            200,
			"[::1]:" + port:            200,
			"10.1.2.3":                 200,
			"mon.internal:" + port:     200,
			"attacker.example:" + port: http.StatusMisdirectedRequest,
			"127.0.0.1.nip.io":         http.StatusMisdirectedRequest,
			"localhost.evil.example":   http.StatusMisdirectedRequest,
		} {
			resp, body := s.request(t, "GET", "/processes", map[string]string{"Host": host})
			if resp.StatusCode != want {
				t.Errorf("noAuth=%v Host %s: %d %s, want %d", noAuth, host, resp.StatusCode, body, want)
			}
		}
	}
}

// TestCrossOriginRefused: with --no-auth, a web page of another origin can
// neither POST a dump nor start a trace (GETs start sessions too); the
// same origin and non-browser clients can; CORS only for configured
// origins.
func TestCrossOriginRefused(t *testing.T) {
	var sessions atomic.Int32
	f := fake(t, ipctest.Config{PID: 71, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		sessions.Add(1)
		<-s.Stopped
		return nil
	}})
	dir := t.TempDir()
	s := serveReal(t, monitor.Config{NoAuth: true, NoMetrics: true, DumpDir: dir, CORSOrigins: []string{"https://ui.example"},
		Source: monitor.StaticSource{{PID: 71, Dialer: f}}}, "", "")
	for _, tc := range []struct {
		method, path string
		hdr          map[string]string
		want         int
	}{
		{"POST", "/processes/71/dump", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 403},
		{"POST", "/processes/71/dump", map[string]string{"Origin": "http://evil.example"}, 403},
		{"POST", "/processes/71/dump", map[string]string{"Origin": "null"}, 403},
		{"POST", "/processes/71/dump", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"GET", "/processes/71/trace?duration=100ms", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"GET", "/processes/71/env", map[string]string{"Origin": "http://evil.example"}, 403},
		{"GET", "/metrics", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
	} {
		resp, body := s.request(t, tc.method, tc.path, tc.hdr)
		if resp.StatusCode != tc.want || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s %s %v: %d %s (ACAO %q), want %d", tc.method, tc.path, tc.hdr, resp.StatusCode, body, resp.Header.Get("Access-Control-Allow-Origin"), tc.want)
		}
	}
	if n := len(f.Dumps()); n != 0 || sessions.Load() != 0 {
		t.Fatalf("cross-origin requests reached the runtime: %d dumps, %d sessions", n, sessions.Load())
	}
	// The same origin, a browser navigation and curl pass.
	for _, hdr := range []map[string]string{
		{"Origin": s.url, "Sec-Fetch-Site": "same-origin"},
		{"Sec-Fetch-Site": "none"},
		nil,
	} {
		if resp, body := s.request(t, "POST", "/processes/71/dump?type=mini", hdr); resp.StatusCode != 201 {
			t.Errorf("dump with %v: %d %s", hdr, resp.StatusCode, body)
		}
		time.Sleep(2 * time.Millisecond) // dump names have millisecond precision
	}
	// A configured origin gets CORS headers and passes, preflight included.
	resp, body := s.request(t, "OPTIONS", "/processes/71/env", map[string]string{"Origin": "https://ui.example", "Access-Control-Request-Method": "GET", "Sec-Fetch-Site": "cross-site"})
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://ui.example" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, body = s.request(t, "GET", "/processes/71/env", map[string]string{"Origin": "https://ui.example", "Sec-Fetch-Site": "cross-site"})
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "https://ui.example" {
		t.Errorf("GET from the configured origin: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

// TestQueueTimeout: a request waits at most QueueTimeout for its process's
// turn, then gets 503 with Retry-After; before, it waited for the whole of
// the request ahead of it (here a 10-minute trace).
func TestQueueTimeout(t *testing.T) {
	f := fake(t, ipctest.Config{PID: 72, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		select {
		case <-s.Stopped:
		case <-ctx.Done():
		}
		return nil
	}})
	s := serveReal(t, monitor.Config{NoMetrics: true, QueueTimeout: 300 * time.Millisecond, Source: monitor.StaticSource{{PID: 72, Dialer: f}}}, "", "")
	ctx, cancel := context.WithCancel(context.Background())
	busy := make(chan struct{})
	go func() {
		defer close(busy)
		req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/processes/72/trace?duration=10m", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		if resp, err := s.client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	defer func() { cancel(); <-busy }()
	// Wait until the trace holds the turn.
	for deadline := time.Now().Add(30 * time.Second); len(f.Requests()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the trace did not start")
		}
	}
	start := time.Now()
	resp, body := s.request(t, "GET", "/processes/72/env", nil)
	waited := time.Since(start)
	t.Logf("queued request answered %d after %v", resp.StatusCode, waited)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "busy") {
		t.Errorf("queued request: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if waited > 30*time.Second {
		t.Errorf("the queued request waited %v, want about QueueTimeout (300ms)", waited)
	}
}

// TestLongRoutesOutliveShortTimeouts: ReadTimeout and WriteTimeout bound
// short routes, but a counters request of ?duration=1s still completes
// (routes to a process extend their deadlines; ReadTimeout would otherwise
// cancel the request's context).
func TestLongRoutesOutliveShortTimeouts(t *testing.T) {
	cr := newCounterRuntime(t, 73)
	cr.value.Store(5)
	s := serveReal(t, monitor.Config{NoMetrics: true, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond,
		Source: monitor.StaticSource{{PID: 73, Dialer: cr}}}, "", "")
	resp, body := s.request(t, "GET", "/processes/73/counters?duration=1s", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "cpu-usage") {
		t.Errorf("counters for 1s with 200ms timeouts: %d %s", resp.StatusCode, body)
	}
}

// TestStalledStreamCut: a client that asks for a trace and reads nothing
// does not hold the session: once the socket buffers are full, the stream
// is cut after StreamStallTimeout and the session closed.
func TestStalledStreamCut(t *testing.T) {
	ended := make(chan time.Time, 1)
	f := fake(t, ipctest.Config{PID: 74, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		defer func() { ended <- time.Now() }()
		chunk := make([]byte, 64<<10)
		for {
			if _, err := s.Stream.Write(chunk); err != nil {
				return nil
			}
		}
	}})
	s := serveReal(t, monitor.Config{NoMetrics: true, StreamStallTimeout: 300 * time.Millisecond, Source: monitor.StaticSource{{PID: 74, Dialer: f}}}, "", "")
	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "GET /processes/74/trace?duration=10m HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n", key)
	select {
	case at := <-ended:
		t.Logf("stalled stream cut; session closed %v after the request", at.Sub(start))
	case <-time.After(30 * time.Second):
		t.Fatal("a client that reads nothing held a 10-minute trace session for 30s")
	}
}

// TestTLS: with a certificate the monitor serves HTTPS only.
func TestTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	s := serveReal(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{}}, certFile, keyFile)
	s.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if resp, body := s.request(t, "GET", "/processes", nil); resp.StatusCode != 200 || resp.TLS == nil {
		t.Errorf("https: %d %s", resp.StatusCode, body)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://" + s.addr + "/processes"); err == nil {
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS port: %d", resp.StatusCode)
		}
		resp.Body.Close()
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "clrdiag test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
