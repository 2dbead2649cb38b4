//go:build unix

package monitor_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/monitor"
)

// A monitor over one (fake) .NET 8 process, queried with its API key.
func Example() {
	app, err := ipctest.NewServer(ipctest.Config{PID: 4242, Environment: []string{"GREETING=hi"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()
	m, err := monitor.New(monitor.Config{APIKey: "secret", Source: monitor.StaticSource{{PID: 4242, Name: "app", Dialer: app}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close() // stops the background counters sessions of /metrics
	hs := httptest.NewServer(m)
	defer hs.Close()

	req, _ := http.NewRequest("GET", hs.URL+"/processes/4242/env", nil)
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.StatusCode, " ", string(body))
	// Output:
	// 200 {
	//   "GREETING": "hi"
	// }
}

// The dashboard: the link the monitor prints signs a browser in with a
// session cookie; a page load without one goes to the sign-in form.
func ExampleServer_DashboardPath() {
	m, err := monitor.New(monitor.Config{APIKey: "secret", NoMetrics: true, Source: monitor.StaticSource{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	hs := httptest.NewServer(m)
	defer hs.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	resp, err := noRedirect.Get(hs.URL + "/ui/")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("without a session:", resp.StatusCode, resp.Header.Get("Location"))

	resp, err = noRedirect.Get(hs.URL + m.DashboardPath()) // /ui/login?token=...
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		fmt.Println("the link:", resp.StatusCode, resp.Header.Get("Location"), c.Name, c.HttpOnly, c.SameSite == http.SameSiteStrictMode)
	}
	// Output:
	// without a session: 303 /ui/login
	// the link: 303 /ui/ clrdiag_session true true
}
