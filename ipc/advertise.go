package ipc

import (
	"fmt"
	"io"
)

// AdvertiseSize is the size of the Advertise message a runtime sends when it
// connects to a reverse (connect-mode) diagnostic port.
const AdvertiseSize = 34

// AdvertiseMagic is "ADVR_V1\0".
var AdvertiseMagic = [8]byte{'A', 'D', 'V', 'R', '_', 'V', '1', 0}

// Advertise is the first message on a reverse connection: the runtime says
// who it is, then serves one command on the connection.
type Advertise struct {
	RuntimeCookie GUID
	PID           uint64
	Future        uint16
}

// AppendBinary appends the 34 wire bytes.
func (a Advertise) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, AdvertiseMagic[:]...)
	b = append(b, a.RuntimeCookie[:]...)
	b = appendU64(b, a.PID)
	return appendU16(b, a.Future), nil
}

// MarshalBinary returns the 34 wire bytes.
func (a Advertise) MarshalBinary() ([]byte, error) {
	return a.AppendBinary(make([]byte, 0, AdvertiseSize))
}

// UnmarshalBinary decodes exactly AdvertiseSize bytes.
func (a *Advertise) UnmarshalBinary(b []byte) error {
	if len(b) != AdvertiseSize {
		return &ProtocolError{What: "advertise", Expected: AdvertiseSize, Got: len(b)}
	}
	if [8]byte(b[:8]) != AdvertiseMagic {
		return &ProtocolError{What: "advertise", Reason: fmt.Sprintf("magic is %q, want %q", b[:8], AdvertiseMagic[:])}
	}
	d := newDecoder("advertise", b[8:])
	a.RuntimeCookie = d.guid("cookie")
	a.PID = d.u64("pid")
	a.Future = d.u16("future")
	return d.finish()
}

// ReadAdvertise reads one Advertise message. Callers should bound the read
// with a deadline (the .NET tools use 250 ms).
func ReadAdvertise(r io.Reader) (Advertise, error) {
	var buf [AdvertiseSize]byte
	var a Advertise
	if err := readFull(r, buf[:], "advertise", 0); err != nil {
		return a, err
	}
	return a, a.UnmarshalBinary(buf[:])
}
