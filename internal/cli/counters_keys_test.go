package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/clrdiag/clrdiag/internal/counterview"
)

func TestCountersKeysPauseResumeQuit(t *testing.T) {
	var out bytes.Buffer
	v := &counterview.View{Terminal: true, Title: keysTitle}
	m := newMonitorView(v, &out)
	var seen []string
	// One byte per Read, as a person types; x is ignored, the second p is
	// a no-op, nothing after q is read.
	err := readKeys(context.Background(), iotest.OneByteReader(strings.NewReader("xpPrq p")), func(k monitorKey) bool {
		if !m.key(k) {
			seen = append(seen, "quit")
			return false
		}
		m.render() // a refresh tick
		seen = append(seen, fmt.Sprintf("%s/%d frames", v.Status, strings.Count(out.String(), "\x1b[H")))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "Paused/1 frames, Paused/1 frames, Running/3 frames, quit"
	if got := strings.Join(seen, ", "); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	m.key(keyPause)
	m.stop()
	if v.Status != "Stopped" || !strings.HasSuffix(out.String(), "\x1b[J") || strings.Count(out.String(), "\x1b[H") != 5 {
		t.Fatalf("stop while paused: status %q, output %q", v.Status, out.String())
	}
	if !strings.Contains(out.String(), keysTitle) {
		t.Fatalf("title missing: %q", out.String())
	}
}

func TestCountersKeysWarningKeepsState(t *testing.T) {
	var out bytes.Buffer
	v := &counterview.View{Terminal: true}
	m := newMonitorView(v, &out)
	m.key(keyPause)
	m.warning = "histogram limit: reached"
	m.key(keyResume)
	if v.Status != "Running. Warning: histogram limit: reached" {
		t.Fatalf("status %q", v.Status)
	}
}

func TestCountersReadKeysEnds(t *testing.T) {
	never := func(monitorKey) bool { t.Error("no key expected"); return true }
	if err := readKeys(context.Background(), strings.NewReader("abc"), never); err != nil {
		t.Errorf("EOF: %v", err)
	}
	boom := errors.New("boom")
	if err := readKeys(context.Background(), iotest.ErrReader(boom), never); !errors.Is(err, boom) {
		t.Errorf("read error: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := readKeys(ctx, strings.NewReader("q"), never); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	// Raw mode turns Ctrl-C into a byte: it quits like q.
	quits := 0
	if err := readKeys(context.Background(), strings.NewReader("\x03q"), func(k monitorKey) bool {
		if k == keyQuit {
			quits++
		}
		return true
	}); err != nil || quits != 2 {
		t.Errorf("Ctrl-C and q: %d quits, %v", quits, err)
	}
}

func TestCountersCRLFWriter(t *testing.T) {
	var b bytes.Buffer
	n, err := crlfWriter{&b}.Write([]byte("a\nb\n"))
	if err != nil || n != 4 || b.String() != "a\r\nb\r\n" {
		t.Fatalf("%d %v %q", n, err, b.String())
	}
	if _, err := (crlfWriter{errWriter{}}).Write([]byte("x")); err == nil {
		t.Fatal("write error lost")
	}
}

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }
