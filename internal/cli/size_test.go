package cli

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "0": 0, "1048576": 1 << 20, "512KB": 512 << 10, "500MB": 500 << 20,
		"2GB": 2 << 30, "2G": 2 << 30, "1.5GiB": 3 << 29, "10 mb": 10 << 20, "7B": 7, "1TB": 1 << 40} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"MB", "-1MB", "5XB", "1e400", "abc", "9999999TB"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
}
