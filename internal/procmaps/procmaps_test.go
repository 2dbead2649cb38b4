package procmaps

import "testing"

func TestMapsHas(t *testing.T) {
	maps := "" +
		"55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234    /usr/bin/dotnet\n" +
		"7f00a0000000-7f00a0001000 r-xp 00001000 08:01 5678                       /tmp/with space/libx.so\n" +
		"7f00a0002000-7f00a0003000 r-xp 00001000 08:01 5679 /tmp/old/liby.so (deleted)\n" +
		"7ffd1000000-7ffd1001000 rw-p 00000000 00:00 0                          [stack]\n" +
		"7ffd2000000-7ffd2001000 rw-p 00000000 00:00 0\n"
	for _, c := range []struct {
		path string
		want bool
	}{
		{"/usr/bin/dotnet", true},
		{"/tmp/with space/libx.so", true},
		{"/tmp/old/liby.so", true},
		{"/tmp/with", false},
		{"/tmp/libx.so", false},
		{"[stack]", true},
	} {
		if got := Has([]byte(maps), c.path); got != c.want {
			t.Errorf("Has(%q) = %v, want %v", c.path, got, c.want)
		}
	}
}
