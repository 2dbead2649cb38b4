#!/usr/bin/env bash
# Runs the whole clrdiag test suite on a fresh machine. It installs what the
# tests need when it is absent (the real .NET Core 3.1 runtime from npm into
# .cache/, Debian's mono-mcs to compile the C# test targets, Debian's
# prometheus and jq to check /metrics and the counters files in their
# consumers and to receive remote write, staticcheck; an OpenTelemetry
# Collector and an S3 server built from the Go module proxy),
# checks formatting and lints, cross-compiles for windows and darwin, and runs
# every Go test, the real-runtime integration tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache="${CLRDIAG_CACHE:-$root/.cache}"
mkdir -p "$cache"

step() { printf '\n== %s\n' "$*"; }

# --- the real runtime -------------------------------------------------------
rt_version=3.1.1007 # npm package version; it carries Microsoft.NETCore.App 3.1.2
rt_dir="$cache/dotnet-3.1"
if [ ! -x "$rt_dir/package/dotnet" ]; then
  step "installing .NET Core 3.1 runtime (npm dotnet-3.1-linux-x64@$rt_version) into $rt_dir"
  rm -rf "$rt_dir.tmp" && mkdir -p "$rt_dir.tmp"
  if (cd "$rt_dir.tmp" && npm pack --silent "dotnet-3.1-linux-x64@$rt_version" >/dev/null &&
      tar xzf dotnet-3.1-linux-x64-*.tgz && rm -f dotnet-3.1-linux-x64-*.tgz); then
    rm -rf "$rt_dir" && mv "$rt_dir.tmp" "$rt_dir"
  else
    echo "WARNING: could not install the .NET Core 3.1 runtime; real-runtime tests will skip (or fail under CI=true)" >&2
    rm -rf "$rt_dir.tmp"
  fi
fi
if [ -x "$rt_dir/package/dotnet" ]; then
  export CLRDIAG_DOTNET="$rt_dir/package/dotnet"
fi

# --- .NET 8, 10 and 11, Microsoft's diagnostic tools and Roslyn's csc ----------
# No NuGet feed is reachable here, so they come as archives in
# ../shared/runtimes (CLRDIAG_SHARED_RUNTIMES), unpacked into $cache/runtimes
# (about 13 s, once). internal/dotnettest also takes the user's own runtimes
# (CLRDIAG_DOTNET_ROOTS, `dotnet` on PATH) before these.
shared_rt="${CLRDIAG_SHARED_RUNTIMES:-$root/../shared/runtimes}"
if [ -x "$shared_rt/install.sh" ]; then
  if ! ls "$cache"/runtimes/*/.ok >/dev/null 2>&1 || [ "$(ls "$cache"/runtimes/*/.ok | wc -l)" -lt 5 ]; then
    step "unpacking .NET 8/10/11, Microsoft's tools and csc from $shared_rt into $cache/runtimes"
  fi
  if ! bash "$shared_rt/install.sh" "$cache/runtimes" >/dev/null; then
    echo "WARNING: could not unpack $shared_rt; the .NET 8/10/11 tests will skip (or fail under CI=true)" >&2
  fi
else
  echo "note: no $shared_rt/install.sh: the .NET 8/10/11 tests will skip (or fail under CI=true) unless CLRDIAG_DOTNET_ROOTS or dotnet on PATH has them" >&2
fi

# --- Debian packages: mono-mcs (the C# compiler for the test targets),
# chromium (the browser tests of the profile viewer, the dashboard and the
# Chromium export), prometheus (promtool and the server) and jq (consumers of
# /metrics and of counters --format json). One apt-get run for all missing.
apt_pkgs=()
command -v mcs >/dev/null 2>&1 || apt_pkgs+=(mono-mcs)
if [ -z "${CLRDIAG_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  apt_pkgs+=(chromium)
fi
{ command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; } || apt_pkgs+=(prometheus)
command -v jq >/dev/null 2>&1 || apt_pkgs+=(jq)
if [ ${#apt_pkgs[@]} -gt 0 ]; then
  step "installing Debian packages: ${apt_pkgs[*]}"
  sudo_cmd=""
  [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  if ! { $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${apt_pkgs[@]}" >/dev/null; }; then
    echo "WARNING: could not install ${apt_pkgs[*]}; the tests that need them will skip (or fail under CI=true)" >&2
  fi
fi

# --- speedscope's file format schema (checks the speedscope exports) -----------
ss_version=1.25.0
ss_dir="$cache/speedscope"
if [ ! -f "$ss_dir/package/dist/release/file-format-schema.json" ]; then
  step "unpacking the npm package speedscope@$ss_version (its file-format-schema.json) into $ss_dir"
  rm -rf "$ss_dir.tmp" && mkdir -p "$ss_dir.tmp"
  if (cd "$ss_dir.tmp" && npm pack --silent "speedscope@$ss_version" >/dev/null &&
      tar xzf speedscope-*.tgz && rm -f speedscope-*.tgz); then
    rm -rf "$ss_dir" && mv "$ss_dir.tmp" "$ss_dir"
  else
    echo "WARNING: could not fetch speedscope; the speedscope schema checks will skip (or fail under CI=true)" >&2
    rm -rf "$ss_dir.tmp"
  fi
fi

# --- ajv (validates the speedscope exports against speedscope's own schema) ----
ajv_version=8.20.0
if [ ! -f "$cache/npm/node_modules/ajv/package.json" ]; then
  step "installing the npm package ajv@$ajv_version into $cache/npm"
  mkdir -p "$cache/npm"
  if ! npm install --silent --no-audit --no-fund --prefix "$cache/npm" "ajv@$ajv_version" >/dev/null; then
    echo "WARNING: could not install ajv; the ajv schema checks will skip (or fail under CI=true)" >&2
  fi
fi
export CLRDIAG_CACHE="$cache"

# --- the C compiler for the test profiler -------------------------------------
command -v gcc >/dev/null 2>&1 || echo "WARNING: gcc not found; the profiler attach tests need it" >&2

# --- captures that are not committed ------------------------------------------
# testdata/captures holds the small public captures; larger ones and those
# without a redistribution licence are read from CLRDIAG_CAPTURES (see
# testdata/captures/README.md). Beside a checkout that has the shared
# captures, use them.
if [ -z "${CLRDIAG_CAPTURES:-}" ] && [ -d "$root/../shared/captures" ]; then
  export CLRDIAG_CAPTURES="$(cd "$root/../shared/captures" && pwd)"
fi
if [ -n "${CLRDIAG_CAPTURES:-}" ]; then
  echo "captures beyond testdata/captures: $CLRDIAG_CAPTURES"
else
  echo "note: CLRDIAG_CAPTURES is not set; the tests that need the large or unlicensed captures skip"
fi

# --- real components for the egress and telemetry tests ----------------------
# An OpenTelemetry Collector (the collector builder) and an S3 server
# (versitygw), built into $cache/components by scripts/build-components.sh
# when absent. They build in the background while the static checks run;
# the tests wait for them (internal/realcomp) and fail under CI=true
# without them.
components_log="$cache/components-build.log"
step "building the real components in the background (log: $components_log)"
bash scripts/build-components.sh >"$components_log" 2>&1 &
components_pid=$!

# --- static checks ------------------------------------------------------------
step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed on:" >&2; echo "$unformatted" >&2; exit 1
fi

step "go vet"
go vet ./...

step "staticcheck"
go tool staticcheck ./...

step "cross-compile (windows/amd64, darwin/arm64, 32-bit linux/386 and linux/arm)"
GOOS=windows GOARCH=amd64 go build ./...
GOOS=windows GOARCH=amd64 go vet ./...
GOOS=darwin GOARCH=arm64 go build ./...
GOOS=darwin GOARCH=arm64 go vet ./...
# 32-bit targets (.NET runs on linux-arm): int is 32 bits there.
GOOS=linux GOARCH=386 go vet ./...
GOOS=linux GOARCH=arm go build ./...

# --- tests ---------------------------------------------------------------------
step "waiting for the real components"
if wait "$components_pid"; then
  cat "$components_log"
else
  cat "$components_log" >&2
  if [ "${CI:-}" = true ]; then
    echo "building the real components failed (CI=true)" >&2; exit 1
  fi
  echo "WARNING: building the real components failed; the egress and telemetry tests that need them will skip" >&2
fi

# The live tests run on .NET Core 3.1, 8 and 11 in full and on .NET 10 as a
# smoke subset (the tests that use dotnettest.ForEachSmoke): the full suite
# on 10 too would add about 70 s to the run (measured at a load average of
# 13-17 on two cores: 260 s for the live packages against 330 s). Set
# CLRDIAG_RUNTIMES and CLRDIAG_SMOKE_RUNTIMES to choose otherwise
# (CLRDIAG_RUNTIMES=3,8,10,11 CLRDIAG_SMOKE_RUNTIMES= runs everything on
# every runtime).
export CLRDIAG_RUNTIMES="${CLRDIAG_RUNTIMES-3,8,11}"
export CLRDIAG_SMOKE_RUNTIMES="${CLRDIAG_SMOKE_RUNTIMES-10}"
step "go test (live tests on .NET ${CLRDIAG_RUNTIMES:-every runtime}${CLRDIAG_SMOKE_RUNTIMES:+, smoke subset on $CLRDIAG_SMOKE_RUNTIMES})"
go test -count=1 -timeout 20m ${CLRDIAG_TEST_FLAGS:-} ./...

# The race detector on the packages where goroutines meet: transports and
# the reverse server, the client, the fake runtime, sessions (eventpipe,
# counters, stacks, gcdump), the monitor (HTTP server, /metrics collector)
# and the CLI. It needs cgo and a C compiler; the decoders (nettrace,
# clrevents, profile) run single-threaded and are left out for CI's time
# budget (whole suite under 15 minutes on 2 cores).
race_pkgs=(./transport/... ./diag ./ipctest ./eventpipe ./counters ./stacks/... ./gcdump ./monitor
  ./internal/cli ./internal/safefile ./internal/termsafe)
# The race detector looks at clrdiag's goroutines, which do the same on
# every runtime: the live tests run on 3.1 and 11 only here
# (CLRDIAG_RACE_RUNTIMES).
if [ "$(go env CGO_ENABLED)" = 1 ] && command -v gcc >/dev/null 2>&1; then
  step "go test -race (${race_pkgs[*]}; live tests on .NET ${CLRDIAG_RACE_RUNTIMES:-3,11})"
  CLRDIAG_RUNTIMES="${CLRDIAG_RACE_RUNTIMES:-3,11}" CLRDIAG_SMOKE_RUNTIMES= \
    go test -race -count=1 -timeout 20m ${CLRDIAG_TEST_FLAGS:-} "${race_pkgs[@]}"
elif [ "${CI:-}" = true ]; then
  echo "the race detector needs cgo and gcc (CI=true): install gcc" >&2; exit 1
else
  echo "WARNING: skipping go test -race: it needs cgo and gcc" >&2
fi

step "benchmarks (smoke run, one iteration each)"
go test -count=1 -short -run '^$' -bench . -benchtime 1x ./... >/dev/null

echo
echo "all checks passed"
