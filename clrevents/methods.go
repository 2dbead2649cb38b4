package clrevents

import (
	"encoding/binary"
	"slices"

	"github.com/clrdiag/clrdiag/internal/wire"
)

//go:generate go run ./internal/gen -o events_gen.go

// GCReason says why a collection was triggered.
type GCReason uint32

var gcReasonNames = [...]string{
	"AllocSmall", "Induced", "LowMemory", "Empty", "AllocLarge", "OutOfSpaceSOH",
	"OutOfSpaceLOH", "InducedNotForced", "Internal", "InducedLowMemory",
	"InducedCompacting", "LowMemoryHost", "PMFullGC", "LowMemoryHostBlocking",
}

// String names the reason as the runtime's manifest does.
func (r GCReason) String() string {
	if int(r) < len(gcReasonNames) {
		return gcReasonNames[r]
	}
	return "Reason(" + itoa(uint64(r)) + ")"
}

// SampleKind is what a SampleProfiler sample found the thread doing.
type SampleKind uint32

// Sample kinds.
const (
	SampleError    SampleKind = 0
	SampleExternal SampleKind = 1 // outside managed code (native, blocked)
	SampleManaged  SampleKind = 2 // running managed code
)

func (k SampleKind) String() string {
	switch k {
	case SampleError:
		return "Error"
	case SampleExternal:
		return "External"
	case SampleManaged:
		return "Managed"
	}
	return "Kind(" + itoa(uint64(k)) + ")"
}

// FullName is MethodNamespace.MethodName, or MethodName alone when the
// namespace is empty.
func (m *MethodLoadVerbose) FullName() string {
	if m.MethodNamespace == "" {
		return m.MethodName
	}
	return m.MethodNamespace + "." + m.MethodName
}

// VMVersion formats the runtime build version, e.g. "4.700.19.56402".
func (r *RuntimeInformation) VMVersion() string {
	return itoa(uint64(r.VMMajorVersion)) + "." + itoa(uint64(r.VMMinorVersion)) + "." +
		itoa(uint64(r.VMBuildNumber)) + "." + itoa(uint64(r.VMQfeNumber))
}

// MethodRange is the fixed-size start of a MethodLoadVerbose payload: what
// a symboliser needs to index a method before it needs its name.
type MethodRange struct {
	MethodID           uint64
	ModuleID           uint64
	MethodStartAddress uint64
	MethodSize         uint32
	MethodToken        uint32
	MethodFlags        uint32
}

// DecodeMethodRange decodes the fixed-size fields of any version of the
// verbose method events without allocating; DecodeMethodLoadVerbose on the
// same payload gives the names later.
func DecodeMethodRange(payload []byte, version uint8) (MethodRange, error) {
	if len(payload) < 36 {
		// Too short for the fixed fields: the full decoder names the field.
		_, err := DecodeMethodLoadVerbose(payload, version)
		return MethodRange{}, err
	}
	le := binary.LittleEndian
	return MethodRange{MethodID: le.Uint64(payload), ModuleID: le.Uint64(payload[8:]),
		MethodStartAddress: le.Uint64(payload[16:]), MethodSize: le.Uint32(payload[24:]),
		MethodToken: le.Uint32(payload[28:]), MethodFlags: le.Uint32(payload[32:])}, nil
}

// AppendMethodNames appends to dst what DecodeMethodLoadVerbose on the same
// payload gives as FullName and then as MethodSignature, and returns the
// length of the FullName part: a symboliser keeps the names of many methods
// in one buffer instead of four strings each. It fails exactly when
// DecodeMethodLoadVerbose does, with the same error, and then returns dst
// unchanged.
func AppendMethodNames(dst, payload []byte, version uint8) (out []byte, fullNameLen int, err error) {
	const fixed = 36 // MethodID to MethodFlags
	n := len(dst)
	if len(payload) >= fixed {
		// Every name ASCII: half the bytes of the strings.
		dst = slices.Grow(dst, (len(payload)-fixed)/2)
		rest := payload[fixed:]
		var used, nsLen int
		ok := true
		if dst, used, ok = wire.AppendUTF16Z(dst, rest); ok {
			rest = rest[used:]
			if nsLen = len(dst) - n; nsLen > 0 {
				dst = append(dst, '.')
			}
			dst, used, ok = wire.AppendUTF16Z(dst, rest)
			rest = rest[used:]
			fullNameLen = len(dst) - n
		}
		if ok {
			dst, used, ok = wire.AppendUTF16Z(dst, rest)
			rest = rest[used:]
		}
		trailer := 0 // ClrInstanceID from version 1, ReJITID from 2
		if version >= 1 {
			trailer += 2
		}
		if version >= 2 {
			trailer += 8
		}
		if ok && len(rest) >= trailer {
			return dst, fullNameLen, nil
		}
	}
	// The decoder names the field that does not fit.
	_, err = DecodeMethodLoadVerbose(payload, version)
	return dst[:n], 0, err
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
