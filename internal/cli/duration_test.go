package cli

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"30s": 30 * time.Second, "1m30s": 90 * time.Second, "": 0,
		"00:00:00:05": 5 * time.Second, "01:02:03:04": 24*time.Hour + 2*time.Hour + 3*time.Minute + 4*time.Second,
		"00:10": 10 * time.Second, "1:00:00": time.Hour,
	}
	for in, want := range good {
		got, err := parseDuration(in)
		if err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"5", "-1s", "1:2:3:4:5", "aa:bb", "1:-1"} {
		if _, err := parseDuration(bad); err == nil {
			t.Errorf("parseDuration(%q) accepted", bad)
		}
	}
}
