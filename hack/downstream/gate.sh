#!/usr/bin/env bash
# The verdict of the reusable workflow (.github/workflows/downstream.yaml):
# reads the sides hack/downstream/run.sh recorded and fails when the head
# changes what the specs find. It always writes a summary (markdown, to
# SUMMARY, default stdout) saying what happened:
#   - the head's label filter does not parse, or the head does not compile
#     (the compiler's last lines): fails;
#   - no spec ran on the head (an empty selection, or every selected spec
#     skipped; runcheck ran): fails;
#   - with a base that ran: hack/matrix compare of base and head (each side
#     its first run and its reruns, run.sh's rerun-K directories: a series);
#     its verdict line comes first; fails when the head changed an outcome
#     for the worse; every failure is marked known (client-go's known
#     behaviour, with the upstream change) or unexplained; a known failure on
#     both sides never blocks, an unexplained one only with
#     FAIL_ON_BASE_FAILURES=true; a spec whose runs disagree is flaky, not a
#     change; the head's run failing outside its specs (ginkgo's exit) while
#     the base's did not fails too;
#   - without one (a push, or a base that did not build or run): hack/matrix
#     verdict of the head: fails on an unexplained failure (known ones are
#     listed), or when the head's run failed outside its specs.
# The verdict line is also written to VERDICT_FILE when set (the workflow's
# output).
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
verdict_file=${VERDICT_FILE:-/dev/null}
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

# verdict LINE: the gate's one-line verdict, first in the summary's
# verdict section and in VERDICT_FILE.
verdict() {
  say "$1" ""
  printf '%s\n' "$1" | sed 's/\*\*//g' >"$verdict_file"
}

say "# Informer conformance"
say ""
hs=$(status "$head")
case $hs in
none)
  verdict "**Verdict: blocks**: the head's job recorded nothing: it stopped before the specs (see its log)."
  exit 1
  ;;
filter)
  verdict "**Verdict: blocks**: the label filter does not parse."
  block "The label filter:" "$head/status.log"
  exit 1
  ;;
build)
  verdict "**Verdict: blocks**: the head does not compile."
  block "\`go test -c\` of the package printed:" "$head/status.log"
  exit 1
  ;;
esac
head_rc=${hs#ran }

# An empty selection tests nothing: it fails, on every event.
if ! "$tools/runcheck" ran "$head/report.json" >"$tools/head-ran.txt" 2>"$tools/head-ran.err"; then
  cat "$tools/head-ran.txt" "$tools/head-ran.err" >"$tools/head-ran.all"
  verdict "**Verdict: blocks**: no spec ran on the head (an empty selection, or every selected spec skipped)."
  block "The head's run:" "$tools/head-ran.all"
  exit 1
fi

# The head's failed specs (runcheck's count): a Ginkgo failure without any
# is outside the specs (a suite node, a timeout).
head_failed=$(sed -n 's/.*specs of .*: [0-9]* passed, \([0-9]*\) failed.*/\1/p' "$tools/head-ran.txt" | awk '{n += $1} END {print n + 0}')

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

if [ -n "$why_no_base" ] && ! ls "$head"/informer-report-*.json >/dev/null 2>&1; then
  # No informer report (a suite that does not write one): Ginkgo's exit
  # status decides.
  if [ "$head_rc" = 0 ]; then
    verdict "**Verdict: passes**: every spec that ran on the head passed (no informer report to mark failures known or unexplained); nothing to compare with: $why_no_base."
  else
    verdict "**Verdict: blocks**: the head's run failed (Ginkgo exited $head_rc; no informer report to mark failures known or unexplained); nothing to compare with: $why_no_base."
  fi
  block "The head's run:" "$tools/head-ran.txt"
  [ "$head_rc" = 0 ]
  exit
fi

if [ -n "$why_no_base" ]; then
  rc=0
  "$tools/matrix" verdict -out "$tools/verdict.md" "$head" >/dev/null 2>"$tools/verdict.err" || rc=$?
  case $rc in
  0 | 1)
    line=$(sed -n '1p' "$tools/verdict.md")
    if [ "$rc" = 0 ] && [ "$head_rc" != 0 ] && [ "$head_failed" = 0 ]; then
      # No failing spec, yet Ginkgo failed: a suite node, a timeout.
      line="**Verdict: blocks**: the head's run failed outside its specs (Ginkgo exited $head_rc: a suite node, a timeout; see its log)."
      rc=1
    fi
    verdict "${line%.}; nothing to compare with: $why_no_base."
    tail -n +2 "$tools/verdict.md" >>"$summary"
    ;;
  *)
    verdict "**Verdict: blocks**: hack/matrix verdict could not read the head's reports (exit $rc)."
    block "hack/matrix verdict:" "$tools/verdict.err"
    rc=1
    ;;
  esac
  say ""
  block "The head's run:" "$tools/head-ran.txt"
  reports
  exit "$rc"
fi

rc=0
"$tools/matrix" compare "${compare_flags[@]}" -out "$tools/compare.md" "$base" "$head" >/dev/null 2>"$tools/compare.err" || rc=$?
touch "$tools/compare.md"
base_rc=${bs#ran }
case $rc in
0 | 1)
  line=$(grep -m 1 '^\*\*Verdict' "$tools/compare.md" || true)
  if [ "$rc" = 0 ] && [ "$head_rc" != 0 ] && [ "$base_rc" = 0 ] && [ "$head_failed" = 0 ]; then
    line="**Verdict: blocks**: no spec changed its outcome for the worse, but the head's run failed outside its specs (Ginkgo exited $head_rc, the base's 0: a suite node, a timeout; see the head's log)."
    rc=1
  fi
  verdict "$line"
  ;;
*)
  verdict "**Verdict: blocks**: hack/matrix compare could not compare the runs (exit $rc)."
  block "hack/matrix compare:" "$tools/compare.err"
  rc=1
  ;;
esac
grep -v '^\*\*Verdict' "$tools/compare.md" >>"$summary" || true
say ""
block "The head's run:" "$tools/head-ran.txt"
reports
exit "$rc"
