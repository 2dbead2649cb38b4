package named

import "testing"

func TestLookup(t *testing.T) {
	rows := []string{"Wall", "cpu"}
	id := func(s string) string { return s }
	if r, err := Lookup(rows, id, "wall", "measure"); err != nil || r != "Wall" {
		t.Errorf("wall: %q, %v", r, err)
	}
	if _, err := Lookup(rows, id, "heap", "measure"); err == nil || err.Error() != `unknown measure "heap": use Wall, cpu` {
		t.Errorf("heap: %v", err)
	}
	if n := Names(rows, id); len(n) != 2 || n[1] != "cpu" {
		t.Errorf("names %q", n)
	}
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"duraton", "duration", 1},
		{"provider", "providers", 1}, {"kitten", "sitting", 3}, {"same", "same", 0},
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
