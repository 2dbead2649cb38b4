package gcdump

import (
	"strings"
)

// displayTypeName turns a type name as the runtime logs it (the
// reflection syntax: System.Collections.Generic.Dictionary`2[System.String,System.Int32[]])
// into the spelling PerfView shows, generic arguments in angle brackets and
// arity markers removed (System.Collections.Generic.Dictionary<System.String,System.Int32[]>),
// while array suffixes keep their brackets whatever their rank and nesting:
// System.String[,], System.Int32[][], System.Int32[,][], System.Int32[*]
// (a one-dimensional array with bounds), List<System.String>[].
// Assembly-qualified generic arguments ([[System.String, System.Private.CoreLib, ...]])
// lose the assembly. Angle brackets in the name itself (compiler-generated
// types such as Program+<>c__DisplayClass0_0) are kept as they are.
//
// TraceEvent, and so dotnet-gcdump, turns every bracket into an angle
// bracket and then "<>" back into "[]": System.String[,] becomes
// System.String<,>, and <>c__DisplayClass becomes []c__DisplayClass;
// canonicalTypeName reads the first of those spellings as this one.
func displayTypeName(n string) string {
	if strings.IndexByte(n, '[') < 0 && strings.IndexByte(n, '`') < 0 {
		return n
	}
	var b strings.Builder
	b.Grow(len(n))
	convertTypeName(&b, n)
	return b.String()
}

func convertTypeName(b *strings.Builder, s string) {
	for i := 0; i < len(s); {
		switch c := s[i]; c {
		case '`': // arity: `1
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j == i+1 {
				b.WriteByte(c) // a lone backquote: keep it
			}
			i = j
		case '[':
			j := closingBracket(s, i)
			if j < 0 { // unbalanced: keep the rest as it is
				b.WriteString(s[i:])
				return
			}
			inner := s[i+1 : j]
			if isArraySpec(inner) {
				b.WriteString(s[i : j+1])
			} else {
				b.WriteByte('<')
				convertTypeArgs(b, inner)
				b.WriteByte('>')
			}
			i = j + 1
		default:
			b.WriteByte(c)
			i++
		}
	}
}

// convertTypeArgs converts a generic argument list (what is between the
// brackets of List`1[...]).
func convertTypeArgs(b *strings.Builder, s string) {
	for k, arg := range splitTopLevel(s) {
		if k > 0 {
			b.WriteByte(',')
		}
		arg = strings.TrimSpace(arg)
		if len(arg) >= 2 && arg[0] == '[' && closingBracket(arg, 0) == len(arg)-1 {
			// [System.String, System.Private.CoreLib, Version=...]: the
			// type is before the first top-level comma.
			arg = strings.TrimSpace(splitTopLevel(arg[1 : len(arg)-1])[0])
		}
		convertTypeName(b, arg)
	}
}

// closingBracket returns the index of the ']' that closes the '[' at i,
// or -1.
func closingBracket(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// splitTopLevel splits s at the commas outside brackets.
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for j := 0; j < len(s); j++ {
		switch s[j] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:j])
				start = j + 1
			}
		}
	}
	return append(parts, s[start:])
}

// isArraySpec reports whether the text between brackets is an array's
// rank: empty ([]), commas ([,], [,,]) or a star ([*]).
func isArraySpec(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ',' && s[i] != '*' {
			return false
		}
	}
	return true
}

// canonicalTypeName reads a type name as written by TraceEvent
// (dotnet-gcdump, PerfView), whose multi-dimensional arrays are spelled
// with angle brackets (System.String<,>, System.Int32<*>), in this
// package's spelling (System.String[,]). Other names are returned as they
// are. A closed type never has an empty or comma-only generic argument
// list, so the reading is unambiguous.
func canonicalTypeName(n string) string {
	if strings.IndexByte(n, '<') < 0 {
		return n
	}
	var b []byte
	for i := 0; i < len(n); i++ {
		if n[i] == '<' {
			j := i + 1
			for j < len(n) && (n[j] == ',' || n[j] == '*') {
				j++
			}
			if j > i+1 && j < len(n) && n[j] == '>' {
				if b == nil {
					b = append(make([]byte, 0, len(n)), n[:i]...)
				}
				b = append(b, '[')
				b = append(b, n[i+1:j]...)
				b = append(b, ']')
				i = j
				continue
			}
		}
		if b != nil {
			b = append(b, n[i])
		}
	}
	if b == nil {
		return n
	}
	return string(b)
}
