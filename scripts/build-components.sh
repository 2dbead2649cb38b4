#!/usr/bin/env bash
# Builds the real third-party components that the egress and telemetry tests
# start (internal/realcomp) into $CLRDIAG_CACHE/components (default
# .cache/components), each only when it is absent or its version changed:
#   - otelcol: an OpenTelemetry Collector with the OTLP receiver and the
#     debug exporter, built by the collector's own builder from
#     scripts/components/otelcol-builder.yaml;
#   - versitygw: an S3-compatible object store (posix backend), built from
#     the Go module proxy.
# Debian's prometheus is installed by scripts/test.sh with the other Debian
# packages. Every step prints how long it took; a failed build is an error.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache="${CLRDIAG_CACHE:-$root/.cache}"
dest="$cache/components"
mkdir -p "$dest"

otelcol_builder_version=v0.165.0 # keep every collector module at this release (see the manifest)
versitygw_version=v1.8.0

# stamp NAME VALUE: true when $dest/NAME exists and was built for VALUE.
built_for() { [ -x "$dest/$1" ] && [ "$(cat "$dest/$1.stamp" 2>/dev/null)" = "$2" ]; }

manifest=scripts/components/otelcol-builder.yaml
otelcol_stamp="builder $otelcol_builder_version, manifest $(sha256sum "$manifest" | cut -c1-16)"
if ! built_for otelcol "$otelcol_stamp"; then
  echo "building the OpenTelemetry Collector (builder $otelcol_builder_version, $manifest) into $dest/otelcol"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cp "$manifest" "$work/manifest.yaml"
  start=$(date +%s)
  (cd "$work" && go run "go.opentelemetry.io/collector/cmd/builder@$otelcol_builder_version" --config manifest.yaml >build.log 2>&1) || {
    tail -30 "$work/build.log" >&2; echo "the collector build failed" >&2; exit 1; }
  mv "$work/out/otelcol-clrdiag" "$dest/otelcol.tmp" && mv "$dest/otelcol.tmp" "$dest/otelcol"
  echo "$otelcol_stamp" >"$dest/otelcol.stamp"
  echo "built the OpenTelemetry Collector in $(($(date +%s) - start)) s ($(du -h "$dest/otelcol" | cut -f1))"
  rm -rf "$work"
  trap - EXIT
fi

if ! built_for versitygw "$versitygw_version"; then
  echo "building versitygw $versitygw_version into $dest/versitygw"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  start=$(date +%s)
  GOBIN="$work" go install "github.com/versity/versitygw/cmd/versitygw@$versitygw_version"
  mv "$work/versitygw" "$dest/versitygw.tmp" && mv "$dest/versitygw.tmp" "$dest/versitygw"
  echo "$versitygw_version" >"$dest/versitygw.stamp"
  echo "built versitygw in $(($(date +%s) - start)) s ($(du -h "$dest/versitygw" | cut -f1))"
  rm -rf "$work"
  trap - EXIT
fi
