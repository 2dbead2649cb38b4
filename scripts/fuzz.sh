#!/usr/bin/env bash
# Runs every native fuzz target of the module, one after the other, for
# FUZZTIME each (default 30s), with -parallel ${FUZZPARALLEL:-1} so a shared
# machine stays usable. Prints, per target, the inputs tried and new
# interesting inputs; a failure leaves the crasher in the package's
# testdata/fuzz/FuzzX/ (add it to the corpus with the fix) and exits 1.
# Minimizing a new interesting input is capped at FUZZMINIMIZETIME (default
# 200x, runs): with Go's 60s default a target with large seeds (profile,
# gcdump) spends its whole budget minimizing (13 inputs fuzzed in 30s
# instead of 339,000), and those runs are not counted. A failing target's
# whole output is kept in $TMPDIR/clrdiag-fuzz-TARGET.log. "fuzzing process
# hung or terminated unexpectedly: exit status 2" with nothing else is Go's
# own limit: one input ran longer than 10 s (the worker panics unseen).
#   FUZZTIME=2m scripts/fuzz.sh            # all targets
#   scripts/fuzz.sh ./nettrace ./profile   # some packages
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-30s}"
pkgs=("$@")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(./...)
status=0
total=0
while read -r pkg; do
  dir=${pkg#github.com/clrdiag/clrdiag}
  dir=".${dir}"
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "${FUZZMINIMIZETIME:-200x}" -parallel "${FUZZPARALLEL:-1}" "$dir" 2>&1)
    rc=$?
    last=$(printf '%s\n' "$out" | grep -E 'fuzz: elapsed: .*execs: ' | tail -1)
    execs=$(printf '%s\n' "$last" | sed -E 's/.*execs: ([0-9]+).*/\1/')
    total=$((total + ${execs:-0}))
    if [ $rc -ne 0 ]; then
      status=1
      printf 'FAIL %-28s %-26s %s\n' "$dir" "$target" "$last"
      printf '%s\n' "$out" | grep -vE 'fuzz: elapsed' | tail -30 | cut -c1-300
      log="${TMPDIR:-/tmp}/clrdiag-fuzz-${target}.log"
      printf '%s\n' "$out" > "$log" && echo "  (whole output: $log)"
    else
      printf 'ok   %-28s %-26s %s\n' "$dir" "$target" "${last#*fuzz: }"
    fi
  done
done < <(go list "${pkgs[@]}")
echo "inputs tried in total: $total"
exit $status
