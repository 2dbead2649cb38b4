package nettrace

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/clrdiag/clrdiag/internal/testcapture"
)

// fuzzSeeds returns small valid streams of every format.
func fuzzSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, name := range []string{"v4", "v4-uncompressed", "v6", "v6-uncompressed"} {
		cfg := writerConfigs()[name]
		cfg.MaxEventBlockSize = 200
		data, _, _ := buildTraceN(&testing.T{}, cfg, 8)
		seeds = append(seeds, data)
	}
	for _, rel := range []string{
		"perfview/eventpipe-dotnetcore2.1-linux-x64-tracelogging.netperf.zip",
		"perfview/eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip",
		"zetslief/perf_100ms.nettrace",
	} {
		if testcapture.Available(rel) {
			seeds = append(seeds, loadCapture(f, rel))
		}
	}
	local, _ := filepath.Glob("testdata/*.net*")
	for _, p := range local {
		if b, err := os.ReadFile(p); err == nil {
			seeds = append(seeds, b)
		}
	}
	return seeds
}

// FuzzReader feeds arbitrary bytes to the reader: it must never panic or
// hang, must end with io.EOF (only after the end-of-stream marker) or a
// *FormatError / ErrUnsupportedFormat, everything it returns must be
// usable, ReadEvent's fast path must agree with the general decoder,
// ReadParallel with ReadEvent, and a read with a skip function (SetSkip)
// with an unfiltered one.
func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastPath(t, data)
		checkParallel(t, data, ParallelConfig{Workers: 2, MaxInFlight: 3, SerialBytes: int64(len(data) / 2)})
		checkSkip(t, data, skipFuncs["half"])
		r, err := NewReaderConfig(bytes.NewReader(data), ReaderConfig{BufferSize: 4096})
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) && !errors.Is(err, ErrUnsupportedFormat) {
				t.Fatalf("NewReader error of unexpected type: %v", err)
			}
			return
		}
		var ev Event
		n := 0
		for {
			err = r.ReadEvent(&ev)
			if err != nil {
				break
			}
			n++
			if n > len(data) {
				t.Fatalf("more events (%d) than input bytes", n)
			}
			_ = ev.Time()
			_ = ev.AppendStack(nil)
			_, _ = ev.Fields()
		}
		if err == io.EOF {
			if !r.Stats().Complete {
				t.Fatal("io.EOF without the end-of-stream marker")
			}
		} else {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("ReadEvent error of unexpected type: %v", err)
			}
			if err2 := r.ReadEvent(&ev); err2 != err {
				t.Fatalf("error not sticky: %v then %v", err, err2)
			}
		}
	})
}

// FuzzDecodePayload decodes arbitrary payloads against arbitrary V4 and V6
// metadata records.
func FuzzDecodePayload(f *testing.F) {
	for _, mk := range []func() ([]Field, Object){allScalarFields, arrayFields, v6Fields} {
		fields, values := mk()
		p, _ := AppendPayload(nil, fields, values)
		md := &Metadata{ID: 1, ProviderName: "P", EventName: "E", Fields: fields}
		f.Add(appendMetadataV4(nil, md), p, false)
		f.Add(appendMetadataV6(nil, md), p, true)
	}
	f.Fuzz(func(t *testing.T, meta, payload []byte, v6 bool) {
		var md *Metadata
		var err error
		if v6 {
			md, err = parseMetadataRowV6(meta)
		} else {
			md, err = parseMetadataV4(meta)
		}
		if err != nil {
			return
		}
		obj, err := DecodePayload(md, payload)
		if err != nil {
			return
		}
		// A payload that decodes must re-encode to a prefix-equivalent
		// payload that decodes to the same values.
		re, err := AppendPayload(nil, md.Fields, obj)
		if err != nil {
			return // e.g. NaN-free but lossy Char values
		}
		obj2, err := DecodePayload(md, re)
		if err != nil {
			t.Fatalf("re-encoded payload does not decode: %v", err)
		}
		a, _ := obj.MarshalJSON()
		b, _ := obj2.MarshalJSON()
		if !bytes.Equal(a, b) {
			t.Fatalf("round trip changed values:\n%s\n%s", a, b)
		}
	})
}
