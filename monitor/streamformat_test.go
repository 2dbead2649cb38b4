package monitor

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// The logs and exceptions routes pick their format from the format
// parameter, else from Accept, else newline-delimited JSON.
func TestStreamFormat(t *testing.T) {
	for _, c := range []struct {
		query, accept, format, ctype, err string
	}{
		{"", "", "json", "application/x-ndjson", ""},
		{"", "text/plain", "text", "text/plain; charset=utf-8", ""},
		{"", "application/json-seq", "json-seq", "application/json-seq", ""},
		{"format=JSON-SEQ", "text/plain", "json-seq", "application/json-seq", ""},
		{"format=text", "", "text", "text/plain; charset=utf-8", ""},
		{"format=xml", "", "", "", `unknown format "xml"`},
	} {
		r := httptest.NewRequest("GET", "/logs?"+c.query, nil)
		if c.accept != "" {
			r.Header.Set("Accept", c.accept)
		}
		format, ctype, err := streamFormat(r)
		if format != c.format || ctype != c.ctype || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q, Accept %q: %q %q %v; want %q %q %q", c.query, c.accept, format, ctype, err, c.format, c.ctype, c.err)
		}
	}
}
