package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Sizes of the protocol.
const (
	// HeaderSize is the size of every message header.
	HeaderSize = 20
	// MaxMessageSize is the largest message the u16 size field can describe.
	MaxMessageSize = 0xFFFF
	// MaxPayloadSize is the largest payload of one message (65515 bytes).
	MaxPayloadSize = MaxMessageSize - HeaderSize
)

// Magic is the 14-byte magic that starts every message: "DOTNET_IPC_V1\0".
var Magic = [14]byte{'D', 'O', 'T', 'N', 'E', 'T', '_', 'I', 'P', 'C', '_', 'V', '1', 0}

// Header is the 20-byte header of every IPC message.
type Header struct {
	Magic [14]byte
	// Size is the size of the whole message, header included.
	Size       uint16
	CommandSet uint8
	CommandID  uint8
	Reserved   uint16
}

// NewHeader returns the header of a message carrying payloadLen bytes, or
// an error wrapping ErrPayloadTooLarge.
func NewHeader(set, id uint8, payloadLen int) (Header, error) {
	if payloadLen < 0 || payloadLen > MaxPayloadSize {
		return Header{}, fmt.Errorf("%s: %d-byte payload exceeds the protocol limit of %d bytes (the size field is 16 bits); send fewer or shorter providers, arguments or paths: %w",
			CommandName(set, id), payloadLen, MaxPayloadSize, ErrPayloadTooLarge)
	}
	return Header{Magic: Magic, Size: uint16(HeaderSize + payloadLen), CommandSet: set, CommandID: id}, nil
}

// AppendBinary appends the 20 wire bytes of h.
func (h Header) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, h.Magic[:]...)
	b = appendU16(b, h.Size)
	b = append(b, h.CommandSet, h.CommandID)
	return appendU16(b, h.Reserved), nil
}

// MarshalBinary returns the 20 wire bytes of h.
func (h Header) MarshalBinary() ([]byte, error) { return h.AppendBinary(make([]byte, 0, HeaderSize)) }

// UnmarshalBinary decodes exactly HeaderSize bytes. It does not check the
// magic or the size; see Validate.
func (h *Header) UnmarshalBinary(b []byte) error {
	if len(b) != HeaderSize {
		return &ProtocolError{What: "header", Expected: HeaderSize, Got: len(b)}
	}
	copy(h.Magic[:], b)
	h.Size = binary.LittleEndian.Uint16(b[14:])
	h.CommandSet, h.CommandID = b[16], b[17]
	h.Reserved = binary.LittleEndian.Uint16(b[18:])
	return nil
}

// PayloadSize is the payload length the header announces.
func (h Header) PayloadSize() int { return int(h.Size) - HeaderSize }

// Validate checks the magic and that Size covers at least the header. A
// wrong magic gives an error matching ErrUnknownMagic.
func (h Header) Validate() error {
	if h.Magic != Magic {
		return &ProtocolError{What: "header", Reason: fmt.Sprintf("magic is %q, want %q", h.Magic[:], Magic[:]), Err: ErrUnknownMagic}
	}
	if h.Size < HeaderSize {
		return &ProtocolError{What: "header", Reason: fmt.Sprintf("size field is %d, less than the %d-byte header", h.Size, HeaderSize)}
	}
	return nil
}

// AppendMessage appends a whole message (header and payload).
func AppendMessage(b []byte, set, id uint8, payload []byte) ([]byte, error) {
	h, err := NewHeader(set, id, len(payload))
	if err != nil {
		return b, err
	}
	b, _ = h.AppendBinary(b)
	return append(b, payload...), nil
}

// WriteMessage writes one message with a single Write call. A payload over
// MaxPayloadSize is refused with an error wrapping ErrPayloadTooLarge and
// nothing is written.
func WriteMessage(w io.Writer, set, id uint8, payload []byte) error {
	msg, err := AppendMessage(make([]byte, 0, HeaderSize+len(payload)), set, id, payload)
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("sending %s: %w", CommandName(set, id), err)
	}
	return nil
}

// readFull reads len(p) bytes and turns a short read into a *ProtocolError
// that says how many bytes were expected.
func readFull(r io.Reader, p []byte, what string, offset int) error {
	n, err := io.ReadFull(r, p)
	if err == nil {
		return nil
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return &ProtocolError{What: what, Offset: offset + n, Expected: len(p), Got: n, Err: err}
}

// ReadHeader reads and validates one header.
func ReadHeader(r io.Reader) (Header, error) {
	var buf [HeaderSize]byte
	var h Header
	if err := readFull(r, buf[:], "header", 0); err != nil {
		return h, err
	}
	_ = h.UnmarshalBinary(buf[:])
	return h, h.Validate()
}

// Message is one decoded message.
type Message struct {
	Header  Header
	Payload []byte
}

// ReadMessage reads one message of any command. The payload is bounded by
// the u16 size field (at most MaxPayloadSize bytes). A wrong magic gives an
// error matching ErrUnknownMagic, with the header filled in and no payload
// read.
func ReadMessage(r io.Reader) (Message, error) {
	h, err := ReadHeader(r)
	if err != nil {
		return Message{Header: h}, err
	}
	m := Message{Header: h, Payload: make([]byte, h.PayloadSize())}
	if err := readFull(r, m.Payload, CommandName(h.CommandSet, h.CommandID)+" payload", HeaderSize); err != nil {
		return m, err
	}
	return m, nil
}

// ReadReply reads one reply. An OK reply (0xFF/0x00) returns its payload. An
// Error reply (0xFF/0xFF) returns the message and a *ServerError carrying the
// HRESULT (and GenerateCoreDump3's text, if present); its CommandSet and
// CommandID are zero because the reader does not know the request, so
// callers should fill them in. Malformed or truncated replies give a
// *ProtocolError.
func ReadReply(r io.Reader) (Message, error) {
	m, err := ReadMessage(r)
	if err != nil {
		if pe := (*ProtocolError)(nil); errors.As(err, &pe) && pe.What == "header" {
			pe.What = "reply header"
		}
		return m, err
	}
	h := m.Header
	if h.CommandSet != SetServer || (h.CommandID != CmdOK && h.CommandID != CmdError) {
		return m, &ProtocolError{What: "reply header", Offset: 16,
			Reason: fmt.Sprintf("command is 0x%02X%02X, want a server reply 0xFF00 (OK) or 0xFFFF (Error)", h.CommandSet, h.CommandID)}
	}
	if h.CommandID == CmdError {
		hr, msg, err := DecodeErrorReply(m.Payload)
		if err != nil {
			return m, err
		}
		return m, &ServerError{HRESULT: hr, Message: msg}
	}
	return m, nil
}
