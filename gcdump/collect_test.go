//go:build unix

package gcdump_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/gcdump/gcdumptest"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
)

func TestCollectFake(t *testing.T) {
	for _, rt := range []ipctest.Runtime{ipctest.NET3_1, ipctest.NET11} {
		t.Run(rt.String(), func(t *testing.T) {
			srv, err := ipctest.NewServer(ipctest.Config{Runtime: rt, Tracing: gcdumptest.Session(gcdumptest.Leaky(20), gcdumptest.Options{})})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			var notes []gcdump.Note
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			g, err := gcdump.Collect(ctx, diag.NewClient(srv, nil), gcdump.CollectConfig{
				ProcessName: "app", ProcessID: 42, Notify: func(n gcdump.Note) { notes = append(notes, n) }})
			if err != nil {
				t.Fatal(err)
			}
			r, err := gcdump.BuildReport(g, nil, gcdump.ReportConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Objects != 44 || g.Info.ProcessName != "app" || g.Info.ProcessID != 42 {
				t.Fatalf("%d objects, info %+v", r.Objects, g.Info)
			}
			for _, s := range r.Types {
				if s.Name == "App.Item" && s.Module != "/app/App.dll" {
					t.Errorf("module names from the rundown missing: %+v", s)
				}
			}
			// A flush session (SampleProfiler, no rundown), then the heap
			// session with the GCHeapSnapshot keywords.
			var sessions []*ipc.CollectTracingRequest
			for _, rq := range srv.Requests() {
				if ct, ok := rq.Request.(*ipc.CollectTracingRequest); ok {
					sessions = append(sessions, ct)
				}
			}
			last := sessions[len(sessions)-1]
			if sessions[0].Providers[0].Name != "Microsoft-DotNETCore-SampleProfiler" || sessions[0].RequestRundown {
				t.Errorf("flush session %+v", sessions[0])
			}
			p := last.Providers[0]
			if p.Name != "Microsoft-Windows-DotNETRuntime" || p.Keywords != 0x1980001 || p.Level != 5 || last.CircularBufferMB != 1024 || !last.RequestRundown && last.RundownKeyword == 0 {
				t.Errorf("heap session %+v %+v", last, p)
			}
			wantMode := ipc.BufferBlock
			if rt == ipctest.NET3_1 {
				wantMode = 0 // fell back to Drop
				var warned bool
				for _, n := range notes {
					warned = warned || (n.Kind == gcdump.NoteFallback && strings.Contains(n.Text, "Block"))
				}
				if !warned {
					t.Errorf("no fallback warning in %v", notes)
				}
			}
			if last.BufferMode != wantMode {
				t.Errorf("buffer mode %v", last.BufferMode)
			}
			var walked bool
			for _, n := range notes {
				walked = walked || (n.Kind == gcdump.NoteWalked && n.Objects == 44 && n.References == 42)
			}
			if !walked {
				t.Errorf("notes %v", notes)
			}
		})
	}
}

func TestCollectTimeout(t *testing.T) {
	srv, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET3_1,
		Tracing: gcdumptest.Session(gcdumptest.Leaky(3), gcdumptest.Options{NoGCEnd: true})})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, err = gcdump.Collect(context.Background(), diag.NewClient(srv, nil), gcdump.CollectConfig{Timeout: 300 * time.Millisecond})
	if !errors.Is(err, gcdump.ErrTimeout) || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("%v", err)
	}
}

// The collection's end comes before the heap walk's events (server GC
// writes them from different threads): the snapshot is still whole.
func TestCollectEndFirst(t *testing.T) {
	srv, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET3_1,
		Tracing: gcdumptest.Session(gcdumptest.Leaky(50), gcdumptest.Options{EndFirst: true, NodesPerEvent: 7, EdgesPerEvent: 5})})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	g, err := gcdump.Collect(context.Background(), diag.NewClient(srv, nil), gcdump.CollectConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := gcdump.BuildReport(g, nil, gcdump.ReportConfig{})
	if err != nil || r.Objects != 104 {
		t.Fatalf("%v %+v", err, r)
	}
}
