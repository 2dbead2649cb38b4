//go:build unix

package dotnettest

import (
	"strings"
	"testing"
)

// WebURL returns the URL the Web target listens on, from its ready line
// ("READY <pid> <url>").
func WebURL(t testing.TB, tg *Target) string {
	t.Helper()
	f := strings.Fields(tg.ReadyLine)
	if len(f) < 3 || !strings.HasPrefix(f[2], "http://") {
		t.Fatalf("the Web target's ready line %q carries no URL", tg.ReadyLine)
	}
	return f[2]
}
