//go:build unix

package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
)

var fakeHelloMeta = &nettrace.Metadata{
	ID: 1, ProviderName: "Fake-Source", EventID: 1, EventName: "Hello", Version: 0, Level: 4,
	Fields: []nettrace.Field{{Name: "index", Type: nettrace.TypeInt32}, {Name: "message", Type: nettrace.TypeString}},
}

// writeFakeEvents writes n Hello events with a Writer and flushes them.
func writeFakeEvents(t *testing.T, w *nettrace.Writer, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		p, err := nettrace.AppendPayload(nil, fakeHelloMeta.Fields, nettrace.Object{{Name: "index", Value: int32(i)}, {Name: "message", Value: fmt.Sprintf("hello %d", i)}})
		if err != nil {
			t.Error(err)
			return
		}
		ev := nettrace.Event{Metadata: fakeHelloMeta, ThreadID: 10, CaptureThreadID: 10, SequenceNumber: uint32(i + 1), Timestamp: int64(1000 + i), Payload: p}
		if err := w.WriteEvent(&ev); err != nil {
			t.Error(err)
			return
		}
	}
	if err := w.Flush(); err != nil {
		t.Error(err)
	}
}

// countHello decodes a trace file and counts the Hello events.
func countHello(t *testing.T, path string) int {
	t.Helper()
	evs, stats := readTrace(t, path)
	if !stats.Complete {
		t.Fatalf("%s is not terminated: %+v", path, stats)
	}
	n := 0
	for _, e := range evs {
		if e.name == "Hello" {
			n++
		}
	}
	return n
}

func collectingServer(t *testing.T, rt ipctest.Runtime, fault func(set, id uint8) ipctest.Fault, body func(t *testing.T, s *ipctest.TracingSession)) (*ipctest.Server, string) {
	t.Helper()
	return fakeRuntime(t, ipctest.Config{Runtime: rt, Fault: fault, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		body(t, s)
		return nil
	}})
}

// wellBehaved streams 5 events, waits for the stop, then writes 3 more
// (standing in for the rundown) and ends the stream.
func wellBehaved(t *testing.T, s *ipctest.TracingSession) {
	w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{ProcessID: 4242})
	if err != nil {
		t.Error(err)
		return
	}
	if err := w.AddMetadata(fakeHelloMeta); err != nil {
		t.Error(err)
		return
	}
	writeFakeEvents(t, w, 0, 5)
	<-s.Stopped
	writeFakeEvents(t, w, 5, 3)
	if err := w.Close(); err != nil {
		t.Error(err)
	}
}

func TestFakeCollectCommandSelection(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rt       ipctest.Runtime
		args     []string
		versions []int
		warn     string
	}{
		{"3.1 default", ipctest.NET3_1, nil, []int{2}, ""},
		{".NET 8 no stackwalk", ipctest.NET8, []string{"--stackwalk=false"}, []int{3}, ""},
		{".NET 9 custom rundown", ipctest.NET9, []string{"--rundown", "0x1"}, []int{4}, ""},
		{".NET 8 custom rundown falls back", ipctest.NET8, []string{"--rundown", "0x1", "--stackwalk=false"}, []int{4, 3}, "custom rundown keyword"},
		{"3.1 gc-collect drops rundown", ipctest.NET3_1, []string{"--profile", "gc-collect"}, []int{4, 2}, "without rundown"},
		{"3.1 no stackwalk collects stacks", ipctest.NET3_1, []string{"--stackwalk=false"}, []int{3, 2}, "stacks will be collected"},
		{".NET 10 event filter", ipctest.NET10, []string{"--event-ids", "Fake-Source:1,2"}, []int{5}, ""},
		{".NET 11 block buffering", ipctest.NET11, []string{"--buffering-mode", "block"}, []int{6}, ""},
		{".NET 10 block falls back to drop", ipctest.NET10, []string{"--buffering-mode", "block", "--rundown", "0x8"}, []int{6, 4}, "falling back to Drop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, port := collectingServer(t, tc.rt, nil, wellBehaved)
			out := filepath.Join(t.TempDir(), "x.nettrace")
			args := append([]string{"trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "--duration", "200ms", "-o", out}, tc.args...)
			code, _, errOut := run(t, args...)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, errOut)
			}
			var versions []int
			for _, r := range srv.Requests() {
				if req, ok := r.Request.(*ipc.CollectTracingRequest); ok {
					versions = append(versions, req.Version)
				}
			}
			if fmt.Sprint(versions) != fmt.Sprint(tc.versions) {
				t.Errorf("CollectTracing versions sent = %v, want %v", versions, tc.versions)
			}
			if tc.warn != "" && !strings.Contains(errOut, tc.warn) {
				t.Errorf("no warning %q:\n%s", tc.warn, errOut)
			}
			if n := countHello(t, out); n != 8 {
				t.Errorf("%d events in the file, want 8 (5 + 3 after the stop)", n)
			}
		})
	}
}

func TestFakeCollectEventFilterNeedsNET10(t *testing.T) {
	srv, port := collectingServer(t, ipctest.NET9, nil, wellBehaved)
	code, _, errOut := run(t, "trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "--event-ids", "Fake-Source:1", "--duration", "100ms", "-o", filepath.Join(t.TempDir(), "x"))
	if code == 0 || !strings.Contains(errOut, "event id filters need .NET 10 or later") {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	// The filter reached the wire as an allow list.
	reqs := srv.Requests()
	req, ok := reqs[len(reqs)-1].Request.(*ipc.CollectTracingRequest)
	if !ok || req.Version != 5 || req.Providers[0].Filter == nil || !req.Providers[0].Filter.Enable || fmt.Sprint(req.Providers[0].Filter.EventIDs) != "[1]" {
		t.Fatalf("request = %+v", reqs[len(reqs)-1].Request)
	}
	for _, bad := range [][]string{{"--event-ids", "Other:1"}, {"--event-ids", "Fake-Source:x"}, {"--event-ids", "nocolon"}, {"--buffering-mode", "maybe"}} {
		code, _, errOut := run(t, append([]string{"trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source"}, bad...)...)
		if code != exitUsage {
			t.Errorf("%v: exit %d %s", bad, code, errOut)
		}
	}
}

// stopNeverAnsweredServer starts a fake .NET 8 runtime whose sessions
// send n Fake-Source events and then nothing, and which never answers
// StopTracing (the session ends only when the server closes). It returns
// the diagnostic port.
func stopNeverAnsweredServer(t *testing.T, n int) string {
	_, port := collectingServer(t, ipctest.NET8,
		func(set, id uint8) ipctest.Fault {
			if set == ipc.SetEventPipe && id == ipc.CmdStopTracing {
				return ipctest.FaultNeverAnswer
			}
			return ipctest.FaultNone
		},
		func(t *testing.T, s *ipctest.TracingSession) {
			w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{})
			if err != nil {
				t.Error(err)
				return
			}
			_ = w.AddMetadata(fakeHelloMeta)
			writeFakeEvents(t, w, 0, n)
			<-s.Stopped
		})
	return port
}

func TestFakeCollectStopNeverAnswered(t *testing.T) {
	port := stopNeverAnsweredServer(t, 4)
	out := filepath.Join(t.TempDir(), "x.nettrace")
	code, _, errOut := run(t, "trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "--duration", "200ms", "--stop-timeout", "500ms", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "did not acknowledge the stop") {
		t.Errorf("the user is not told:\n%s", errOut)
	}
	if n := countHello(t, out); n != 4 {
		t.Fatalf("%d events kept, want 4", n)
	}
}

func TestFakeCollectRundownNeverEnds(t *testing.T) {
	// The rundown never ends: the stream stays open until the command has
	// given up on it (it used to be a 5 s sleep, waited for at cleanup).
	gaveUp := make(chan struct{})
	_, port := collectingServer(t, ipctest.NET8, nil, func(t *testing.T, s *ipctest.TracingSession) {
		w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{})
		if err != nil {
			t.Error(err)
			return
		}
		_ = w.AddMetadata(fakeHelloMeta)
		writeFakeEvents(t, w, 0, 6)
		<-s.Stopped
		<-gaveUp
	})
	out := filepath.Join(t.TempDir(), "x.nettrace")
	code, _, errOut := run(t, "trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "--duration", "200ms", "--rundown-timeout", "500ms", "-o", out)
	close(gaveUp)
	if code != 0 || !strings.Contains(errOut, "no end of the rundown") || !strings.Contains(errOut, "rundown timed out") {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if n := countHello(t, out); n != 6 {
		t.Fatalf("%d events kept, want 6", n)
	}
}

func TestFakeCollectStreamCutMidBlock(t *testing.T) {
	_, port := collectingServer(t, ipctest.NET8, nil, func(t *testing.T, s *ipctest.TracingSession) {
		var buf bytes.Buffer
		w, err := nettrace.NewWriter(&buf, nettrace.WriterConfig{})
		if err != nil {
			t.Error(err)
			return
		}
		_ = w.AddMetadata(fakeHelloMeta)
		writeFakeEvents(t, w, 0, 10)
		whole := buf.Len()
		writeFakeEvents(t, w, 10, 10)
		// Send the complete blocks and half of the next one, then die.
		cut := whole + (buf.Len()-whole)/2
		if _, err := s.Stream.Write(buf.Bytes()[:cut]); err != nil {
			t.Error(err)
		}
	})
	out := filepath.Join(t.TempDir(), "x.nettrace")
	code, _, errOut := run(t, "trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "cut to its last complete block") || !strings.Contains(errOut, "target ended the session") {
		t.Errorf("the user is not told:\n%s", errOut)
	}
	if n := countHello(t, out); n != 10 {
		t.Fatalf("%d events kept, want the 10 of the complete block", n)
	}
}

// waitStderr waits until the running command printed want.
func (r *asyncRun) waitStderr(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(r.stderr.String(), want) {
		select {
		case <-r.done:
			t.Fatalf("command ended before printing %q (exit %d):\n%s", want, r.code, r.stderr.String())
		case <-deadline:
			t.Fatalf("no %q after 30s:\n%s", want, r.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestFakeCollectSIGTERMThenSecondInterrupt(t *testing.T) {
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{})
		if err != nil {
			return err
		}
		_ = w.AddMetadata(fakeHelloMeta)
		writeFakeEvents(t, w, 0, 9)
		<-s.Stopped
		select { // a rundown far longer than the test waits
		case <-ctx.Done():
		case <-time.After(time.Minute):
		}
		return nil
	}})
	out := filepath.Join(t.TempDir(), "x.nettrace")
	r := startCLI("trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "-o", out)
	r.waitSession(t)
	// SIGTERM stops the trace like Ctrl-C...
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r.waitStderr(t, "Waiting for the rundown")
	// ...and a second interrupt abandons the rundown, keeping a valid file.
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r.wait(t, 15*time.Second)
	if r.code != 0 || !strings.Contains(r.stderr.String(), "Abandoning the rundown") || !strings.Contains(r.stderr.String(), "rundown abandoned") {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr.String())
	}
	if n := countHello(t, out); n != 9 {
		t.Fatalf("%d events kept, want 9", n)
	}
}
