//go:build unix

package dotnettest

import (
	"testing"
	"time"
)

func TestTargetsCompile(t *testing.T) {
	rt := Find(t)
	for _, name := range []string{"Events", "Hot"} {
		dll := rt.Build(t, name)
		tg := rt.Start(t, dll, nil, nil)
		tg.Send(t, "ping")
		tg.Expect(t, "PONG", 10*time.Second)
		tg.Kill()
	}
}
