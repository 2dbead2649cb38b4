#!/usr/bin/env bash
# bench-compare.sh: decode the same trace files with clrdiag's nettrace
# package and with a peer Go decoder, side by side in one benchmark run.
#
#   scripts/bench-compare.sh PEER_DIR [TRACE_FILE...]
#
# PEER_DIR is a checkout of github.com/pyroscope-io/dotnetdiag (any commit
# with its nettrace package: Stream, Decoder, Blob). This script fetches
# nothing and the peer's code is never copied into this repository: it
# writes a throw-away Go module under a temporary directory that requires
# both modules through replace directives (clrdiag from this checkout, the
# peer from PEER_DIR), runs `go test -bench` there, prints the raw results,
# a per-file table of events/s and the clrdiag/peer ratio, and removes the
# module. (The Go command may download the go.mod files of the peer's own
# declared dependencies through the Go module proxy the first time.)
#
# Without TRACE_FILE arguments it decodes the peer's two test traces
# (PEER_DIR/nettrace/testdata/*.nettrace) and the NetTrace V4 captures
# committed under testdata/captures. The peer only reads NetTrace V4 with
# compressed headers; files it rejects are reported and skipped.
#
# Environment: COUNT (runs per benchmark, default 10), BENCHTIME (default
# 1s), KEEP=1 keeps the temporary module and prints where it is.
# CALLGRIND=1 also counts the instructions each decoder executes per file
# (valgrind --tool=callgrind, GODEBUG=asyncpreemptoff=1 GOGC=off: the
# count of one decode is Ir(N+1 decodes) - Ir(1 decode), divided by N), a
# ratio that a loaded machine does not move.
#
# Both decoders read from memory through a plain io.Reader and decode every
# block (for the peer: all four handlers set, as its profiler does); each
# benchmark reports events/s and allocations. Use the same binary and one
# session for the ratio: the machine's load moves both sides alike.
set -euo pipefail

if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
peer=$(cd "$1" && pwd)
shift
if [ ! -f "$peer/nettrace/nettrace.go" ] || ! grep -q 'module github.com/pyroscope-io/dotnetdiag' "$peer/go.mod" 2>/dev/null; then
  echo "bench-compare: $peer is not a checkout of github.com/pyroscope-io/dotnetdiag (no go.mod naming it, or no nettrace/nettrace.go)" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)

files=()
if [ $# -gt 0 ]; then
  for f in "$@"; do files+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"); done
else
  for f in "$peer"/nettrace/testdata/*.nettrace; do files+=("$f"); done
  for f in "$root"/testdata/captures/*/*.nettrace "$root"/testdata/captures/*/*.nettrace.zip; do
    [ -e "$f" ] && files+=("$f")
  done
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/clrdiag-bench-compare.XXXXXX")
if [ "${KEEP:-}" = 1 ]; then
  echo "module kept in $tmp" >&2
else
  trap 'rm -rf "$tmp"' EXIT
fi

cat >"$tmp/go.mod" <<EOF
module benchcompare

go 1.26

require (
	github.com/clrdiag/clrdiag v0.0.0
	github.com/pyroscope-io/dotnetdiag v0.0.0
)

replace github.com/clrdiag/clrdiag => $root

replace github.com/pyroscope-io/dotnetdiag => $peer
EOF

cat >"$tmp/compare_test.go" <<'EOF'
package benchcompare

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clr "github.com/clrdiag/clrdiag/nettrace"
	peer "github.com/pyroscope-io/dotnetdiag/nettrace"
)

// onlyReader hides bytes.Reader's extra methods: both decoders see a plain
// io.Reader, as from a socket.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func load(tb testing.TB, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if !strings.HasSuffix(path, ".zip") {
		return data
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, ".nettrace") {
			rc, err := f.Open()
			if err != nil {
				tb.Fatal(err)
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			if err != nil {
				tb.Fatal(err)
			}
			return b
		}
	}
	tb.Fatalf("%s holds no .nettrace", path)
	return nil
}

// clrDecode reads every event with ReadEvent.
func clrDecode(data []byte) (int64, error) {
	r, err := clr.NewReader(onlyReader{bytes.NewReader(data)})
	if err != nil {
		return 0, err
	}
	var ev clr.Event
	var n int64
	sink := 0
	for {
		if err := r.ReadEvent(&ev); err != nil {
			if err == io.EOF {
				err = nil
			}
			_ = sink
			return n, err
		}
		sink += len(ev.Payload) + int(ev.Metadata.EventID)
		n++
	}
}

type countPart struct {
	_ [64]byte // off the other parts' cache lines
	n int64
	_ [64]byte
}

func (p *countPart) Event(ev *clr.Event) { p.n++ }
func (p *countPart) Reset()              { p.n = 0 }

// clrParallel reads every event with ReadParallel on all cores.
func clrParallel(data []byte) (int64, error) {
	r, err := clr.NewReader(onlyReader{bytes.NewReader(data)})
	if err != nil {
		return 0, err
	}
	var n int64
	err = clr.ReadParallel(context.Background(), r, clr.ParallelConfig{},
		func() *countPart { return &countPart{} },
		func(p *countPart) error { n += p.n; return nil })
	return n, err
}

// peerDecode decodes every block with all four handlers set.
func peerDecode(data []byte) (int64, error) {
	s := peer.NewStream(onlyReader{bytes.NewReader(data)})
	if _, err := s.Open(); err != nil {
		return 0, err
	}
	var n int64
	sink := 0
	s.EventHandler = func(b *peer.Blob) error {
		n++
		sink += b.Payload.Len() + int(b.Header.MetadataID)
		return nil
	}
	s.MetadataHandler = func(*peer.Metadata) error { return nil }
	s.StackBlockHandler = func(*peer.StackBlock) error { return nil }
	s.SequencePointBlockHandler = func(*peer.SequencePointBlock) error { return nil }
	for {
		if err := s.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			_ = sink
			return n, err
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, path := range strings.Split(os.Getenv("BENCH_FILES"), "\n") {
		if path == "" {
			continue
		}
		data := load(b, path)
		name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".zip"), ".nettrace")
		want, err := clrDecode(data)
		if err != nil {
			b.Logf("%s: clrdiag: %v (events before it: %d)", name, err, want)
		}
		got, perr := peerDecode(data)
		if perr != nil {
			b.Logf("%s: skipped: the peer fails: %v", name, perr)
			continue
		}
		if got != want {
			b.Logf("%s: skipped: the peer reads %d events, clrdiag %d", name, got, want)
			continue
		}
		for _, d := range []struct {
			name string
			fn   func([]byte) (int64, error)
		}{{"clrdiag", clrDecode}, {"peer", peerDecode}, {"clrdiag-parallel", clrParallel}} {
			b.Run("file="+name+"/decoder="+d.name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				var n int64
				for b.Loop() {
					n, _ = d.fn(data)
				}
				el := b.Elapsed()
				b.ReportMetric(float64(n)*float64(b.N)/el.Seconds(), "events/s")
				b.ReportMetric(float64(el.Nanoseconds())/float64(b.N)/float64(max(n, 1)), "ns/event")
			})
		}
	}
}
EOF

mkdir -p "$tmp/driver"
cat >"$tmp/driver/main.go" <<'EOF'
// Command driver decodes a trace file N times with one decoder, for
// instruction counting.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	clr "github.com/clrdiag/clrdiag/nettrace"
	peer "github.com/pyroscope-io/dotnetdiag/nettrace"
)

type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func main() {
	decoder := flag.String("decoder", "clrdiag", "clrdiag or peer")
	passes := flag.Int("passes", 1, "decodes")
	flag.Parse()
	data, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		panic(err)
	}
	var n int64
	for range *passes {
		if *decoder == "peer" {
			s := peer.NewStream(onlyReader{bytes.NewReader(data)})
			if _, err := s.Open(); err != nil {
				panic(err)
			}
			s.EventHandler = func(*peer.Blob) error { n++; return nil }
			s.MetadataHandler = func(*peer.Metadata) error { return nil }
			s.StackBlockHandler = func(*peer.StackBlock) error { return nil }
			s.SequencePointBlockHandler = func(*peer.SequencePointBlock) error { return nil }
			for {
				if err := s.Next(); err != nil {
					if !errors.Is(err, io.EOF) {
						panic(err)
					}
					break
				}
			}
			continue
		}
		r, err := clr.NewReader(onlyReader{bytes.NewReader(data)})
		if err != nil {
			panic(err)
		}
		var ev clr.Event
		for r.ReadEvent(&ev) == nil {
			n++
		}
	}
	fmt.Println(n)
}
EOF

cd "$tmp"
GOFLAGS=-mod=mod go mod tidy >/dev/null
out="$tmp/bench.txt"
BENCH_FILES=$(printf '%s\n' "${files[@]}") GOFLAGS=-mod=mod \
  go test -run '^$' -bench BenchmarkDecode -count "${COUNT:-10}" -benchtime "${BENCHTIME:-1s}" . | tee "$out"

echo
echo "median events/s per file and decoder; ratio = clrdiag / peer (single goroutine each),"
echo "parallel = clrdiag ReadParallel on ${GOMAXPROCS:-$(nproc)} cores / peer"
awk '
  /^BenchmarkDecode\/file=/ {
    split($1, p, "/"); f = substr(p[2], 6); d = substr(p[3], 9); sub(/-[0-9]+$/, "", d)
    for (i = 2; i <= NF; i++) if ($(i+1) == "events/s") v = $i
    n = ++cnt[f "|" d]; val[f "|" d, n] = v; files[f] = 1
  }
  function median(k,   n, i, j, t, a) {
    n = cnt[k]; for (i = 1; i <= n; i++) a[i] = val[k, i]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    printf "%-55s %14s %14s %14s %7s %9s\n", "file", "clrdiag ev/s", "peer ev/s", "parallel ev/s", "ratio", "parallel"
    for (f in files) {
      c = median(f "|clrdiag"); q = median(f "|peer"); par = median(f "|clrdiag-parallel")
      printf "%-55s %14.0f %14.0f %14.0f %6.2fx %8.2fx\n", f, c, q, par, c / q, par / q
    }
  }' "$out"

if [ "${CALLGRIND:-}" = 1 ]; then
  if ! command -v valgrind >/dev/null; then
    echo "CALLGRIND=1: valgrind is not installed" >&2
    exit 1
  fi
  GOFLAGS=-mod=mod go build -o "$tmp/decode" ./driver
  ir() { # decoder passes file -> "instructions events"
    GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
      "$tmp/decode" -decoder "$1" -passes "$2" "$3" 2>&1 | awk '/Collected/ {ir = $4} /^[0-9]+$/ {ev = $1} END {print ir, ev}'
  }
  echo
  echo "instructions per decode (callgrind; Ir(N+1 decodes) - Ir(1), over N); ratio = peer / clrdiag"
  printf "%-55s %9s %13s %13s %10s %10s %7s\n" file events "clrdiag Ir" "peer Ir" "clr Ir/ev" "peer Ir/ev" ratio
  for f in "${files[@]}"; do
    case "$f" in *.zip) continue ;; esac # the driver reads plain files
    sz=$(stat -c %s "$f")
    n=$(( sz > 8000000 ? 1 : (sz > 1000000 ? 4 : (sz > 100000 ? 20 : 200)) ))
    if ! "$tmp/decode" -decoder peer "$f" >/dev/null 2>&1; then
      printf "%-55s (the peer cannot decode it)\n" "$(basename "$f")"
      continue
    fi
    read -r c1 ev < <(ir clrdiag 1 "$f"); read -r cn _ < <(ir clrdiag $((n + 1)) "$f")
    read -r p1 _ < <(ir peer 1 "$f"); read -r pn _ < <(ir peer $((n + 1)) "$f")
    c=$(( (cn - c1) / n )); p=$(( (pn - p1) / n ))
    awk -v f="$(basename "$f")" -v ev="$ev" -v c="$c" -v p="$p" 'BEGIN {
      printf "%-55s %9d %13.0f %13.0f %10.1f %10.1f %6.2fx\n", f, ev, c, p, c / ev, p / ev, p / c }'
  done
fi
