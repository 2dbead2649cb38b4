package profile

import (
	"encoding/binary"
	"path"
	"strings"
	"unicode/utf16"
)

// providerEventPipe writes the ProcessInfo event (id 1) at the start of a
// session: the target's command line, then (newer runtimes) its OS and
// architecture.
const providerEventPipe = "Microsoft-DotNETCore-EventPipe"

// utf16z decodes the NUL-terminated UTF-16LE string at the start of b.
func utf16z(b []byte) string {
	var u []uint16
	for i := 0; i+1 < len(b); i += 2 {
		c := binary.LittleEndian.Uint16(b[i:])
		if c == 0 {
			break
		}
		u = append(u, c)
	}
	return string(utf16.Decode(u))
}

// versionFromPath returns the runtime version in a path into a shared
// framework ("/usr/share/dotnet/shared/Microsoft.NETCore.App/3.1.2/..."
// gives "3.1.2"), "" when the path has none.
func versionFromPath(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	const dir = "/Microsoft.NETCore.App/"
	i := strings.Index(p, dir)
	if i < 0 {
		return ""
	}
	v, _, ok := strings.Cut(p[i+len(dir):], "/")
	if !ok || v == "" || v[0] < '0' || v[0] > '9' {
		return ""
	}
	return v
}

// processName names the application a command line runs: the first
// argument's file name without .dll/.exe, or for "dotnet [options]
// app.dll" the app's.
func processName(cmdline string) string {
	args := splitCommandLine(cmdline)
	if len(args) == 0 {
		return ""
	}
	name := baseName(args[0])
	if strings.EqualFold(name, "dotnet") {
		for _, a := range args[1:] {
			if lower := strings.ToLower(a); strings.HasSuffix(lower, ".dll") || strings.HasSuffix(lower, ".exe") {
				return baseName(a)
			}
		}
	}
	return name
}

// baseName is the file name of a Unix or Windows path without a .dll or
// .exe suffix.
func baseName(p string) string {
	p = path.Base(strings.ReplaceAll(p, `\`, "/"))
	lower := strings.ToLower(p)
	if strings.HasSuffix(lower, ".dll") || strings.HasSuffix(lower, ".exe") {
		p = p[:len(p)-4]
	}
	return p
}

// splitCommandLine splits at spaces outside double quotes.
func splitCommandLine(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, have := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, have = !quoted, true
		case r == ' ' && !quoted:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}
