package cli

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

var dashboardLine = regexp.MustCompile(`(?m)^Dashboard: (https?://\S+)$`)

// clrdiag monitor prints the dashboard's link: it signs a browser in (a
// session cookie, then the page); with --no-auth it is /ui/ itself. The
// dashboard itself is tested in package monitor, in a browser too.
func TestMonitorPrintsDashboardLink(t *testing.T) {
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	s := startServed(t, "monitor", "--urls", "127.0.0.1:0", "--api-key", "k3y", "--no-metrics")
	link := s.wait(t, dashboardLine, 30*time.Second)
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/ui/login\?token=[A-Z2-7]{20,}$`).MatchString(link) || strings.Contains(link, "k3y") {
		t.Fatalf("dashboard link %q", link)
	}
	resp, err := noRedirect.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" || len(resp.Cookies()) != 1 {
		t.Fatalf("the link: %d %v", resp.StatusCode, resp.Header)
	}
	req, _ := http.NewRequest("GET", strings.Split(link, "/ui/")[0]+"/ui/", nil)
	req.AddCookie(resp.Cookies()[0])
	if resp, err := noRedirect.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the dashboard with the cookie: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	s.stop(t)

	s = startServed(t, "monitor", "--urls", "127.0.0.1:0", "--no-auth", "--no-metrics")
	if link := s.wait(t, dashboardLine, 30*time.Second); !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/ui/$`).MatchString(link) {
		t.Errorf("--no-auth dashboard link %q", link)
	}
}
