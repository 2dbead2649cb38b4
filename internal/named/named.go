// Package named looks up the rows of a table by name, as the tables of
// export formats (weighted.Formats) and measures (profile.MeasureInfos)
// are looked up.
package named

import (
	"fmt"
	"strings"
)

// Names lists the names of rows, in order.
func Names[T any](rows []T, name func(T) string) []string {
	names := make([]string, 0, len(rows))
	for _, r := range rows {
		names = append(names, name(r))
	}
	return names
}

// Lookup returns the row named want (case-insensitive), or an error
// "unknown <what> "want": use <the names>".
func Lookup[T any](rows []T, name func(T) string, want, what string) (T, error) {
	for _, r := range rows {
		if strings.EqualFold(name(r), want) {
			return r, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("unknown %s %q: use %s", what, want, strings.Join(Names(rows, name), ", "))
}

// Distance is the Levenshtein distance of a and b (bytes inserted,
// deleted or replaced), for suggesting the name a person probably meant.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
