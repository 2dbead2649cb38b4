package eventpipe

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/ipc"
)

// oldRuntime answers UNKNOWN_COMMAND to CollectTracing versions above max,
// as a real runtime of that age does, and records what it was sent.
type oldRuntime struct {
	max  int
	sent []*ipc.CollectTracingRequest
}

func (r *oldRuntime) StartTracing(_ context.Context, req *ipc.CollectTracingRequest) (uint64, net.Conn, error) {
	// Encode and decode the request as the runtime would see it.
	b, err := req.MarshalBinary()
	if err != nil {
		return 0, nil, err
	}
	got := &ipc.CollectTracingRequest{Version: req.Version}
	if err := got.UnmarshalBinary(b); err != nil {
		return 0, nil, err
	}
	r.sent = append(r.sent, got)
	if req.Version > r.max {
		_, id := req.Command()
		return 0, nil, &ipc.ServerError{CommandSet: ipc.SetEventPipe, CommandID: id, HRESULT: 0x80131385}
	}
	a, b2 := net.Pipe()
	b2.Close()
	return 7, a, nil
}

func (r *oldRuntime) StopTracing(context.Context, uint64) error { return nil }

func TestCommandSelection(t *testing.T) {
	p := []Provider{{Name: "P", Level: LevelVerbose}}
	tests := []struct {
		cfg  Config
		want int
	}{
		{Config{Providers: p}, 2},
		{Config{Providers: p, NoRundown: true}, 2},
		{Config{Providers: p, RundownKeyword: DefaultRundownKeyword}, 2},
		{Config{Providers: p, NoStackwalk: true}, 3},
		{Config{Providers: p, RundownKeyword: 0x1}, 4},
		{Config{Providers: p, RundownKeyword: 0x1, NoRundown: true}, 2},
		{Config{Providers: []Provider{{Name: "P", EventIDs: []uint32{1, 2}}}}, 5},
		{Config{Providers: p, Buffering: Block, RundownKeyword: 0x1}, 6},
	}
	for i, tt := range tests {
		if got := tt.cfg.Version(); got != tt.want {
			t.Errorf("case %d: Version() = %d, want %d", i, got, tt.want)
		}
	}
}

func TestStartFallsBackOnOldRuntime(t *testing.T) {
	ctx := context.Background()
	p := []Provider{{Name: "P", Keywords: 1, Level: LevelVerbose, Args: []Arg{{"A", "1"}}}}

	// Block + custom rundown + no stackwalk on a 3.1 runtime (CollectTracing2 at most).
	rt := &oldRuntime{max: 2}
	s, err := Start(ctx, rt, Config{Providers: p, Buffering: Block, RundownKeyword: 0x1, NoStackwalk: true})
	if err != nil {
		t.Fatal(err)
	}
	var versions []int
	for _, r := range rt.sent {
		versions = append(versions, r.Version)
	}
	if len(versions) != 4 || versions[0] != 6 || versions[1] != 4 || versions[2] != 3 || versions[3] != 2 {
		t.Fatalf("versions tried = %v, want [6 4 3 2]", versions)
	}
	if s.Version != 2 || len(s.Warnings) != 3 {
		t.Fatalf("session = %+v", s)
	}
	for i, want := range []string{"Block buffering", "custom rundown keyword", "stacks will be collected"} {
		if !strings.Contains(s.Warnings[i], want) {
			t.Errorf("warning %d = %q, want it to mention %q", i, s.Warnings[i], want)
		}
	}
	last := rt.sent[3]
	if !last.RequestRundown || s.Config.NoStackwalk || last.Providers[0].Args != "A=1" || last.CircularBufferMB != 256 {
		t.Fatalf("final request = %+v", last)
	}

	// gc-collect style: custom keyword with DropRundownOnFallback ends with no rundown.
	rt = &oldRuntime{max: 3}
	s, err = Start(ctx, rt, Config{Providers: p, RundownKeyword: 0x1, DropRundownOnFallback: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != 2 || rt.sent[1].RequestRundown || !strings.Contains(s.Warnings[0], "without rundown") {
		t.Fatalf("drop-rundown fallback: version %d, sent %+v, warnings %v", s.Version, rt.sent[1], s.Warnings)
	}

	// A .NET 9 runtime takes the custom keyword as is.
	rt = &oldRuntime{max: 5}
	s, err = Start(ctx, rt, Config{Providers: p, RundownKeyword: 0x1})
	if err != nil || s.Version != 4 || rt.sent[0].RundownKeyword != 1 || len(s.Warnings) != 0 {
		t.Fatalf("net9: %v %+v", err, s)
	}

	// Event filters cannot be given up: a clear error.
	rt = &oldRuntime{max: 4}
	_, err = Start(ctx, rt, Config{Providers: []Provider{{Name: "P", EventIDs: []uint32{3}}}})
	if err == nil || !strings.Contains(err.Error(), ".NET 10") || !errors.Is(err, ipc.ErrUnknownCommand) {
		t.Fatalf("filters on old runtime: %v", err)
	}

	// CollectTracing2 refused: nothing left to give up.
	rt = &oldRuntime{max: 1}
	if _, err = Start(ctx, rt, Config{Providers: p}); !errors.Is(err, ipc.ErrUnknownCommand) {
		t.Fatalf("CT2 refused: %v", err)
	}
	if _, err = Start(ctx, rt, Config{}); err == nil {
		t.Fatal("no providers accepted")
	}
}
