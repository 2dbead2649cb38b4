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
	// The first "Microsoft.NETCore.App" between separators (either kind:
	// no copy of the path with the separators made one), then the
	// directory after it.
	const dir = "Microsoft.NETCore.App"
	sep := func(i int) bool { return i >= 0 && i < len(p) && (p[i] == '/' || p[i] == '\\') }
	for off := 0; ; {
		i := strings.Index(p[off:], dir)
		if i < 0 {
			return ""
		}
		i += off
		if !sep(i-1) || !sep(i+len(dir)) {
			off = i + 1
			continue
		}
		rest := p[i+len(dir)+1:]
		j := strings.IndexAny(rest, `/\`)
		if j <= 0 || rest[0] < '0' || rest[0] > '9' {
			return ""
		}
		return rest[:j]
	}
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
