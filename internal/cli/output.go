package cli

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/clrdiag/clrdiag/internal/termsafe"
)

// writeJSON writes v as indented JSON followed by a newline, with the
// characters encoding/json leaves raw that a terminal may obey (DEL, C1
// controls, bidirectional overrides) escaped as \uNNNN.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termsafe.JSON(buf.Bytes()))
	return err
}
