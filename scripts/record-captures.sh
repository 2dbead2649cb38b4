#!/usr/bin/env bash
# record-captures.sh records the modern-runtime captures committed under
# testdata/captures/clrdiag/: testdata/targets/Workloads.cs (compiled by mcs
# against .NET Core 3.1's assemblies) launched on .NET 8, 10 and 11, traced
# from its start for a few seconds while it allocates (alloc-loop), throws
# (throw-loop) and waits on a contended lock (contend), with the default
# profile (dotnet-common + dotnet-sampled-thread-time) and with gc-verbose,
# once by clrdiag and once by Microsoft's dotnet-trace. Each file is zipped.
#
# usage: scripts/record-captures.sh [OUTDIR]   (default testdata/captures/clrdiag)
#
# Environment: RUNTIMES (default /work/cache/runtimes: dotnet-8.0.34,
# dotnet-10.0.15, dotnet-11.0.0 and tools/dotnet-trace, unpacked by
# ../shared/runtimes/install.sh), CLRDIAG_DOTNET (the .NET Core 3.1 host
# whose assemblies mcs compiles against), DURATION (default 3).
#
# The captures depend on timing; re-recording gives other files. After
# re-recording, update the SHA-256 sums in internal/testcapture.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/testdata/captures/clrdiag}
runtimes=${RUNTIMES:-/work/cache/runtimes}
dotnet31=${CLRDIAG_DOTNET:-$root/.cache/dotnet-3.1/package/dotnet}
duration=${DURATION:-3}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

shared31=$(ls -d "$(dirname "$dotnet31")"/shared/Microsoft.NETCore.App/* | tail -1)
refs=()
for a in System.Private.CoreLib System.Runtime System.Console System.Diagnostics.Tracing \
	System.Threading System.Threading.Thread System.Collections System.Diagnostics.Process \
	System.ComponentModel.Primitives System.Runtime.Extensions System.Threading.Tasks System.Linq \
	System.Collections.Concurrent System.Threading.ThreadPool System.Runtime.InteropServices; do
	refs+=("-r:$shared31/$a.dll")
done
mcs -nostdlib -noconfig -unsafe -nowarn:1702 -optimize+ -out:"$work/Workloads.dll" "${refs[@]}" \
	"$root/testdata/targets/Workloads.cs"
(cd "$root" && go build -o "$work/clrdiag" ./cmd/clrdiag)

# The target's commands: the loops run until the trace ends; stdin stays
# open until then, and its end makes the target exit.
commands() {
	printf 'alloc-loop\nthrow-loop\ncontend 3 20\nrelease\n'
	sleep $((duration + 3))
}

for v in 8 10 11; do
	host=$(ls -d "$runtimes"/dotnet-"$v".*/dotnet | tail -1)
	ver=$(basename "$(dirname "$host")")
	ver=${ver#dotnet-}
	cfg="{\"runtimeOptions\":{\"tfm\":\"net$v.0\",\"framework\":{\"name\":\"Microsoft.NETCore.App\",\"version\":\"$v.0.0\"},\"configProperties\":{\"System.Globalization.Invariant\":true}}}"
	printf '%s\n' "$cfg" >"$work/Workloads.runtimeconfig.json"
	for profile in default gc-verbose; do
		popt=()
		[[ $profile == default ]] || popt=(--profile "$profile")
		name=workloads-$ver-linux-x64-$profile
		echo "== $name (clrdiag)"
		commands | "$work/clrdiag" trace collect --quiet --show-child-io --force "${popt[@]}" \
			--duration "${duration}s" -o "$work/$name.clrdiag.nettrace" -- "$host" "$work/Workloads.dll" >/dev/null
		echo "== $name (dotnet-trace)"
		commands | DOTNET_ROLL_FORWARD=Major "$host" "$runtimes/tools/dotnet-trace/dotnet-trace.dll" collect \
			--show-child-io "${popt[@]}" --duration "00:00:00:0$duration" \
			-o "$work/$name.dotnet-trace.nettrace" -- "$host" "$work/Workloads.dll" >/dev/null
		for tool in clrdiag dotnet-trace; do
			f=$name.$tool.nettrace
			rm -f "$out/$f.zip"
			(cd "$work" && TZ=UTC touch -t 202601010000 "$f" && zip -q -X -9 "$out/$f.zip" "$f")
			ls -l "$out/$f.zip"
		done
	done
done
