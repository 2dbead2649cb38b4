package termsafe

import (
	"bytes"
	"io"
)

// LineWriter writes text from a trace or a target to a terminal line by
// line, with what the terminal would obey escaped: Lines, or with JSON set
// JSON, which keeps the document valid. Flush writes the last line when it
// has no newline.
type LineWriter struct {
	W    io.Writer
	JSON bool
	buf  []byte
}

// Write escapes and writes every complete line of what it has been given;
// it keeps the rest for the next Write or Flush.
func (l *LineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	start := 0
	for {
		i := bytes.IndexByte(l.buf[start:], '\n')
		if i < 0 {
			break
		}
		if err := l.emit(l.buf[start : start+i+1]); err != nil {
			return 0, err
		}
		start += i + 1
	}
	l.buf = append(l.buf[:0], l.buf[start:]...)
	return len(p), nil
}

// Flush writes the last line, which has no newline.
func (l *LineWriter) Flush() error {
	if len(l.buf) == 0 {
		return nil
	}
	err := l.emit(l.buf)
	l.buf = l.buf[:0]
	return err
}

func (l *LineWriter) emit(line []byte) error {
	var err error
	if l.JSON {
		_, err = l.W.Write(JSON(line))
	} else {
		_, err = io.WriteString(l.W, Lines(string(line)))
	}
	return err
}
