package profile

import (
	"encoding/binary"
	"maps"
	"testing"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/nettrace"
)

// The collections are counted by reason whatever their order: runs of
// one reason longer than the Builder keeps pending (255), reasons that
// come back, reasons past a byte, payloads of every version, and one too
// short to decode.
func TestGCReasons(t *testing.T) {
	b := NewBuilder(nettrace.Header{TickFrequency: 1e9}, Config{})
	mds := map[uint32]*nettrace.Metadata{}
	add := func(version uint32, reason uint32, n int) {
		md := mds[version]
		if md == nil {
			md = &nettrace.Metadata{ID: version + 1, ProviderName: clrevents.ProviderRuntime, EventID: uint32(clrevents.IDGCStart), Version: version}
			mds[version] = md
		}
		size := map[uint32]int{0: 8, 1: 18, 2: 26}[version]
		pl := make([]byte, size)
		if version == 0 {
			binary.LittleEndian.PutUint32(pl[4:], reason)
		} else {
			binary.LittleEndian.PutUint32(pl[4:], 1) // Depth
			binary.LittleEndian.PutUint32(pl[8:], reason)
		}
		for range n {
			b.Add(&nettrace.Event{Metadata: md, Payload: pl})
		}
	}
	add(1, 0, 600) // AllocSmall, past 255 pending
	add(2, 1, 3)
	add(1, 0, 2)
	add(2, 300, 2) // past a byte
	add(0, 0, 1)
	add(2, 1, 1)
	b.Add(&nettrace.Event{Metadata: mds[1], Payload: make([]byte, 10)}) // too short: a decode error
	p := b.Finish()
	want := map[string]int64{"AllocSmall": 603, "Induced": 4, "Reason(300)": 2}
	if !maps.Equal(p.GC.Reasons, want) {
		t.Errorf("reasons %v, want %v", p.GC.Reasons, want)
	}
	if c := p.GC.Collections; c != [3]int64{1, 608, 0} {
		t.Errorf("collections by depth %v, want [1 608 0]", c)
	}
	if p.DecodeErrors != 1 {
		t.Errorf("%d decode errors, want 1", p.DecodeErrors)
	}
}
