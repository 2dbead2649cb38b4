package exceptions

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"time"
)

// WriteText writes the exceptions in dotnet-monitor's plain-text layout:
// for each, a line with its time, "Type: message", and an "   at" line
// per frame, then a blank line.
func WriteText(w io.Writer, exs []Exception) error {
	bw := bufio.NewWriter(w)
	for i := range exs {
		e := &exs[i]
		bw.WriteString("First chance exception at ")
		bw.WriteString(e.Timestamp.UTC().Format(time.RFC3339Nano))
		bw.WriteByte('\n')
		bw.WriteString(oneLine(e.TypeName))
		if e.Message != "" {
			bw.WriteString(": ")
			// A multi-line message stays readable: its later lines as
			// they are, as .NET's ToString writes them.
			bw.WriteString(strings.TrimRight(e.Message, "\r\n"))
		}
		bw.WriteByte('\n')
		for _, f := range e.Stack.Frames {
			bw.WriteString("   at ")
			bw.WriteString(oneLine(f.Name()))
			bw.WriteString(params(f.Signature))
			bw.WriteByte('\n')
		}
		if _, err := bw.WriteString("\n"); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// params returns the parameter list of a runtime signature
// ("void  (int32,class System.String)" gives "(int32,class System.String)"),
// "()" when it has none to show.
func params(sig string) string {
	if i := strings.IndexByte(sig, '('); i >= 0 && strings.HasSuffix(sig, ")") {
		return oneLine(sig[i:])
	}
	return "()"
}

func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

// WriteJSON writes one JSON object per exception (dotnet-monitor's
// ExceptionInstance fields, and hResult, rethrown, and each frame's
// signature), each on its own line, or as a JSON text sequence (RFC 7464:
// each preceded by the record separator 0x1E) when seq is set.
func WriteJSON(w io.Writer, exs []Exception, seq bool) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range exs {
		if seq {
			bw.WriteByte(0x1e)
		}
		if err := enc.Encode(&exs[i]); err != nil {
			return err
		}
	}
	return bw.Flush()
}
