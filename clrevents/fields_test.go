package clrevents

import (
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/clrdiag/clrdiag/nettrace"
)

// Fields names a runtime event's payload from the table, addresses as Hex
// (0x..., a JSON string), and a self-describing event's from its metadata;
// an unknown event has none.
func TestFields(t *testing.T) {
	p := binary.LittleEndian.AppendUint64(nil, 0x7f0012340000) // Address
	p = binary.LittleEndian.AppendUint64(p, 1<<20)             // Size
	p = binary.LittleEndian.AppendUint32(p, 1)                 // Type
	p = binary.LittleEndian.AppendUint16(p, 9)                 // ClrInstanceID
	ev := &nettrace.Event{Metadata: &nettrace.Metadata{ProviderName: ProviderRuntime, EventID: 5, Version: 1}, Payload: p}
	obj, err := Fields(ev, 8)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := obj.Get("Address")
	size, _ := obj.Get("Size")
	if h, ok := addr.(Hex); !ok || h.String() != "0x7f0012340000" || size != uint64(1<<20) {
		t.Fatalf("fields %v", obj)
	}
	if b, err := json.Marshal(addr); err != nil || string(b) != `"0x7f0012340000"` {
		t.Errorf("JSON %s %v", b, err)
	}
	// A V6 label overrides the metadata's version: version 0 has no
	// ClrInstanceID.
	v0 := uint8(0)
	ev.Labels = &nettrace.LabelList{Version: &v0}
	if EventVersion(ev) != 0 {
		t.Errorf("EventVersion %d", EventVersion(ev))
	}

	self := &nettrace.Metadata{ProviderName: "My", EventID: 1, Fields: []nettrace.Field{{Name: "n", Type: nettrace.TypeInt32}}}
	sp, err := nettrace.AppendPayload(nil, self.Fields, nettrace.Object{{Name: "n", Value: int32(3)}})
	if err != nil {
		t.Fatal(err)
	}
	if obj, err := Fields(&nettrace.Event{Metadata: self, Payload: sp}, 8); err != nil || len(obj) != 1 || obj[0].Value != int32(3) {
		t.Errorf("self-describing: %v %v", obj, err)
	}
	unknown := &nettrace.Event{Metadata: &nettrace.Metadata{ProviderName: "Other", EventID: 1}, Payload: []byte{1, 2}}
	if obj, err := Fields(unknown, 8); obj != nil || err != nil || HasFields(unknown.Metadata) {
		t.Errorf("unknown event: %v %v", obj, err)
	}
}
