package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseDuration accepts Go durations ("30s", "1m30s") and dotnet-trace's
// "dd:hh:mm:ss" (also "hh:mm:ss" and "mm:ss").
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if !strings.Contains(s, ":") {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("duration %q: use a Go duration such as 30s or 5m, or dd:hh:mm:ss", s)
		}
		if d < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		return d, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) > 4 {
		return 0, fmt.Errorf("duration %q: use dd:hh:mm:ss", s)
	}
	units := []time.Duration{time.Second, time.Minute, time.Hour, 24 * time.Hour}
	var d time.Duration
	for i := range parts {
		p := parts[len(parts)-1-i]
		n, err := strconv.ParseUint(p, 10, 31)
		if err != nil {
			return 0, fmt.Errorf("duration %q: %q is not a number; use dd:hh:mm:ss", s, p)
		}
		d += time.Duration(n) * units[i]
	}
	return d, nil
}
