//go:build unix

package dotnettest

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// TestWebTarget proves the ASP.NET Core target on .NET 8 and later: it
// serves every endpoint and counts what it served.
func TestWebTarget(t *testing.T) {
	ForEach(t, Modern, func(t *testing.T, rt *Runtime) {
		tg := rt.Start(t, rt.BuildWith(t, "Web", BuildOptions{Web: true}), nil, nil)
		base := WebURL(t, tg)
		c := &http.Client{Timeout: 30 * time.Second}
		for _, ep := range []struct {
			path string
			code int
			body string
		}{
			{"/", 200, "hello"}, {"/throw", 500, "thrown"}, {"/lock", 200, "locked"},
			{"/log", 200, "logged"}, {"/alloc?mb=2", 200, "allocated"}, {"/status?code=418", 418, "status 418"},
		} {
			resp, err := c.Get(base + ep.path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != ep.code || string(b) != ep.body {
				t.Errorf("GET %s: %d %q, want %d %q", ep.path, resp.StatusCode, b, ep.code, ep.body)
			}
		}
		tg.Send(t, "stats")
		if got := tg.Expect(t, "STATS", 10*time.Second); got != "STATS requests=6 throws=1 logs=1 locks=1" {
			t.Errorf("stats: %q", got)
		}
	})
}
