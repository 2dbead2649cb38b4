// Package browsertest drives Debian's Chromium, headless, from tests, with
// github.com/chromedp/chromedp: the browser the project's web pages (the
// profile viewer and the monitor's dashboard) are checked in.
//
//	b := browsertest.Start(t, browsertest.Config{})
//	b.Do(chromedp.Navigate(url))
//	text := browsertest.Run(b, chromedp.Text(chromedp.CSS("h1")))
//	b.Screenshot("dashboard")
//
// Start skips the test, loudly, when Chromium is not installed (scripts/test.sh
// installs Debian's chromium package when it is absent) and fails it under
// CI=true. Every browser runs with a fresh profile directory and with the
// flags that keep it off the network (no background networking, component
// updates, sync or QUIC), so a test depends on nothing but the local
// servers it opens.
//
// Screenshots go to $CLRDIAG_SCREENSHOTS when it is set (a directory, created
// when missing), else to the test's artifact directory (kept with go test
// -artifacts); the path is logged.
package browsertest
