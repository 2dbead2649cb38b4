#!/usr/bin/env bash
# bench-compare.sh: clrdiag side by side with other tools, as ratios.
#
#   scripts/bench-compare.sh PEER_DIR [TRACE_FILE...]
#   scripts/bench-compare.sh --microsoft [TRACE_FILE...]
#
# --microsoft compares clrdiag with Microsoft's own tools (dotnet-trace,
# dotnet-gcdump) on the same files and the same live processes; see
# microsoft_compare below and README.md "Measured against Microsoft's tools".
#
# With PEER_DIR it decodes the same trace files with clrdiag's nettrace
# package and with a peer Go decoder, side by side in one benchmark run.
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

# microsoft_compare [TRACE_FILE...]: clrdiag against Microsoft's tools, on
# one .NET runtime (RT, default 8; the dotnet roots, tools and csc that
# ../shared/runtimes/install.sh unpacks, under $CLRDIAG_CACHE/runtimes or
# $RUNTIMES). It builds clrdiag and the Hot, Heap and Web test targets
# (csc, in a temporary directory), then measures, alternating the tools
# round by round so that the machine's load drifts over both alike:
#
#   1. convert: 'clrdiag trace convert --format speedscope' and
#      'dotnet-trace convert --format speedscope' of the same file (a 3 s
#      CPU trace of the Hot target, or each TRACE_FILE), CONVERT_RUNS
#      rounds (default 5): median wall time, max RSS, ratio.
#   2. gcdump: 'clrdiag gcdump collect' and 'dotnet-gcdump collect' of the
#      same live Heap target (grown by GCDUMP_OBJECTS objects, default
#      200000): the first collection of each apart (dotnet-gcdump's first
#      session in a process is slow), then GCDUMP_RUNS rounds (default 5).
#   3. web: requests/s of the Web target (GET /, wrk with WRK_THREADS=2
#      threads, WRK_CONNECTIONS=16 connections for WRK_DURATION=10s) with no
#      tracer, while 'clrdiag trace collect' traces it and while
#      'dotnet-trace collect' does (both with their default providers: CPU
#      samples and the runtime's default keywords), WEB_ROUNDS rounds
#      (default 5), the three conditions in turn within each round. The
#      tracer is started, its session awaited (its file growing), wrk run,
#      the tracer stopped with SIGINT. Reported: median requests/s and the
#      spread (min-max) per condition, the median's ratio to no tracer, and
#      each tracer's CPU seconds and max RSS (GNU time) per round.
#
# Ratios are Microsoft's time / clrdiag's (above 1: clrdiag is faster) and
# traced / untraced requests/s. The load average is printed before and
# after: on a shared machine, compare ratios from one run, not across runs.
microsoft_compare() {
  local root rtdir rt tools csc host shared asp clr
  root=$(cd "$(dirname "$0")/.." && pwd)
  rtdir=${RUNTIMES:-${CLRDIAG_CACHE:-$root/.cache}/runtimes}
  rt=${RT:-8}
  host=$(ls -d "$rtdir"/dotnet-"$rt".* 2>/dev/null | sort -V | tail -1)
  tools=$rtdir/tools
  csc=$rtdir/csc/csc.dll
  local csc_host
  csc_host=$(ls -d "$rtdir"/dotnet-1[0-9].* 2>/dev/null | sort -V | tail -1)
  for need in "$host/dotnet" "$tools/dotnet-trace/dotnet-trace.dll" "$tools/dotnet-gcdump/dotnet-gcdump.dll" "$csc" "$csc_host/dotnet"; do
    if [ ! -e "$need" ]; then
      echo "bench-compare --microsoft: $need is missing (run ../shared/runtimes/install.sh $rtdir, or set RUNTIMES)" >&2
      exit 2
    fi
  done
  for cmd in wrk /usr/bin/time; do
    command -v "$cmd" >/dev/null || { echo "bench-compare --microsoft: $cmd is missing (Debian: apt-get install wrk time)" >&2; exit 2; }
  done
  shared=$(ls -d "$host"/shared/Microsoft.NETCore.App/"$rt".* | sort -V | tail -1)
  asp=$(ls -d "$host"/shared/Microsoft.AspNetCore.App/"$rt".* | sort -V | tail -1)
  # tmp and pids are global: the EXIT trap runs after this function returns.
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/clrdiag-bench-ms.XXXXXX")
  pids=()
  # shellcheck disable=SC2317 # called by the trap
  cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    if [ "${KEEP:-}" = 1 ]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
  }
  trap cleanup EXIT

  echo "== clrdiag against Microsoft's tools on .NET $(basename "$shared") ($(nproc) cores)"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  clr=$tmp/clrdiag
  (cd "$root" && go build -o "$clr" ./cmd/clrdiag)
  export DOTNET_ROOT=$host DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1
  # Microsoft's tools are built for net8.0: they roll forward to RT.
  local ms=(env DOTNET_ROLL_FORWARD=Major "$host/dotnet")

  # Build a target: csc against the runtime's assemblies (and ASP.NET
  # Core's for Web), with a runtimeconfig naming the runtime.
  build() {
    local name=$1 refs=() fws
    for f in "$shared"/*.dll; do case $(basename "$f") in Microsoft.VisualBasic*|mscordaccore*|mscordbi*) ;; *) refs+=("-r:$f") ;; esac; done
    fws='"framework":{"name":"Microsoft.NETCore.App","version":"'$rt'.0.0"}'
    if [ "$name" = Web ]; then
      for f in "$asp"/*.dll; do refs+=("-r:$f"); done
      fws='"frameworks":[{"name":"Microsoft.NETCore.App","version":"'$rt'.0.0"},{"name":"Microsoft.AspNetCore.App","version":"'$rt'.0.0"}]'
    fi
    DOTNET_ROLL_FORWARD=Major "$csc_host/dotnet" "$csc" -nologo -nostdlib -noconfig -unsafe -optimize+ -langversion:latest \
      -nowarn:1701,1702,8632 -target:exe -out:"$tmp/$name.dll" "${refs[@]}" "$root/testdata/targets/$name.cs" >/dev/null
    printf '{"runtimeOptions":{"tfm":"net%s.0",%s,"configProperties":{"System.Globalization.Invariant":true}}}\n' "$rt" "$fws" >"$tmp/$name.runtimeconfig.json"
  }
  for t in Hot Heap Web; do build "$t"; done

  # start NAME: runs a target with a FIFO on stdin (kept open) and waits for
  # its READY line; sets PID and LINE.
  start() {
    local name=$1 fifo=$tmp/$1.in out=$tmp/$1.out
    rm -f "$fifo" && mkfifo "$fifo"
    "$host/dotnet" "$tmp/$name.dll" <"$fifo" >"$out" 2>&1 &
    PID=$!
    pids+=("$PID")
    exec {FIFO}>"$fifo"
    for _ in $(seq 600); do
      LINE=$(grep -m1 '^READY' "$out" || true)
      [ -n "$LINE" ] && return 0
      sleep 0.1
    done
    echo "bench-compare: $name did not start:" >&2; cat "$out" >&2; exit 1
  }
  # timed CMD...: runs CMD under GNU time; prints "wall_s rss_kb cpu_s".
  timed() {
    /usr/bin/time -f '%e %M %U %S' -o "$tmp/time" "$@" >/dev/null 2>"$tmp/stderr" || {
      echo "bench-compare: failed: $*" >&2; cat "$tmp/stderr" >&2; exit 1; }
    awk '{printf "%s %s %.2f\n", $1, $2, $3 + $4}' "$tmp/time"
  }
  median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }

  # --- 1. speedscope conversion ---------------------------------------------
  local traces=("$@")
  if [ ${#traces[@]} -eq 0 ]; then
    start Hot
    "$clr" trace collect -p "$PID" --profile cpu-sampling --duration 3s -o "$tmp/hot.nettrace" --quiet
    kill "$PID"; exec {FIFO}>&-
    traces=("$tmp/hot.nettrace")
  fi
  echo
  echo "-- 1. trace convert --format speedscope vs dotnet-trace convert --format speedscope (${CONVERT_RUNS:-5} rounds, median)"
  printf '%-32s %9s %14s %12s %16s %12s %7s\n' file size "clrdiag s" "clrdiag RSS" "dotnet-trace s" "its RSS" ratio
  for f in "${traces[@]}"; do
    : >"$tmp/c1"; : >"$tmp/c2"
    for _ in $(seq "${CONVERT_RUNS:-5}"); do
      rm -f "$tmp"/clr.speedscope.json "$tmp"/ms.speedscope.json
      timed "$clr" trace convert "$f" --format speedscope -o "$tmp/clr.speedscope.json" >>"$tmp/c1"
      timed "${ms[@]}" "$tools/dotnet-trace/dotnet-trace.dll" convert --format speedscope -o "$tmp/ms.json" "$f" >>"$tmp/c2"
    done
    local c m cr mr
    c=$(cut -d' ' -f1 "$tmp/c1" | median); m=$(cut -d' ' -f1 "$tmp/c2" | median)
    cr=$(cut -d' ' -f2 "$tmp/c1" | median); mr=$(cut -d' ' -f2 "$tmp/c2" | median)
    awk -v f="$(basename "$f")" -v sz="$(stat -c %s "$f")" -v c="$c" -v m="$m" -v cr="$cr" -v mr="$mr" 'BEGIN {
      printf "%-32s %7.0fKB %14.3f %10.0fMB %16.3f %10.0fMB %6.1fx\n", f, sz / 1024, c, cr / 1024, m, mr / 1024, m / (c > 0 ? c : 0.001) }'
    echo "  rounds (s): clrdiag $(cut -d' ' -f1 "$tmp/c1" | tr '\n' ' ')| dotnet-trace $(cut -d' ' -f1 "$tmp/c2" | tr '\n' ' ')"
  done

  # --- 2. gcdump collect -----------------------------------------------------
  echo
  echo "-- 2. gcdump collect vs dotnet-gcdump collect, same live Heap target grown by ${GCDUMP_OBJECTS:-200000} objects"
  start Heap
  echo "grow ${GCDUMP_OBJECTS:-200000}" >&"$FIFO"
  for _ in $(seq 600); do grep -q '^GROWN' "$tmp/Heap.out" && break; sleep 0.1; done
  local first1 first2
  rm -f "$tmp"/*.gcdump
  first1=$(timed "$clr" gcdump collect -p "$PID" -o "$tmp/clr.gcdump")
  first2=$(timed "${ms[@]}" "$tools/dotnet-gcdump/dotnet-gcdump.dll" collect -p "$PID" -o "$tmp/ms.gcdump")
  : >"$tmp/g1"; : >"$tmp/g2"
  for _ in $(seq "${GCDUMP_RUNS:-5}"); do
    rm -f "$tmp"/*.gcdump
    timed "$clr" gcdump collect -p "$PID" -o "$tmp/clr.gcdump" >>"$tmp/g1"
    timed "${ms[@]}" "$tools/dotnet-gcdump/dotnet-gcdump.dll" collect -p "$PID" -o "$tmp/ms.gcdump" >>"$tmp/g2"
  done
  kill "$PID"; exec {FIFO}>&-
  local g1 g2 r1 r2
  g1=$(cut -d' ' -f1 "$tmp/g1" | median); g2=$(cut -d' ' -f1 "$tmp/g2" | median)
  r1=$(cut -d' ' -f2 "$tmp/g1" | median); r2=$(cut -d' ' -f2 "$tmp/g2" | median)
  printf '%-16s %12s %12s %12s\n' "" "first s" "median s" "median RSS"
  printf '%-16s %12s %12.3f %10.0fMB\n' clrdiag "${first1%% *}" "$g1" "$(echo "$r1 / 1024" | bc -l)"
  printf '%-16s %12s %12.3f %10.0fMB\n' dotnet-gcdump "${first2%% *}" "$g2" "$(echo "$r2 / 1024" | bc -l)"
  awk -v a="$g1" -v b="$g2" -v fa="${first1%% *}" -v fb="${first2%% *}" 'BEGIN {
    printf "ratio (dotnet-gcdump / clrdiag): %.2fx median, %.2fx first collection\n", b / a, fb / fa }'
  echo "rounds (s): clrdiag $(cut -d' ' -f1 "$tmp/g1" | tr '\n' ' ')| dotnet-gcdump $(cut -d' ' -f1 "$tmp/g2" | tr '\n' ' ')"

  # --- 3. requests/s while traced ---------------------------------------------
  echo
  local dur=${WRK_DURATION:-10s} conns=${WRK_CONNECTIONS:-16} threads=${WRK_THREADS:-2} rounds=${WEB_ROUNDS:-5}
  echo "-- 3. Web target GET / requests/s: wrk -t$threads -c$conns -d$dur, $rounds rounds of (none, clrdiag, dotnet-trace)"
  start Web
  local url
  url=$(echo "$LINE" | awk '{print $3}')
  wrk -t"$threads" -c"$conns" -d3s "$url/" >/dev/null # warm up (JIT, tiering)
  : >"$tmp/w.none"; : >"$tmp/w.clrdiag"; : >"$tmp/w.dotnet-trace"; : >"$tmp/u.clrdiag"; : >"$tmp/u.dotnet-trace"
  rps() { wrk -t"$threads" -c"$conns" -d"$dur" "$url/" | awk '/^Requests\/sec:/ {print $2}'; }
  # traced TOOL: starts TOOL tracing the Web target, waits for its file to
  # grow, runs wrk, stops TOOL with SIGINT; appends requests/s and TOOL's
  # "cpu_s rss_kb".
  traced() {
    local tool=$1 out=$tmp/web-$1.nettrace pattern
    rm -f "$out"
    # Job control on: a background job of a script otherwise starts with
    # SIGINT ignored, and .NET keeps it so (dotnet-trace would not stop).
    set -m
    if [ "$tool" = clrdiag ]; then
      pattern="$clr trace collect -p $PID"
      /usr/bin/time -f '%U %S %M' -o "$tmp/time.$tool" "$clr" trace collect -p "$PID" -o "$out" --quiet >/dev/null 2>&1 &
    else
      # dotnet-trace stops at the end of its input: give it one that
      # stays open (a FIFO this shell holds).
      pattern="dotnet-trace.dll collect -p $PID"
      rm -f "$tmp/dt.in" && mkfifo "$tmp/dt.in"
      exec {DTIN}<>"$tmp/dt.in"
      DOTNET_ROLL_FORWARD=Major /usr/bin/time -f '%U %S %M' -o "$tmp/time.$tool" "$host/dotnet" "$tools/dotnet-trace/dotnet-trace.dll" \
        collect -p "$PID" -o "$out" <"$tmp/dt.in" >/dev/null 2>&1 &
    fi
    set +m
    local tp=$!
    for _ in $(seq 600); do [ -s "$out" ] && break; sleep 0.1; done
    if [ ! -s "$out" ]; then
      echo "bench-compare: $tool wrote nothing in 60 s" >&2; kill "$tp" 2>/dev/null; exit 1
    fi
    sleep 1 # the providers are enabled a moment after the stream starts
    rps >>"$tmp/w.$tool"
    # GNU time ignores SIGINT while it waits: signal the tool itself.
    { pgrep -f "$pattern" || true; } | xargs -r kill -INT
    wait "$tp" || true
    [ "$tool" = clrdiag ] || exec {DTIN}>&-
    awk '{printf "%.2f %s\n", $1 + $2, $3}' "$tmp/time.$tool" >>"$tmp/u.$tool"
  }
  for _ in $(seq "$rounds"); do
    rps >>"$tmp/w.none"
    traced clrdiag
    traced dotnet-trace
  done
  kill "$PID"; exec {FIFO}>&-
  local base
  base=$(median <"$tmp/w.none")
  printf '%-14s %12s %20s %10s %14s %12s\n' condition "median rps" "spread (min-max)" "vs none" "tracer CPU s" "tracer RSS"
  for c in none clrdiag dotnet-trace; do
    local med lo hi cpu rss
    med=$(median <"$tmp/w.$c"); lo=$(sort -g "$tmp/w.$c" | head -1); hi=$(sort -g "$tmp/w.$c" | tail -1)
    cpu=-; rss=-
    if [ "$c" != none ]; then cpu=$(cut -d' ' -f1 "$tmp/u.$c" | median); rss=$(cut -d' ' -f2 "$tmp/u.$c" | median); rss=$(awk -v r="$rss" 'BEGIN {printf "%.0fMB", r / 1024}'); fi
    awk -v c="$c" -v m="$med" -v lo="$lo" -v hi="$hi" -v b="$base" -v cpu="$cpu" -v rss="$rss" 'BEGIN {
      printf "%-14s %12.0f %9.0f-%-10.0f %9.1f%% %14s %12s\n", c, m, lo, hi, 100 * m / b, cpu, rss }'
  done
  echo "rounds (requests/s): none $(tr '\n' ' ' <"$tmp/w.none")| clrdiag $(tr '\n' ' ' <"$tmp/w.clrdiag")| dotnet-trace $(tr '\n' ' ' <"$tmp/w.dotnet-trace")"
  echo
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
}

if [ "${1:-}" = --microsoft ]; then
  shift
  microsoft_compare "$@"
  exit
fi
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'
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
