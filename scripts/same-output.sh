#!/usr/bin/env bash
# same-output.sh: check that two clrdiag binaries write byte-identical
# output for every offline command on every capture.
#
#   scripts/same-output.sh OLD_BINARY NEW_BINARY [CAPTURE_DIR...]
#
# For a refactoring that must not change behaviour: build the binary of the
# base commit and of the change (go build -o /tmp/old ./cmd/clrdiag), then
# run this. It runs, with each binary, on every .nettrace and
# .nettrace.zip/.netperf.zip under the capture directories (default
# testdata/captures and $CLRDIAG_CAPTURES):
#   trace convert -f FORMAT --sample MEASURE   (every format x measure)
#   trace report, trace report --json           (and --sample for each)
#   trace report --inclusive / --include-waiting / --managed-only
# and on every .gcdump(.gz) under gcdump/testdata:
#   gcdump report (--json, --sort retained), gcdump convert -f FORMAT
# comparing standard output, standard error and the exit status. A
# command that fails must fail alike with both. Prints one line per
# difference and a count; exits 1 when anything differs.
set -euo pipefail

if [ $# -lt 2 ]; then
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
old=$(realpath "$1")
new=$(realpath "$2")
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  dirs=("$root/testdata/captures")
  [ -n "${CLRDIAG_CAPTURES:-}" ] && dirs+=("$CLRDIAG_CAPTURES")
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Unzip each capture once (the commands read a plain nettrace).
# The same file under two directories is run once.
captures=()
declare -A seen
while IFS= read -r -d '' f; do
  sum=$(md5sum <"$f" | cut -c1-32)
  [ -n "${seen[$sum]:-}" ] && continue
  seen[$sum]=1
  case $f in
  *.zip)
    out="$work/in/$(echo "$f" | md5sum | cut -c1-8)-$(basename "${f%.zip}")"
    mkdir -p "$work/in"
    unzip -p "$f" >"$out"
    captures+=("$out")
    ;;
  *) captures+=("$f") ;;
  esac
done < <(find "${dirs[@]}" -type f \( -name '*.nettrace' -o -name '*.nettrace.zip' -o -name '*.netperf.zip' \) -print0 | sort -z)

gcdumps=()
while IFS= read -r -d '' f; do
  out="$work/in/$(echo "$f" | md5sum | cut -c1-8)-$(basename "${f%.gz}")"
  mkdir -p "$work/in"
  gunzip -c "$f" >"$out"
  gcdumps+=("$out")
done < <(find "$root/gcdump/testdata" -type f -name '*.gcdump.gz' -print0 | sort -z)

formats=$("$new" trace convert --help | sed -n 's/.*-f, --format string *\([a-z, ]*\) (default.*/\1/p' | tr -d ,)
measures=$("$new" trace convert --help | sed -n 's/^ *--sample \([a-z]*\) .*/\1/p')
[ -n "$formats" ] && [ -n "$measures" ] || { echo "cannot read the formats or measures from $new's help" >&2; exit 2; }

runs=0
diffs=0
# check NAME ARGS...: run both binaries with ARGS (output to standard
# output), compare stdout, stderr and status.
check() {
  local name=$1
  shift
  local o="$work/o" n="$work/n"
  local so=0 sn=0
  (cd "$work" && "$old" "$@" >"$o.out" 2>"$o.err") || so=$?
  (cd "$work" && "$new" "$@" >"$n.out" 2>"$n.err") || sn=$?
  runs=$((runs + 1))
  if [ $so -ne $sn ] || ! cmp -s "$o.out" "$n.out" || ! cmp -s "$o.err" "$n.err"; then
    diffs=$((diffs + 1))
    echo "DIFFERS: $name: $* (status $so vs $sn)"
  fi
}

for c in "${captures[@]}"; do
  b=$(basename "$c")
  for m in $measures; do
    for f in $formats; do
      check "$b" trace convert "$c" -f "$f" --sample "$m" -o -
    done
    check "$b" trace report "$c" --sample "$m"
    check "$b" trace report "$c" --sample "$m" --json
  done
  check "$b" trace convert "$c" -f speedscope --managed-only -o -
  check "$b" trace report "$c" --inclusive --top 5
  check "$b" trace report "$c" --include-waiting
  check "$b" trace report "$c" --managed-only --json
  check "$b" trace stats "$c"
done
for g in "${gcdumps[@]}"; do
  b=$(basename "$g")
  check "$b" gcdump report "$g"
  check "$b" gcdump report "$g" --json
  check "$b" gcdump report "$g" --sort retained --top 10
  for f in pprof folded speedscope; do
    check "$b" gcdump convert "$g" --format "$f" -o -
  done
done
echo "same-output: ${#captures[@]} captures, ${#gcdumps[@]} heap snapshots, $runs commands, $diffs differ"
[ $diffs -eq 0 ]
