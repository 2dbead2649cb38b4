//go:build unix

package record

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/transport"
)

// header20 builds a 20-byte IPC-like request whose last bytes carry id.
func header20(id uint16) []byte {
	h := make([]byte, 20)
	copy(h, "DOTNET_IPC_V1\x00")
	binary.LittleEndian.PutUint16(h[14:], 20)
	h[16], h[17] = 0x04, 0x00
	binary.LittleEndian.PutUint16(h[18:], id)
	return h
}

// reply24 is the server's answer to req: a 24-byte message echoing req[18:20].
func reply24(req []byte) []byte {
	r := make([]byte, 24)
	copy(r, "DOTNET_IPC_V1\x00")
	binary.LittleEndian.PutUint16(r[14:], 24)
	r[16], r[17] = 0xFF, 0x00
	copy(r[20:], req[18:20])
	return r
}

// serveHeaders runs a unix socket server that, per connection, reads a
// 20-byte header, replies 24 bytes and closes.
func serveHeaders(t *testing.T) transport.Endpoint {
	t.Helper()
	path := filepath.Join(ipctest.ShortDir(t), "dotnet-diagnostic-7-1-socket")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				req := make([]byte, 20)
				if _, err := io.ReadFull(c, req); err != nil {
					return
				}
				c.Write(reply24(req))
			}()
		}
	}()
	return transport.Endpoint{Network: transport.NetworkUnix, Address: path, PID: 7}
}

// exchange dials, sends header20(id), reads the reply to EOF and returns it.
func exchange(ctx context.Context, d interface {
	Dial(context.Context) (net.Conn, error)
}, id uint16) ([]byte, error) {
	c, err := d.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(header20(id)); err != nil {
		return nil, err
	}
	return io.ReadAll(c)
}

func TestRecordAndReplay(t *testing.T) {
	ep := serveHeaders(t)
	dir := filepath.Join(t.TempDir(), "rec")
	rec, err := NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d := transport.Dialer{Endpoint: ep, Recorder: rec}
	for id := uint16(1); id <= 2; id++ {
		got, err := exchange(ctx, d, id)
		if err != nil {
			t.Fatalf("live exchange %d: %v", id, err)
		}
		if want := reply24(header20(id)); !bytes.Equal(got, want) {
			t.Fatalf("live reply %d = % x, want % x", id, got, want)
		}
	}
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRecorder(dir); err == nil {
		t.Error("NewRecorder accepted a directory that already holds a recording")
	}

	// The server is gone; the replay answers alone.
	rd, err := Replay(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rd.Len() != 2 {
		t.Fatalf("replay has %d connections, want 2", rd.Len())
	}
	for id := uint16(1); id <= 2; id++ {
		got, err := exchange(ctx, rd, id)
		if err != nil {
			t.Fatalf("replayed exchange %d: %v", id, err)
		}
		if want := reply24(header20(id)); !bytes.Equal(got, want) {
			t.Errorf("replayed reply %d = % x, want % x", id, got, want)
		}
	}
	if _, err := rd.Dial(ctx); err == nil || !bytes.Contains([]byte(err.Error()), []byte("only 2 connections")) {
		t.Errorf("third replay dial: err = %v, want 'only 2 connections'", err)
	}
}

func recordOne(t *testing.T, id uint16) string {
	t.Helper()
	ep := serveHeaders(t)
	dir := filepath.Join(t.TempDir(), "rec")
	rec, err := NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exchange(context.Background(), transport.Dialer{Endpoint: ep, Recorder: rec}, id); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReplayMismatch(t *testing.T) {
	dir := recordOne(t, 0x0102)
	rd, err := Replay(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rd.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := header20(0x0102)
	req[16] = 0x02 // a different command set
	n, err := c.Write(req)
	var me *MismatchError
	if !errors.As(err, &me) {
		t.Fatalf("Write: err = %v, want *MismatchError", err)
	}
	if me.Offset != 16 || n != 16 || me.Want[0] != 0x04 || me.Got[0] != 0x02 || me.File != "conn-0001.rec" {
		t.Errorf("mismatch = %+v (n=%d), want offset 16, recorded 04, got 02 in conn-0001.rec", me, n)
	}
	if want := "offset 16"; !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Errorf("error %q does not name %q", err, want)
	}
	if _, err2 := c.Write([]byte{1}); !errors.As(err2, &me) {
		t.Errorf("write after mismatch: err = %v, want the sticky mismatch", err2)
	}
}

func TestReplayClientSendsTooMuch(t *testing.T) {
	rd, err := Replay(recordOne(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := rd.Dial(context.Background())
	defer c.Close()
	n, err := c.Write(append(header20(3), 0xAA, 0xBB))
	var me *MismatchError
	if !errors.As(err, &me) || me.Offset != 20 || n != 20 || len(me.Want) != 0 || !bytes.Equal(me.Got, []byte{0xAA, 0xBB}) {
		t.Fatalf("n=%d err=%v, want extra-bytes mismatch at offset 20", n, err)
	}
}

func TestReplayReplyWaitsForRequest(t *testing.T) {
	rd, err := Replay(recordOne(t, 4))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := rd.Dial(context.Background())
	defer c.Close()
	// The reply was recorded after the request: reading first must block.
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := c.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read before request: err = %v, want deadline exceeded", err)
	}
	// A read blocked in another goroutine is released by the write.
	c.SetReadDeadline(time.Time{})
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(c)
		got <- b
	}()
	time.Sleep(20 * time.Millisecond)
	if _, err := c.Write(header20(4)); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if !bytes.Equal(b, reply24(header20(4))) {
			t.Errorf("reply = % x", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocked read was not released by the write")
	}
}

func TestRecorderConcurrentConnections(t *testing.T) {
	ep := serveHeaders(t)
	dir := filepath.Join(t.TempDir(), "rec")
	rec, err := NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := exchange(context.Background(), transport.Dialer{Endpoint: ep, Recorder: rec}, uint16(100+i))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	names, err := listRecordings(dir)
	if err != nil || len(names) != n {
		t.Fatalf("recordings = %v, %v; want %d files", names, err, n)
	}
	seen := map[uint16]bool{}
	for _, name := range names {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		rr, err := newRecordReader(f, name)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []byte
		var sent, recv []byte
		for {
			r, err := rr.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, r.kind)
			switch r.kind {
			case recWrite:
				sent = append(sent, r.data...)
			case recRead:
				recv = append(recv, r.data...)
			}
		}
		f.Close()
		if kinds[0] != recMeta || kinds[len(kinds)-1] != recClose || !bytes.Contains(kinds, []byte{recEOF}) {
			t.Errorf("%s: record kinds %q, want M ... E ... C", name, kinds)
		}
		if len(sent) != 20 || !bytes.Equal(recv, reply24(sent)) {
			t.Errorf("%s: sent % x, received % x: not one request and its reply", name, sent, recv)
			continue
		}
		seen[binary.LittleEndian.Uint16(sent[18:])] = true
	}
	if len(seen) != n {
		t.Errorf("recorded %d distinct requests, want %d: %v", len(seen), n, seen)
	}
}

func TestReplayRejectsCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := Replay(dir); err == nil {
		t.Error("Replay of an empty directory succeeded")
	}
	os.WriteFile(filepath.Join(dir, "conn-0001.rec"), []byte("garbage"), 0o600)
	rd, err := Replay(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rd.Dial(context.Background())
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Errorf("corrupt recording: err = %v, want *FormatError", err)
	}
	// A huge length is refused before allocating.
	hdr := append([]byte(recMagic), recMeta)
	hdr = binary.LittleEndian.AppendUint64(hdr, 0)
	hdr = binary.LittleEndian.AppendUint32(hdr, 0xFFFFFFF0)
	os.WriteFile(filepath.Join(dir, "conn-0001.rec"), hdr, 0o600)
	rd, _ = Replay(dir)
	if _, err = rd.Dial(context.Background()); !errors.As(err, &fe) || !bytes.Contains([]byte(fe.Msg), []byte("exceeds")) {
		t.Errorf("huge record: err = %v", err)
	}
}
