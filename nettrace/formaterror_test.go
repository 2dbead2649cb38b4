package nettrace

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"testing"
)

// The cause of a FormatError found inside a block (a metadata record or a
// V6 row that does not parse) is wrapped, not flattened into Msg: callers
// can inspect it with errors.Is/As, and the text is unchanged.
func TestFormatErrorWrapsCause(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	md := &Metadata{ID: 1, ProviderName: "P", EventID: 1, EventName: "E", Fields: []Field{{Name: "a", Type: TypeInt32}, {Name: "b", Type: TypeString}}}
	if err := w.AddMetadata(md); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	wrapped := 0
	for i := range good {
		for _, v := range []byte{0xFF, 0x7F, 0} {
			b := bytes.Clone(good)
			b[i] = v
			r, err := NewReader(bytes.NewReader(b))
			for err == nil {
				var ev Event
				err = r.ReadEvent(&ev)
			}
			var fe *FormatError
			if err == io.EOF || !errors.As(err, &fe) || fe.Err == nil || fe.Truncated() {
				continue
			}
			if fe.Msg != "metadata record" && fe.Msg != "trace block" {
				continue
			}
			wrapped++
			if !errors.Is(err, fe.Err) || fe.Error() != "nettrace: at byte "+strconv.FormatInt(fe.Offset, 10)+": "+fe.Msg+": "+fe.Err.Error() {
				t.Fatalf("byte %d = %#x: %q does not wrap %v", i, v, fe.Error(), fe.Err)
			}
		}
	}
	if wrapped == 0 {
		t.Fatal("no mutation produced a block-content error; the test checks nothing")
	}
}
