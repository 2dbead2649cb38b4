package profile

import (
	"os"
	"testing"
)

// BenchmarkLargeFile measures decoding a large trace against converting it
// to each format (decode + profile + export), to check that a conversion
// costs at most a few decodes. The trace is the file named by the
// environment variable PROFILE_BENCH_FILE (absolute, or relative to this
// package's directory); the benchmark skips without it.
//
//	PROFILE_BENCH_FILE=$PWD/.cache/hot-60s.nettrace go test ./profile -run '^$' -bench LargeFile -benchtime 3x
func BenchmarkLargeFile(b *testing.B) {
	name := os.Getenv("PROFILE_BENCH_FILE")
	if name == "" {
		b.Skip("PROFILE_BENCH_FILE is not set")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		b.Fatalf("PROFILE_BENCH_FILE: %v", err)
	}
	benchmarkCapture(b, data)
}
