#!/usr/bin/env bash
# Runs the non-slow suite SOAK_RUNS times in a row, with SOAK_HOG CPU hogs
# (stress-ng --cpu N) beside it when SOAK_HOG > 0, as on a noisy CI runner.
# Each run writes its artifacts to $ARTIFACTS/soak/<series>-<n>; the
# per-run times and outcomes go to $ARTIFACTS/soak/<series>.tsv and the
# console. Exits non-zero if any run failed.
#   hack/soak.sh [SOAK_RUNS=10] [SOAK_HOG=1] [LABEL_FILTER='!slow && !long && !extra-stack']
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."
for kv in "$@"; do export "${kv?}"; done
runs=${SOAK_RUNS:-10}
hog=${SOAK_HOG:-0}
filter=${LABEL_FILTER:-'!slow && !long && !extra-stack'}
root=${ARTIFACTS:-$PWD/_artifacts}/soak
backend=${BACKEND:-local}
series=$([ "$hog" -gt 0 ] && echo "hog$hog" || echo idle)
# Another backend's series are named for it: kind-idle, kind-hog4.
[ "$backend" = local ] || series="$backend-$series"
mkdir -p "$root"
tsv=$root/$series.tsv
printf 'run\tseconds\tresult\n' >"$tsv"
# What the flake page names of the series: the commit, the machine, the load.
printf 'commit=%s\ncores=%s\nhog=%s\nfilter=%s\nbackend=%s\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo +changes)" "$(nproc)" "$hog" "$filter" "$backend" >"$root/$series.env"

hog_pid=
cleanup() { [ -n "$hog_pid" ] && kill "$hog_pid" 2>/dev/null && wait "$hog_pid" 2>/dev/null; true; }
trap cleanup EXIT
if [ "$hog" -gt 0 ]; then
  command -v stress-ng >/dev/null || { echo "soak: SOAK_HOG=$hog needs stress-ng (Debian: apt-get install stress-ng)" >&2; exit 2; }
  stress-ng --cpu "$hog" --quiet &
  hog_pid=$!
fi

failed=0
for i in $(seq 1 "$runs"); do
  start=$(date +%s)
  result=passed
  if ! make --no-print-directory e2e LABEL_FILTER="$filter" ARTIFACTS="$root/$series-$i" GINKGO_FLAGS=--no-color >"$root/$series-$i.log" 2>&1; then
    result=failed
    failed=$((failed + 1))
  fi
  secs=$(( $(date +%s) - start ))
  printf '%s\t%s\t%s\n' "$i" "$secs" "$result" >>"$tsv"
  echo "soak $series run $i/$runs: $result in ${secs} s (log $root/$series-$i.log)"
done
echo "soak $series: $failed of $runs runs failed; times in $tsv"
[ "$failed" -eq 0 ]
