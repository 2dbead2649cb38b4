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
	"slices"
	"testing"
	"time"
)

// encodeRecords builds a recording file from records.
func encodeRecords(recs ...record) []byte {
	b := []byte(recMagic)
	for _, r := range recs {
		b = append(b, r.kind)
		b = binary.LittleEndian.AppendUint64(b, uint64(r.time))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(r.data)))
		b = append(b, r.data...)
	}
	return b
}

func seedRecording() []byte {
	return encodeRecords(
		record{kind: recMeta, data: []byte(`{"network":"unix","address":"/tmp/s"}`)},
		record{kind: recWrite, data: []byte("ping")},
		record{kind: recRead, data: []byte("pong")},
		record{kind: recEOF},
		record{kind: recClose},
	)
}

func TestReplayWriteFailure(t *testing.T) {
	dir := t.TempDir()
	fail := binary.LittleEndian.AppendUint32(nil, 2) // the last 2 bytes were not sent
	os.WriteFile(filepath.Join(dir, "conn-0001.rec"), encodeRecords(
		record{kind: recMeta, data: []byte(`{}`)},
		record{kind: recWrite, data: []byte("abcd")},
		record{kind: recWriteFail, data: append(fail, "broken pipe"...)},
	), 0o600)
	rd, err := Replay(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rd.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n, err := c.Write([]byte("abcd"))
	if n != 2 || err == nil || !bytes.Contains([]byte(err.Error()), []byte("broken pipe")) {
		t.Fatalf("Write = %d, %v; want 2 and the recorded broken pipe", n, err)
	}
}

func TestReplayRecordedReadError(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "conn-0001.rec"), encodeRecords(
		record{kind: recMeta, data: []byte(`{}`)},
		record{kind: recRead, data: []byte("xy")},
		record{kind: recReadErr, data: []byte("connection reset by peer")},
	), 0o600)
	rd, _ := Replay(dir)
	c, err := rd.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := io.ReadAll(c)
	if string(b) != "xy" || err == nil || !bytes.Contains([]byte(err.Error()), []byte("connection reset")) {
		t.Fatalf("ReadAll = %q, %v", b, err)
	}
}

func TestReplayCloseUnblocksRead(t *testing.T) {
	dir := t.TempDir()
	// Recorded client closed without reading to EOF: a further read blocks.
	os.WriteFile(filepath.Join(dir, "conn-0001.rec"), encodeRecords(
		record{kind: recMeta, data: []byte(`{}`)},
		record{kind: recClose},
	), 0o600)
	rd, _ := Replay(dir)
	c, _ := rd.Dial(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("read after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock Read")
	}
}

func FuzzRecordReader(f *testing.F) {
	f.Add(seedRecording())
	f.Add([]byte(recMagic))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rr, err := newRecordReader(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		total := int64(len(recMagic))
		for {
			r, err := rr.next()
			if err == io.EOF {
				if total != int64(len(data)) {
					t.Fatalf("clean EOF after %d of %d bytes", total, len(data))
				}
				return
			}
			if err != nil {
				var fe *FormatError
				if !errors.As(err, &fe) {
					t.Fatalf("error %v is not a *FormatError", err)
				}
				return
			}
			if len(r.data) > maxRecord {
				t.Fatalf("record of %d bytes", len(r.data))
			}
			total += recHeaderLen + int64(len(r.data))
		}
	})
}

// FuzzReplay serves arbitrary recordings (a valid start followed by
// arbitrary records) and drives them with arbitrary client output: nothing
// may panic or hang, and counts stay in range.
func FuzzReplay(f *testing.F) {
	seed := seedRecording()
	start := encodeRecords(record{kind: recMeta, data: []byte(`{}`)})
	f.Add(seed[len(encodeRecords(record{kind: recMeta, data: []byte(`{"network":"unix","address":"/tmp/s"}`)})):], []byte("ping"))
	f.Add(seed, []byte("pinx"))
	f.Fuzz(func(t *testing.T, body, out []byte) {
		rec := append(slices.Clip(start), body...)
		rr, err := newRecordReader(bytes.NewReader(rec), "fuzz.rec")
		if err != nil {
			t.Fatal(err)
		}
		c, err := newReplayConn(io.NopCloser(nil), rr, "fuzz.rec")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Millisecond))
		n, err := c.Write(out)
		if n < 0 || n > len(out) || (err == nil && n != len(out)) {
			t.Fatalf("Write = %d, %v for %d bytes", n, err, len(out))
		}
		buf := make([]byte, 64)
		for range 8 {
			n, err := c.Read(buf)
			if n < 0 || n > len(buf) {
				t.Fatalf("Read = %d", n)
			}
			if err != nil {
				break
			}
		}
	})
}
