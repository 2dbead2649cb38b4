package ipc

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// Every reply decoder and every request decoder is fuzzed: no input may
// panic, and whatever decodes must re-encode to bytes that decode to the
// same value.

func FuzzReadReply(f *testing.F) {
	f.Add(msg(f, SetServer, CmdOK, AppendHRESULTReply(nil, 0)))
	f.Add(msg(f, SetServer, CmdError, AppendErrorReply(nil, HRFail, "x", true)))
	f.Add(msg(f, SetServer, CmdOK, nil)[:10])
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ReadReply(bytes.NewReader(b))
		var se *ServerError
		var pe *ProtocolError
		if err != nil && !errors.As(err, &se) && !errors.As(err, &pe) {
			t.Fatalf("untyped error %T: %v", err, err)
		}
		if err == nil && HeaderSize+len(m.Payload) > len(b) {
			t.Fatal("payload longer than input")
		}
	})
}

func FuzzDecodeProcessInfo(f *testing.F) {
	for v := 1; v <= 3; v++ {
		p := &ProcessInfo{Version: v, PayloadVersion: 1, PID: 1, CommandLine: "c", OS: "Linux", Arch: "x64", ClrProductVersion: "8.0.0", RuntimeIdentifier: "linux-x64"}
		b, _ := p.MarshalBinary()
		f.Add(uint8(v), b)
	}
	f.Fuzz(func(t *testing.T, v uint8, b []byte) {
		ver := int(v%3) + 1
		p, err := DecodeProcessInfo(ver, b)
		if err != nil {
			return
		}
		b2, err := p.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		p2, err := DecodeProcessInfo(ver, b2)
		if err != nil || !reflect.DeepEqual(p, p2) {
			t.Fatalf("re-decode: %v\n%+v\n%+v", err, p, p2)
		}
	})
}

func FuzzDecodeEnvironment(f *testing.F) {
	f.Add(AppendEnvironment(nil, []string{"A=1", "B="}))
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := DecodeEnvironment(b)
		if err != nil {
			return
		}
		env2, err := DecodeEnvironment(AppendEnvironment(nil, env))
		if err != nil || !reflect.DeepEqual(env, env2) {
			t.Fatalf("re-decode: %v %q %q", err, env, env2)
		}
	})
}

func FuzzDecodeSmallReplies(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(AppendErrorReply(nil, HRFail, "m", true))
	f.Fuzz(func(t *testing.T, b []byte) {
		if hr, err := DecodeHRESULTReply(b); err == nil && len(b) >= 4 && hr != uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24 {
			t.Fatal("hresult mismatch")
		}
		_, _ = DecodeSessionIDReply(b)
		_, _ = DecodeEnvironmentReply(b)
		hr, m, err := DecodeErrorReply(b)
		if err == nil && m != "" {
			hr2, m2, err := DecodeErrorReply(AppendErrorReply(nil, hr, m, true))
			if err != nil || hr2 != hr || m2 != m {
				t.Fatalf("error reply re-decode: %v %x %q", err, hr2, m2)
			}
		}
		var a Advertise
		if len(b) >= AdvertiseSize && a.UnmarshalBinary(b[:AdvertiseSize]) == nil {
			b2, _ := a.MarshalBinary()
			if !bytes.Equal(b2, b[:AdvertiseSize]) {
				t.Fatal("advertise re-encode differs")
			}
		}
	})
}

func FuzzDecodeRequest(f *testing.F) {
	seeds := []Request{
		&GenerateCoreDumpRequest{Version: 3, Path: "/c", Type: DumpFull, Flags: 7},
		&AttachProfilerRequest{AttachTimeoutMS: 1, Path: "/p", ClientData: []byte{1}},
		&CollectTracingRequest{Version: 5, Providers: []TracingProvider{{Name: "P", Filter: &EventFilter{Enable: true, EventIDs: []uint32{1}}}}},
		&CollectTracingRequest{Version: 6, SessionType: SessionUserEvents, Providers: []TracingProvider{{Name: "P", Tracepoints: &TracepointConfig{DefaultName: "d"}}}},
		&SetEnvironmentVariableRequest{Name: "A", Value: "B"},
	}
	for _, r := range seeds {
		b, err := r.AppendBinary(nil)
		if err != nil {
			f.Fatal(err)
		}
		set, id := r.Command()
		f.Add(set, id, b)
	}
	f.Fuzz(func(t *testing.T, set, id uint8, b []byte) {
		r, err := DecodeRequest(set, id, b)
		if err != nil {
			return
		}
		if _, ok := r.(*RawRequest); ok {
			return
		}
		b2, err := r.AppendBinary(nil)
		if err != nil {
			// Decoded values the encoder refuses (e.g. no providers) are fine.
			return
		}
		r2, err := DecodeRequest(set, id, b2)
		if err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("re-decode: %v\n%#v\n%#v", err, r, r2)
		}
	})
}
