//go:build linux

package profilertest_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
	"unicode/utf16"
)

// rawAttach sends one AttachProfiler (0x0301) request over the diagnostic
// socket and returns the HRESULT of the reply (0 for success). It is a
// minimal, self-contained sender used to prove the profiler independently
// of the diag package.
func rawAttach(ctx context.Context, socket string, timeoutMS uint32, clsid [16]byte, path string, data []byte) (uint32, error) {
	var payload []byte
	payload = binary.LittleEndian.AppendUint32(payload, timeoutMS)
	payload = append(payload, clsid[:]...)
	u := utf16.Encode([]rune(path))
	payload = binary.LittleEndian.AppendUint32(payload, uint32(len(u)+1))
	for _, c := range u {
		payload = binary.LittleEndian.AppendUint16(payload, c)
	}
	payload = binary.LittleEndian.AppendUint16(payload, 0)
	payload = binary.LittleEndian.AppendUint32(payload, uint32(len(data)))
	payload = append(payload, data...)
	size := 20 + len(payload)
	if size > 0xFFFF {
		return 0, fmt.Errorf("request of %d bytes does not fit the 16-bit size field", size)
	}
	msg := append([]byte("DOTNET_IPC_V1\x00"), 0, 0, 0x03, 0x01, 0, 0)
	binary.LittleEndian.PutUint16(msg[14:], uint16(size))
	msg = append(msg, payload...)

	var conn net.Conn
	var d net.Dialer
	for {
		var err error
		conn, err = d.DialContext(ctx, "unix", socket)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := conn.Write(msg); err != nil {
		return 0, err
	}
	hdr := make([]byte, 20)
	if _, err := io.ReadFull(conn, hdr); err != nil {
		return 0, fmt.Errorf("read reply header: %w", err)
	}
	if string(hdr[:14]) != "DOTNET_IPC_V1\x00" {
		return 0, fmt.Errorf("reply magic %q", hdr[:14])
	}
	rsize := binary.LittleEndian.Uint16(hdr[14:])
	if rsize != 24 || hdr[16] != 0xFF {
		return 0, fmt.Errorf("unexpected reply header % x", hdr)
	}
	body := make([]byte, 4)
	if _, err := io.ReadFull(conn, body); err != nil {
		return 0, fmt.Errorf("read reply payload: %w", err)
	}
	hr := binary.LittleEndian.Uint32(body)
	switch hdr[17] {
	case 0x00:
		return hr, nil
	case 0xFF:
		if hr == 0 {
			return 0, errors.New("error reply carrying HRESULT 0")
		}
		return hr, nil
	}
	return 0, fmt.Errorf("unexpected reply command id 0x%02x", hdr[17])
}
