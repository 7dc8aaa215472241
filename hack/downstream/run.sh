#!/usr/bin/env bash
# Runs a downstream module's conformance test package once, as one side
# (base or head) of the reusable workflow (.github/workflows/downstream.yaml),
# and records what happened in OUT_DIR for hack/downstream/gate.sh:
#   OUT_DIR/status      one line: "filter" (the label filter does not parse),
#                       "build" (the package does not compile, or is not there),
#                       or "ran N" (Ginkgo ran and exited N)
#   OUT_DIR/status.log  what the failing step printed (filter, build)
#   OUT_DIR/ginkgo.log, report.json, junit.xml, informer-report-*  the run's
# It exits 0 once the status is recorded, whatever it is: the gate judges
# the head against the base, so a spec failing on both sides does not fail
# a side's job. A run in which no spec ran (an empty selection, or every
# selected spec skipped) exits 1 after recording it, saying why, in the
# job's summary too (GITHUB_STEP_SUMMARY). It exits 2 on a usage error.
#
#   hack/downstream/run.sh MODULE_DIR PACKAGE OUT_DIR
#
# Environment:
#   LABEL_FILTER     Ginkgo label filter (default '!slow && !long && !extra-stack')
#   BACKEND          local (default) or kind
#   PROCS            Ginkgo processes (default 4 on local, 2 on kind: cluster/kind's per-process clusters)
#   KIND_NODE_IMAGE  with kind: the node image; "offline" builds it from pinned sources first (needs root)
#   SUITE_DEADLINE   Unix time by which Ginkgo must have ended (its --timeout is what is left, less
#                    SUITE_MARGIN seconds, default 120), else SUITE_TIMEOUT (default 60m)
#   SUITE_MODULE     the suite's module path (default github.com/informer-conformance/informer-conformance)
#   RERUN_FOCUS      a file with a Ginkgo --focus expression (hack/matrix compare -differing): rerun
#                    only those specs, RERUNS times (default 3), each into OUT_DIR/rerun-K beside the
#                    side's first run, which stays; an empty file reruns nothing
#   RERUNS           how many times (RERUN_FOCUS)
# The Ginkgo CLI is the version the module resolves (github.com/onsi/ginkgo/v2).
set -o errexit -o nounset -o pipefail
if [ $# -ne 3 ]; then
  echo "usage: $0 MODULE_DIR PACKAGE OUT_DIR" >&2
  exit 2
fi
module=$(cd "$1" && pwd)
pkg=$2
mkdir -p "$3"
out=$(cd "$3" && pwd)
suite=$(cd "$(dirname "$0")/../.." && pwd)
filter=${LABEL_FILTER-'!slow && !long && !extra-stack'}
backend=${BACKEND:-local}
suite_module=${SUITE_MODULE:-github.com/informer-conformance/informer-conformance}
case $backend in
local) procs=${PROCS:-4} ;;
kind) procs=${PROCS:-2} ;;
*)
  echo "run.sh: BACKEND=$backend: the workflow runs local or kind" >&2
  exit 2
  ;;
esac
case $procs in
'' | *[!0-9]* | 0)
  echo "run.sh: PROCS=$procs is not a number of processes" >&2
  exit 2
  ;;
esac
rerun_focus=""
if [ -n "${RERUN_FOCUS:-}" ]; then
  rerun_focus=$(cat "$RERUN_FOCUS")
  if [ -z "$rerun_focus" ]; then
    echo "run.sh: $RERUN_FOCUS is empty: no spec to rerun"
    exit 0
  fi
  reruns=${RERUNS:-3}
  case $reruns in
  '' | *[!0-9]* | 0)
    echo "run.sh: RERUNS=$reruns is not a number of runs" >&2
    exit 2
    ;;
  esac
else
  rm -f "$out/status" "$out/status.log" "$out/ginkgo.log" "$out/report.json" "$out/junit.xml" "$out"/informer-report-*
fi

tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
(cd "$suite" && go build -o "$tools/runcheck" ./hack/runcheck)

record() { # status, then the log (stdin) when there is one
  echo "$1" >"$out/status"
  echo "run.sh: $1"
}

if ! "$tools/runcheck" filter "$filter" >"$out/status.log" 2>&1; then
  cat "$out/status.log"
  record filter
  exit 0
fi

# The package compiles, as go test builds it: the gate shows the
# compiler's last lines when it does not.
echo "run.sh: go test -c $pkg in $module"
if ! (cd "$module" && go test -c -o "$tools/pkg.test" "$pkg") >"$out/status.log" 2>&1; then
  cat "$out/status.log"
  record build
  exit 0
fi

# Ginkgo's CLI at the version of the library the module resolves; built
# outside the module when the module's go.sum lacks the CLI's own
# dependencies (the CLI and the library must match).
if ! (cd "$module" && go build -o "$tools/ginkgo" github.com/onsi/ginkgo/v2/ginkgo) 2>"$tools/ginkgo-build.log"; then
  version=$(cd "$module" && go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' github.com/onsi/ginkgo/v2)
  echo "run.sh: the module cannot build Ginkgo's CLI ($(head -n 1 "$tools/ginkgo-build.log")): installing github.com/onsi/ginkgo/v2/ginkgo@$version"
  (cd "$tools" && GOWORK=off GOFLAGS='' GOBIN="$tools" go install "github.com/onsi/ginkgo/v2/ginkgo@$version")
fi

if [ "$backend" = kind ] && [ "${KIND_NODE_IMAGE:-}" = offline ]; then
  echo "run.sh: building the kind node image offline ($suite_module/hack/kind-image)"
  (cd "$module" && go run "$suite_module/hack/kind-image")
  unset KIND_NODE_IMAGE
fi

# timeout: Ginkgo's --timeout now (SUITE_DEADLINE's time left, less the
# margin, or SUITE_TIMEOUT); fails when too little is left.
timeout() {
  if [ -z "${SUITE_DEADLINE:-}" ]; then
    echo "${SUITE_TIMEOUT:-60m}"
    return
  fi
  local left=$((SUITE_DEADLINE - $(date +%s) - ${SUITE_MARGIN:-120}))
  if [ "$left" -lt 60 ]; then
    echo "run.sh: ${left} s left before SUITE_DEADLINE (less SUITE_MARGIN): no time to run the specs" >&2
    return 1
  fi
  echo "${left}s"
}

# specs DIR [GINKGO FLAGS...]: the package's specs, reports into DIR; the
# exit status is Ginkgo's.
specs() {
  local dir=$1 timeout
  shift
  timeout=$(timeout) || return 1
  mkdir -p "$dir"
  echo "run.sh: ginkgo $("$tools/ginkgo" version | sed 's/^Ginkgo Version //') -procs=$procs --timeout=$timeout --label-filter='$filter' $* $pkg (backend $backend) into $dir"
  (cd "$module" && INFORMER_CONFORMANCE=1 INFORMER_CONFORMANCE_BACKEND="$backend" INFORMER_CONFORMANCE_ARTIFACTS="$dir" \
    "$tools/ginkgo" -procs="$procs" --timeout="$timeout" --label-filter="$filter" --no-color "$@" \
    --json-report=report.json --junit-report=junit.xml --output-dir="$dir" "$pkg") 2>&1 | tee "$dir/ginkgo.log"
}

if [ -n "$rerun_focus" ]; then
  # The specs whose outcome differed, again: the gate compares each side's
  # first run and these as a series (pass rates), so one flake is not
  # called a change. Their exit statuses are the gate's to judge.
  for k in $(seq 1 "$reruns"); do
    rm -rf "$out/rerun-$k"
    specs "$out/rerun-$k" --focus="$rerun_focus" || true
  done
  exit 0
fi

timeout >/dev/null || exit 1
rc=0
specs "$out" || rc=$?
# What ran and why specs skipped, for the job's log; the gate judges.
"$tools/runcheck" report "$out/report.json" || true
record "ran $rc"
# A run that tested nothing fails this job too, not only the gate: the
# selection was empty (e2e.RunSpecs names the labels that exist) or every
# selected spec skipped.
if ! "$tools/runcheck" ran "$out/report.json" >/dev/null 2>"$tools/ran.err"; then
  cat "$tools/ran.err" >&2
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    printf '**Failed:** %s\n' "$(sed 's/^runcheck: //' "$tools/ran.err")" >>"$GITHUB_STEP_SUMMARY"
  fi
  exit 1
fi
