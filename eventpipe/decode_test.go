//go:build unix

package eventpipe_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
)

// stopAtIndex is a consumer that decodes the stream, asks for StopEvent at
// the Hello event whose index is at, and counts every event to the end.
func stopAtIndex(at int32, count *int) eventpipe.Consumer {
	return func(r io.Reader, stop func(eventpipe.StopReason)) error {
		rd, err := nettrace.NewReader(bufio.NewReader(r))
		if err != nil {
			return err
		}
		for ev, err := range rd.All() {
			if err != nil {
				return err
			}
			*count++
			o, err := ev.Fields()
			if err != nil {
				return err
			}
			if v, _ := o.Get("index"); v == at {
				stop(eventpipe.StopEvent)
			}
		}
		return nil
	}
}

// The consumer's stop ends the collection, then the rundown arrives as
// after any stop; the output and the consumer both get every event. Run
// through a pipe (a plain writer) and through a spool.
func TestDrainDecodeStopOnEvent(t *testing.T) {
	for _, useSpool := range []bool{false, true} {
		name := map[bool]string{false: "pipe", true: "spool"}[useSpool]
		t.Run(name, func(t *testing.T) {
			_, c := fakeSession(t, runtimeStyle{before: 200, after: 3})
			s := start(t, c)
			var out []byte
			var buf bytes.Buffer
			w := io.Writer(&buf)
			var f *os.File
			if useSpool {
				var err error
				if f, err = os.Create(filepath.Join(t.TempDir(), "s.nettrace")); err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				w = eventpipe.NewSpool(f)
			}
			seen := 0
			// No Duration: only the consumer's stop ends the collection.
			res, err := s.DrainDecode(context.Background(), w, eventpipe.DrainConfig{}, stopAtIndex(10, &seen))
			if err != nil || res.DecodeErr != nil {
				t.Fatalf("%v, decode %v", err, res.DecodeErr)
			}
			if res.Reason != eventpipe.StopEvent || res.Rundown != eventpipe.RundownComplete {
				t.Fatalf("result %+v", res)
			}
			if ws := res.Warnings(); len(ws) != 0 {
				t.Errorf("warnings %v", ws)
			}
			if useSpool {
				if out, err = os.ReadFile(f.Name()); err != nil {
					t.Fatal(err)
				}
			} else {
				out = buf.Bytes()
			}
			if int64(len(out)) != res.Bytes {
				t.Errorf("%d bytes in the output, Bytes %d", len(out), res.Bytes)
			}
			if n := hellos(t, out, false); n != 203 || seen != 203 {
				t.Errorf("output %d events, consumer %d, want 203", n, seen)
			}
		})
	}
}

// With no output the consumer alone gets the stream; one that returns
// early does not hold the session up (the rest is discarded).
func TestDrainDecodeConsumerReturnsEarly(t *testing.T) {
	_, c := fakeSession(t, runtimeStyle{before: 50, after: 3})
	s := start(t, c)
	var buf bytes.Buffer
	res, err := s.DrainDecode(context.Background(), &buf, eventpipe.DrainConfig{Duration: 100 * time.Millisecond},
		func(r io.Reader, stop func(eventpipe.StopReason)) error {
			_, err := r.Read(make([]byte, 16))
			return err
		})
	if err != nil || res.DecodeErr != nil || res.Reason != eventpipe.StopDuration || res.Rundown != eventpipe.RundownComplete {
		t.Fatalf("%+v %v", res, err)
	}
	if n := hellos(t, buf.Bytes(), false); n != 53 {
		t.Errorf("%d events, want 53", n)
	}
}

// A reason on DrainConfig.Stop still ends the collection.
func TestDrainDecodeCallerStop(t *testing.T) {
	_, c := fakeSession(t, runtimeStyle{before: 5, after: 1})
	s := start(t, c)
	stop := make(chan eventpipe.StopReason, 1)
	stop <- eventpipe.StopUser
	seen := 0
	res, err := s.DrainDecode(context.Background(), nil, eventpipe.DrainConfig{Stop: stop}, stopAtIndex(-1, &seen))
	if err != nil || res.Reason != eventpipe.StopUser || res.Rundown != eventpipe.RundownComplete || seen != 6 {
		t.Fatalf("%+v %v, %d events", res, err, seen)
	}
}

// Damage found by the consumer stops an endless stream at once and is a
// warning.
func TestDrainDecodeDamage(t *testing.T) {
	srv, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET8, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{})
		if err != nil {
			return err
		}
		if err := w.AddMetadata(helloMeta); err != nil {
			return err
		}
		if err := events(w, 0, 4); err != nil {
			return nil
		}
		junk := bytes.Repeat([]byte{0xEE}, 1<<14)
		for {
			if _, err := s.Stream.Write(junk); err != nil {
				return nil
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s := start(t, diag.NewClient(srv, nil))
	f, err := os.Create(filepath.Join(t.TempDir(), "d.nettrace"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := 0
	res, err := s.DrainDecode(context.Background(), eventpipe.NewSpool(f), eventpipe.DrainConfig{}, stopAtIndex(-1, &seen))
	if err != nil || res.Reason != eventpipe.StopDamaged || !eventpipe.IsDamage(res.DecodeErr) || seen != 4 {
		t.Fatalf("%+v %v, %d events", res, err, seen)
	}
	ws := res.Warnings()
	if i := slices.IndexFunc(ws, func(w eventpipe.DrainWarning) bool { return w.Kind == eventpipe.WarnDamaged }); i < 0 || !strings.Contains(ws[i].String(), "damaged") {
		t.Errorf("warnings %v", ws)
	}
}

// Warnings follows the ways a Drain ends.
func TestDrainResultWarnings(t *testing.T) {
	kinds := func(ws []eventpipe.DrainWarning) []eventpipe.WarningKind {
		var k []eventpipe.WarningKind
		for _, w := range ws {
			k = append(k, w.Kind)
		}
		return k
	}
	cases := []struct {
		name  string
		style runtimeStyle
		cfg   eventpipe.DrainConfig
		gone  bool // the process goes away before the drain
		want  []eventpipe.WarningKind
		text  string
	}{
		{name: "complete", style: runtimeStyle{before: 2, after: 1}, cfg: eventpipe.DrainConfig{Duration: 50 * time.Millisecond}},
		{name: "unacknowledged", style: runtimeStyle{before: 2, stopNever: true}, cfg: eventpipe.DrainConfig{Duration: 50 * time.Millisecond, StopTimeout: 200 * time.Millisecond},
			want: []eventpipe.WarningKind{eventpipe.WarnStopUnacknowledged}, text: "did not acknowledge the stop"},
		{name: "rundown timeout", style: runtimeStyle{before: 2, rundownHangs: true}, cfg: eventpipe.DrainConfig{Duration: 50 * time.Millisecond, RundownTimeout: 300 * time.Millisecond},
			want: []eventpipe.WarningKind{eventpipe.WarnRundownTimedOut}, text: "no end of the rundown after 300ms"},
		{name: "deadline", style: runtimeStyle{before: 2, rundownHangs: true}, cfg: eventpipe.DrainConfig{Duration: 50 * time.Millisecond, MaxTime: 300 * time.Millisecond},
			want: []eventpipe.WarningKind{eventpipe.WarnDeadline}, text: "time limit"},
		{name: "rundown too large", style: runtimeStyle{before: 2, endless: true, fast: true}, cfg: eventpipe.DrainConfig{Duration: 50 * time.Millisecond, MaxRundownBytes: 4_000_000},
			want: []eventpipe.WarningKind{eventpipe.WarnRundownTooLarge}, text: "kept sending after the stop, past 4 MB"},
		{name: "ended", style: runtimeStyle{before: 2}, gone: true,
			want: []eventpipe.WarningKind{eventpipe.WarnRundownIncomplete, eventpipe.WarnEndedEarly}, text: "no rundown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, c := fakeSession(t, tc.style)
			s := start(t, c)
			if tc.gone {
				srv.Close()
			}
			res, err := s.Drain(context.Background(), io.Discard, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			ws := res.Warnings()
			if got := kinds(ws); !slices.Equal(got, tc.want) {
				t.Fatalf("warnings %v (%+v), want kinds %v", ws, res, tc.want)
			}
			if tc.text != "" && !strings.Contains(ws[0].String(), tc.text) {
				t.Errorf("%q does not say %q", ws[0], tc.text)
			}
		})
	}
}

// A session that asked for no rundown has no rundown warning when it ends
// without one.
func TestDrainResultWarningsNoRundown(t *testing.T) {
	srv, c := fakeSession(t, runtimeStyle{before: 2})
	s, err := eventpipe.Start(context.Background(), c, eventpipe.Config{Providers: []eventpipe.Provider{{Name: "Fake-Source"}}, NoRundown: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	res, err := s.Drain(context.Background(), io.Discard, eventpipe.DrainConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if ws := res.Warnings(); len(ws) != 1 || ws[0].Kind != eventpipe.WarnEndedEarly {
		t.Errorf("warnings %v", ws)
	}
}

func TestWarningStrings(t *testing.T) {
	for k := eventpipe.WarnDeadline; k <= eventpipe.WarnDamaged; k++ {
		s := eventpipe.DrainWarning{Kind: k, Err: errors.New("boom")}.String()
		if s == "" || strings.HasPrefix(s, "DrainWarning(") {
			t.Errorf("kind %d: %q", k, s)
		}
	}
	if s := (eventpipe.DrainWarning{Kind: 200}).String(); s != "DrainWarning(200)" {
		t.Errorf("unknown kind: %q", s)
	}
}
