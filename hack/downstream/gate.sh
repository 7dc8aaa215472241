#!/usr/bin/env bash
# The verdict of the reusable workflow (.github/workflows/downstream.yaml):
# reads the sides hack/downstream/run.sh recorded and fails when the head
# changes what the specs find. It always writes a summary (markdown, to
# SUMMARY, default stdout) saying what happened:
#   - the head's label filter does not parse, or the head does not compile
#     (the compiler's last lines): fails;
#   - no spec ran on the head (an empty selection, or every selected spec
#     skipped; runcheck ran): fails;
#   - with a base that ran: hack/matrix compare of base and head; fails when
#     the head changed an outcome for the worse; a spec failing on both sides
#     is listed and fails only with FAIL_ON_BASE_FAILURES=true; the head's
#     run failing outside its specs (ginkgo's exit) while the base's did not
#     fails too;
#   - without one (a push, or a base that did not build or run): the head's
#     own Ginkgo exit status decides.
#
#   hack/downstream/gate.sh HEAD_DIR [BASE_DIR]
set -o errexit -o nounset -o pipefail
if [ $# -ne 1 ] && [ $# -ne 2 ]; then
  echo "usage: $0 HEAD_DIR [BASE_DIR]" >&2
  exit 2
fi
head=$1
base=${2:-}
suite=$(cd "$(dirname "$0")/../.." && pwd)
summary=${SUMMARY:-/dev/stdout}
case ${FAIL_ON_BASE_FAILURES:-false} in
true) compare_flags=(-fail-on-base-failures) ;;
false) compare_flags=() ;;
*)
  echo "gate.sh: FAIL_ON_BASE_FAILURES=$FAIL_ON_BASE_FAILURES: want true or false" >&2
  exit 2
  ;;
esac

tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
(cd "$suite" && go build -o "$tools/runcheck" ./hack/runcheck && go build -o "$tools/matrix" ./hack/matrix)

# status DIR: the side's recorded status, "none" when it recorded nothing.
status() {
  if [ -n "$1" ] && [ -f "$1/status" ]; then cat "$1/status"; else echo none; fi
}
say() { printf '%s\n' "$@" >>"$summary"; }
# block TITLE FILE: the file's last lines as a code block.
block() {
  say "$1" "" '```'
  tail -n 40 "$2" >>"$summary"
  say '```' ""
}
# details TITLE FILE: a file folded away.
details() {
  [ -s "$2" ] || return 0
  say "<details><summary>$1</summary>" ""
  cat "$2" >>"$summary"
  say "" "</details>" ""
}
reports() { # the head's own informer report summary
  for f in "$head"/informer-report-*.summary.md; do
    [ -f "$f" ] && details "The head's informer report" "$f"
  done
  return 0
}

say "# Informer conformance"
say ""
hs=$(status "$head")
case $hs in
none)
  say "**Failed:** the head's job recorded nothing: it stopped before the specs (see its log)."
  exit 1
  ;;
filter)
  block "**Failed:** the label filter does not parse:" "$head/status.log"
  exit 1
  ;;
build)
  block "**Failed:** the head does not compile (\`go test -c\` of the package printed):" "$head/status.log"
  exit 1
  ;;
esac
head_rc=${hs#ran }

# An empty selection tests nothing: it fails, on every event.
if ! "$tools/runcheck" ran "$head/report.json" >"$tools/head-ran.txt" 2>"$tools/head-ran.err"; then
  cat "$tools/head-ran.txt" "$tools/head-ran.err" >"$tools/head-ran.all"
  block "**Failed:** no spec ran on the head:" "$tools/head-ran.all"
  exit 1
fi

bs=$(status "$base")
why_no_base=""
case $bs in
none)
  why_no_base="the base's job recorded nothing (see its log)"
  [ -n "$base" ] || why_no_base="no base (not a pull request)"
  ;;
filter) why_no_base="the base's label filter does not parse" ;;
build) why_no_base="the base does not compile (or lacks the package): $(tail -n 1 "$base/status.log")" ;;
*) ls "$base"/informer-report-*.json >/dev/null 2>&1 || why_no_base="the base's run left no informer report (Ginkgo exited ${bs#ran })" ;;
esac

if [ -n "$why_no_base" ]; then
  if [ "$head_rc" = 0 ]; then
    say "**Passed:** every spec that ran on the head passed; nothing to compare with: $why_no_base."
  else
    say "**Failed:** the head's run failed (Ginkgo exited $head_rc); nothing to compare with: $why_no_base."
  fi
  say ""
  block "The head's run:" "$tools/head-ran.txt"
  reports
  if [ "$head_rc" = 0 ]; then exit 0; fi
  exit 1
fi

rc=0
"$tools/matrix" compare "${compare_flags[@]}" -out "$tools/compare.md" "$base" "$head" >/dev/null 2>"$tools/compare.err" || rc=$?
touch "$tools/compare.md"
base_rc=${bs#ran }
both=$(sed -n 's/^## Failing on both sides.*(\([0-9]*\))$/\1/p' "$tools/compare.md")
case $rc in
0)
  if [ "$head_rc" != 0 ] && [ "$base_rc" = 0 ]; then
    say "**Failed:** no spec changed its outcome, but the head's run failed outside its specs (Ginkgo exited $head_rc, the base's 0: a suite node, a timeout; see the head's log)."
    rc=1
  elif [ -n "$both" ]; then
    say "**Passed:** the head changed no outcome for the worse; $both spec(s) failing on both sides (listed below; not blocking: fail-on-base-failures is false)."
  else
    say "**Passed:** the head changed no outcome for the worse."
  fi
  ;;
1)
  if grep -q '^## Outcomes that changed' "$tools/compare.md"; then
    say "**Failed:** the head changed outcomes for the worse (listed below)."
  else
    say "**Failed:** $both spec(s) failing on both sides, and fail-on-base-failures is true."
  fi
  ;;
*)
  block "**Failed:** hack/matrix compare could not compare the runs (exit $rc):" "$tools/compare.err"
  rc=1
  ;;
esac
say ""
cat "$tools/compare.md" >>"$summary"
say ""
block "The head's run:" "$tools/head-ran.txt"
reports
exit "$rc"
