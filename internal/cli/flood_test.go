//go:build linux

package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/units"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/transport"
)

// TestRealFloodLosesNoMoreThanBareReader makes the real runtime write events
// as fast as it can, once read by trace collect (file + live decoding) and
// once by the barest reader that can count them (a decoder fed straight
// from the socket), and compares
// how many events the runtime dropped. Opt in with CLRDIAG_FLOOD=seconds;
// it takes a while and loads the machine.
func TestRealFloodLosesNoMoreThanBareReader(t *testing.T) {
	secs, _ := strconv.ParseFloat(os.Getenv("CLRDIAG_FLOOD"), 64)
	if secs <= 0 {
		t.Skip("set CLRDIAG_FLOOD=5 to run the event flood comparison")
	}
	rt := dotnettest.Find(t)
	dll := rt.Build(t, "Events")
	provider := "Clrdiag-Test:0x4:4"

	// trace collect.
	tg := rt.Start(t, dll, nil, nil)
	out := filepath.Join(t.TempDir(), "flood.nettrace")
	r := startCLI("trace", "collect", "-p", fmt.Sprint(tg.PID), "--providers", provider, "--rundown", "false", "-o", out)
	r.waitSession(t)
	waitEnabled(t, tg)
	tg.Send(t, fmt.Sprintf("flood %g", secs))
	line := tg.Expect(t, "FLOODED", time.Duration(secs*float64(time.Second))+60*time.Second)
	written, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
	tg.Send(t, "exit 0")
	r.wait(t, 120*time.Second)
	evs, stats := readTrace(t, out)
	got := int64(0)
	for _, e := range evs {
		if e.name == "Flood" {
			got++
		}
	}
	st, _ := os.Stat(out)
	t.Logf("trace collect: target wrote %d events, file holds %d (%.1f%%), dropped by the runtime %d, file %s",
		written, got, 100*float64(got)/float64(written), stats.DroppedEvents, units.FormatBytes(st.Size()))

	// The bare reader.
	tg2 := rt.Start(t, dll, nil, nil)
	c := diag.NewClient(transport.Endpoint{Network: "unix", Address: tg2.Socket, PID: tg2.PID}, nil)
	ps, _ := eventpipe.ParseProviders(provider)
	sess, err := eventpipe.Start(context.Background(), c, eventpipe.Config{Providers: ps, NoRundown: true})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	done := make(chan int64)
	go func() {
		// The barest reader that can still count events: a decoder
		// fed straight from the socket, with no file in between.
		rd, err := nettrace.NewReader(pr)
		if err != nil {
			done <- -1
			return
		}
		var ev nettrace.Event
		n := int64(0)
		for rd.ReadEvent(&ev) == nil {
			n++
		}
		io.Copy(io.Discard, pr)
		done <- n
	}()
	go func() {
		io.Copy(pw, sess)
		pw.Close()
	}()
	waitEnabled(t, tg2)
	tg2.Send(t, fmt.Sprintf("flood %g", secs))
	line = tg2.Expect(t, "FLOODED", time.Duration(secs*float64(time.Second))+60*time.Second)
	written2, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
	tg2.Send(t, "exit 0")
	got2 := <-done
	t.Logf("bare decoder on the socket: target wrote %d events, received %d (%.1f%%)", written2, got2, 100*float64(got2)/float64(written2))
	ratio, ratio2 := float64(got)/float64(written), float64(got2)/float64(written2)
	if ratio+0.05 < ratio2 {
		t.Errorf("trace collect kept %.1f%% of the events, the bare reader %.1f%%", 100*ratio, 100*ratio2)
	}
}
