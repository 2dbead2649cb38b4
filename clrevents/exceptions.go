package clrevents

// ExceptionThrown (runtime event 80) is raised when managed code throws.
// The event's stack is the throw site.
type ExceptionThrown struct {
	ExceptionType    string
	ExceptionMessage string
	// ExceptionEIP is the faulting instruction address.
	ExceptionEIP     uint64
	ExceptionHRESULT uint32
	// ExceptionFlags: 0x1 has inner exception, 0x2 nested, 0x4 rethrown,
	// 0x8 corrupted state, 0x10 CLS compliant.
	ExceptionFlags uint16
	ClrInstanceID  uint16
}

// DecodeExceptionThrown decodes ExceptionThrown versions 0 (empty) and 1.
func DecodeExceptionThrown(payload []byte, version uint8, ptrSize int) (ExceptionThrown, error) {
	c := newCursor("ExceptionThrown", payload, version, ptrSize)
	var e ExceptionThrown
	if version == 0 {
		return e, nil
	}
	e.ExceptionType = c.str("ExceptionType")
	e.ExceptionMessage = c.str("ExceptionMessage")
	e.ExceptionEIP = c.ptr("ExceptionEIP")
	e.ExceptionHRESULT = c.u32("ExceptionHRESULT")
	e.ExceptionFlags = c.u16("ExceptionFlags")
	e.ClrInstanceID = c.u16("ClrInstanceID")
	return e, c.err
}

// ExceptionClause is the payload of ExceptionCatchStart (250),
// ExceptionFinallyStart (252) and ExceptionFilterStart (254): the handler
// that runs while an exception unwinds. The matching Stop events (251, 253,
// 255) have no payload.
type ExceptionClause struct {
	EntryEIP      uint64
	MethodID      uint64
	MethodName    string
	ClrInstanceID uint16
}

// DecodeExceptionClause decodes the Catch/Finally/Filter Start events.
func DecodeExceptionClause(payload []byte, version uint8) (ExceptionClause, error) {
	c := newCursor("ExceptionClause", payload, version, 8)
	var e ExceptionClause
	e.EntryEIP = c.u64("EntryEIP")
	e.MethodID = c.u64("MethodID")
	e.MethodName = c.str("MethodName")
	e.ClrInstanceID = c.u16("ClrInstanceID")
	return e, c.err
}
