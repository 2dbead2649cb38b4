//go:build unix

package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
)

// validPrefix is a trace header, the Hello metadata and n events, as bytes.
func validPrefix(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := nettrace.NewWriter(&buf, nettrace.WriterConfig{ProcessID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddMetadata(fakeHelloMeta); err != nil {
		t.Fatal(err)
	}
	writeFakeEvents(t, w, 0, n)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// garbageBlock appends to b (a stream of whole blocks) an EventBlock whose
// framing is right and whose size bytes of content are fill, then the
// end-of-stream tag: a block the format's structure accepts and an event
// decoder refuses.
func garbageBlock(b []byte, size int, fill byte) []byte {
	const beginObject, nullRef, endObject = 5, 1, 6
	b = append(b, beginObject, beginObject, nullRef)
	b = binary.LittleEndian.AppendUint32(b, 2)
	b = binary.LittleEndian.AppendUint32(b, 2)
	b = binary.LittleEndian.AppendUint32(b, uint32(len("EventBlock")))
	b = append(b, "EventBlock"...)
	b = append(b, endObject)
	b = binary.LittleEndian.AppendUint32(b, uint32(size))
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	b = append(b, bytes.Repeat([]byte{fill}, size)...)
	b = append(b, endObject)
	return append(b, nullRef)
}

// A runtime that sends a block of garbage (its framing right, its last
// byte the end tag) and ends the stream: trace collect used to exit 0 with
// a file 'trace stats' rejects. Now the damage found while streaming stops
// the collection, the file keeps the valid blocks before it, the message
// names the byte, and the exit status is 5.
func TestFakeCollectGarbageBlock(t *testing.T) {
	prefix := validPrefix(t, 5)
	stream := garbageBlock(append([]byte(nil), prefix...), 4<<20, 0xFF)
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		_, err := s.Stream.Write(stream)
		return err
	}})
	out := filepath.Join(t.TempDir(), "x.nettrace")
	code, _, errOut := run(t, "trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "--duration", "30s", "-o", out)
	checkClass(t, code, exitDamaged, errOut)
	if !strings.Contains(errOut, "at byte ") || !strings.Contains(errOut, "keeps the 5 events before it") {
		t.Errorf("the message does not name the byte and what was kept:\n%s", errOut)
	}
	if n := countHello(t, out); n != 5 {
		t.Errorf("%d events kept, want the 5 before the damage", n)
	}
	// The file is the valid prefix, terminated: 'trace stats' accepts it.
	if code, _, errOut := run(t, "trace", "stats", out); code != 0 {
		t.Errorf("trace stats on the kept file: exit %d\n%s", code, errOut)
	}
	if st, _ := os.Stat(out); st == nil || st.Size() > int64(len(prefix))+16 {
		t.Errorf("the file holds more than the valid prefix (%d bytes): %v", len(prefix), st)
	}
}

// Garbage that keeps coming stops the session at once (not at --duration).
func TestFakeCollectGarbageStopsAtOnce(t *testing.T) {
	prefix := validPrefix(t, 3)
	srv, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		b := garbageBlock(append([]byte(nil), prefix...), 1<<20, 0xFF)
		b = b[:len(b)-1] // no end of stream: more garbage follows
		if _, err := s.Stream.Write(b); err != nil {
			return nil
		}
		junk := bytes.Repeat([]byte{0xEE}, 1<<16)
		for {
			if _, err := s.Stream.Write(junk); err != nil {
				return nil
			}
		}
	}})
	out := filepath.Join(t.TempDir(), "x.nettrace")
	begin := time.Now()
	code, _, errOut := run(t, "trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "--duration", "1h", "-o", out)
	checkClass(t, code, exitDamaged, errOut)
	if d := time.Since(begin); d > 30*time.Second {
		t.Errorf("took %v", d)
	}
	if !stopTracingSent(srv) {
		t.Error("the session was not stopped on the runtime")
	}
	if n := countHello(t, out); n != 3 {
		t.Errorf("%d events kept, want 3", n)
	}
}

// A session that ends without a single event: said, and no file kept.
// With the rundown asked for, a runtime that sends nothing at all failed
// the request (exit 4); a target that ended the session first went away
// (exit 7).
func TestFakeCollectNoEvents(t *testing.T) {
	header := validPrefix(t, 0)
	for _, tc := range []struct {
		name  string
		body  func(s *ipctest.TracingSession)
		extra []string
		want  int
		say   string
	}{
		{"runtime sends nothing", func(s *ipctest.TracingSession) {
			_, _ = s.Stream.Write(header)
			<-s.Stopped
			_, _ = s.Stream.Write(nettrace.EndOfStream())
		}, nil, exitRuntime, "not even the rundown"},
		{"target exits", func(s *ipctest.TracingSession) {
			_, _ = s.Stream.Write(header)
		}, nil, exitTargetGone, "before sending any event"},
		{"nothing asked for", func(s *ipctest.TracingSession) {
			_, _ = s.Stream.Write(header)
			<-s.Stopped
			_, _ = s.Stream.Write(nettrace.EndOfStream())
		}, []string{"--rundown", "false"}, exitOK, "the trace holds no event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
				tc.body(s)
				return nil
			}})
			out := filepath.Join(t.TempDir(), "x.nettrace")
			args := append([]string{"trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "--duration", "200ms", "-o", out}, tc.extra...)
			code, _, errOut := run(t, args...)
			if tc.want == exitOK {
				if code != 0 {
					t.Fatalf("exit %d:\n%s", code, errOut)
				}
			} else {
				checkClass(t, code, tc.want, errOut)
			}
			if !strings.Contains(errOut, tc.say) {
				t.Errorf("stderr does not say %q:\n%s", tc.say, errOut)
			}
			if _, err := os.Stat(out); (err == nil) != (tc.want == exitOK) {
				t.Errorf("file kept: %v", err)
			}
		})
	}
}

// A runtime that keeps streaming after the stop is cut at
// --rundown-max-size (default 256MB), not at --rundown-timeout (5 min):
// the warning says which bound ended it, the file is valid.
func TestFakeCollectRundownSizeCap(t *testing.T) {
	_, port := endlessRuntime(t, false, false)
	out := filepath.Join(t.TempDir(), "x.nettrace")
	begin := time.Now()
	code, _, errOut := run(t, "trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "--duration", "200ms",
		"--rundown-max-size", "3MB", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if d := time.Since(begin); d > time.Minute {
		t.Errorf("took %v", d)
	}
	if !strings.Contains(errOut, "--rundown-max-size") || !strings.Contains(errOut, "rundown cut at its size cap") {
		t.Errorf("the warning does not say which bound ended the rundown:\n%s", errOut)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := countHello(t, out); n == 0 {
		t.Error("no events kept")
	}
	t.Logf("file %d bytes", st.Size())
	if code, _, errOut := run(t, "trace", "collect", "--diagnostic-port", port, "--rundown-max-size", "0", "-o", out+"2"); code != exitUsage {
		t.Errorf("--rundown-max-size 0: exit %d\n%s", code, errOut)
	}
}

// faultAll applies f to every command.
func faultAll(f ipctest.Fault) func(uint8, uint8) ipctest.Fault {
	return func(uint8, uint8) ipctest.Fault { return f }
}

// headerThen is a session that writes a nettrace header, then rest.
func headerThen(rest func(ctx context.Context, s *ipctest.TracingSession) error) func(ctx context.Context, s *ipctest.TracingSession) error {
	return func(ctx context.Context, s *ipctest.TracingSession) error {
		w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{})
		if err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		return rest(ctx, s)
	}
}

// garbageSession follows the header with bytes that are not nettrace
// blocks until the client closes the connection.
var garbageSession = headerThen(func(ctx context.Context, s *ipctest.TracingSession) error {
	junk := bytes.Repeat([]byte{0x42}, 1<<16)
	for {
		if _, err := s.Stream.Write(junk); err != nil {
			return nil
		}
	}
})

// exitingSession ends the stream after the header, before any stop: a
// process that exits.
var exitingSession = headerThen(func(context.Context, *ipctest.TracingSession) error { return nil })
