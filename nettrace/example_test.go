package nettrace_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/clrdiag/clrdiag/nettrace"
)

// buildExample writes a tiny trace with one self-describing event.
func buildExample() []byte {
	var buf bytes.Buffer
	w, _ := nettrace.NewWriter(&buf, nettrace.WriterConfig{
		ProcessID: 4242, SyncTimeUTC: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
	})
	md := &nettrace.Metadata{ID: 1, ProviderName: "MyCompany-Orders", EventID: 3, EventName: "OrderPlaced",
		Fields: []nettrace.Field{{Name: "OrderId", Type: nettrace.TypeInt64}, {Name: "Customer", Type: nettrace.TypeString}}}
	w.AddMetadata(md)
	payload, _ := nettrace.AppendPayload(nil, md.Fields, nettrace.Object{{Name: "OrderId", Value: int64(1001)}, {Name: "Customer", Value: "Ada"}})
	w.WriteEvent(&nettrace.Event{Metadata: md, SequenceNumber: 1, ThreadID: 7, CaptureThreadID: 7, Timestamp: 1_500_000, Payload: payload})
	w.Close()
	return buf.Bytes()
}

func Example() {
	r, err := nettrace.NewReader(bytes.NewReader(buildExample()))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("pid", r.Header().ProcessID)
	var ev nettrace.Event
	for {
		err := r.ReadEvent(&ev)
		if err == io.EOF {
			break
		}
		var fe *nettrace.FormatError
		if errors.As(err, &fe) {
			fmt.Println("damaged at byte", fe.Offset, fe.Msg)
			break
		}
		fields, _ := ev.Fields()
		id, _ := fields.Get("OrderId")
		fmt.Println(ev.Time().Format(time.RFC3339Nano), ev.Metadata.ProviderName, ev.Metadata.EventName, id)
	}
	fmt.Println("dropped", r.Stats().DroppedEvents, "complete", r.Stats().Complete)
	// Output:
	// pid 4242
	// 2025-03-01T12:00:00.0015Z MyCompany-Orders OrderPlaced 1001
	// dropped 0 complete true
}

func ExampleReader_All() {
	r, _ := nettrace.NewReader(bytes.NewReader(buildExample()))
	for ev, err := range r.All() {
		if err != nil {
			fmt.Println(err)
			break
		}
		fmt.Println(ev.Metadata.EventName, ev.ThreadID)
	}
	// Output: OrderPlaced 7
}

// perKind counts events per kind of event: a Part for ReadParallel. It
// keys slices by Metadata.Index, so counting needs no map; the padding
// keeps parts that different cores write off each other's cache lines.
type perKind struct {
	_    [64]byte
	n    []int
	kind []*nettrace.Metadata
	_    [64]byte
}

func (p *perKind) Event(ev *nettrace.Event) { p.count(ev.Metadata, 1) }

func (p *perKind) Reset() { clear(p.n) }

func (p *perKind) count(md *nettrace.Metadata, n int) {
	i := md.Index()
	for i >= len(p.n) {
		p.n = append(p.n, 0)
		p.kind = append(p.kind, nil)
	}
	p.n[i] += n
	p.kind[i] = md
}

func ExampleReadParallel() {
	r, _ := nettrace.NewReader(bytes.NewReader(buildExample()))
	// Workers decode blocks into parts; merge sees the parts in stream
	// order, on this goroutine.
	var total perKind
	err := nettrace.ReadParallel(context.Background(), r, nettrace.ParallelConfig{},
		func() *perKind { return &perKind{n: make([]int, 0, 16), kind: make([]*nettrace.Metadata, 0, 16)} },
		func(p *perKind) error {
			for i, n := range p.n {
				if n > 0 {
					total.count(p.kind[i], n)
				}
			}
			return nil
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, n := range total.n {
		if n > 0 {
			fmt.Println(total.kind[i].EventName, n)
		}
	}
	fmt.Println("events", r.Stats().Events)
	// Output:
	// OrderPlaced 1
	// events 1
}
