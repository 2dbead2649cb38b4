package ipc

import (
	"bytes"
	"testing"
)

func BenchmarkDecodeProcessInfo3(b *testing.B) {
	p := &ProcessInfo{Version: 3, PayloadVersion: 1, PID: 1, CommandLine: "/usr/share/dotnet/dotnet /srv/app/app.dll --urls http://*:8080",
		OS: "Linux", Arch: "x64", ManagedEntrypointAssemblyName: "app", ClrProductVersion: "8.0.11+9cb3b725e3ad2b57ddc9fb2dd48d2d170563a8f5", RuntimeIdentifier: "linux-x64"}
	payload, _ := p.MarshalBinary()
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if _, err := DecodeProcessInfo(3, payload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeCollectTracing2(b *testing.B) {
	req := &CollectTracingRequest{Version: 2, CircularBufferMB: 256, Format: FormatNetTrace, RequestRundown: true,
		Providers: []TracingProvider{
			{Keywords: 0x4c14fccbd, Level: 5, Name: "Microsoft-Windows-DotNETRuntime"},
			{Keywords: 0, Level: 5, Name: "Microsoft-DotNETCore-SampleProfiler"},
			{Keywords: 0xFFFFFFFF, Level: 4, Name: "System.Runtime", Args: "EventCounterIntervalSec=1"},
		}}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = req.AppendBinary(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadReply(b *testing.B) {
	m, _ := AppendMessage(nil, SetServer, CmdOK, AppendSessionIDReply(nil, 42))
	r := bytes.NewReader(m)
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(m)
		if _, err := ReadReply(r); err != nil {
			b.Fatal(err)
		}
	}
}
