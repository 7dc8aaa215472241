#!/usr/bin/env bash
# Runs the suite on the existing backend against a cluster it did not start
# itself: a local control plane from hack/local-up, reached only through its
# kubeconfig. What CI runs to keep the existing backend honest; against a
# real cluster use `make e2e BACKEND=existing KUBECONFIG=...` instead.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."

out=$(mktemp -d)
go build -o "$out/local-up" ./hack/local-up
"$out/local-up" >"$out/local-up.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$out"' EXIT

kubeconfig=""
for _ in $(seq 1 120); do
  kubeconfig=$(sed -n 's/^export KUBECONFIG=//p' "$out/local-up.log")
  [ -n "$kubeconfig" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$out/local-up.log"; echo "local-up exited before it was ready" >&2; exit 1; }
  sleep 1
done
[ -n "$kubeconfig" ] || { cat "$out/local-up.log"; echo "local-up not ready within 120 s" >&2; exit 1; }
echo "existing cluster: $kubeconfig"
rc=0
make e2e BACKEND=existing KUBECONFIG="$kubeconfig" ARTIFACTS="${ARTIFACTS:-$PWD/_artifacts}/existing" "$@" || rc=$?
# Whatever the specs' outcome: nothing the suite created may stay on the
# cluster (its namespaces, their pods and other objects).
go run ./hack/existing-leftovers -kubeconfig "$kubeconfig" || rc=1
exit "$rc"
