package monitor

import (
	"os"
	"regexp"
	"testing"
)

// TestCoreclrPathPattern: the runtime version is read from the path of the
// libcoreclr a process mapped, and a process without one has none.
func TestCoreclrPathPattern(t *testing.T) {
	re := regexp.MustCompile(coreclrPathPattern)
	for line, want := range map[string]string{
		"7f00-7f10 r-xp 00000000 08:01 42 /usr/share/dotnet/shared/Microsoft.NETCore.App/3.1.2/libcoreclr.so":         "3.1.2",
		"1000-2000 r--p 00000000 01:00 7 /usr/local/share/dotnet/shared/Microsoft.NETCore.App/8.0.1/libcoreclr.dylib": "8.0.1",
		"7f00-7f10 r-xp 00000000 08:01 42 /usr/share/dotnet/shared/Microsoft.NETCore.App/3.1.2/libclrjit.so":          "",
		"7f00-7f10 r-xp 00000000 08:01 42 /opt/Microsoft.NETCore.App/x/libcoreclr.so":                                 "",
	} {
		got := ""
		if m := re.FindStringSubmatch(line); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("%q: version %q, want %q", line, got, want)
		}
	}
	if v := versionFromMaps(os.Getpid(), re); v != "" {
		t.Errorf("versionFromMaps of the test process = %q, want none", v)
	}
}
