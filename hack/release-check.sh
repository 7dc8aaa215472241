#!/usr/bin/env bash
# make release-check: the suite adopted as a downstream adopts it, offline.
# Releases this checkout's modules into a file-based module proxy
# (hack/release), then, in a copy of each example downstream module with
# no go.work and no replace (GOWORK=off, GOFLAGS=-mod=mod, the file proxy
# first), fetches the suite's modules as `go get` does and checks that the
# import left its client-go, apimachinery, api, controller-runtime and Go
# version where they were. The module on client-go v0.33
# (fixtures/controller-v0.33) then gates its bump to v0.34 as the reusable
# workflow does: hack/downstream/run.sh on the fetched module (base) and on
# the bumped one (head), hack/downstream/gate.sh on the two; its report's
# header must name the client-go of each side.
#
# Reports in $ARTIFACTS/release-check (base/, head/, summary.md).
# LABEL_FILTER: the specs of the gate (default: the resync specs).
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."
repo=$PWD
art=${ARTIFACTS:-$repo/_artifacts}/release-check
filter=${LABEL_FILTER:-resync && !extra-stack && !negative-control}
suite=github.com/informer-conformance/informer-conformance
# A version no proxy serves for this repository, fetched from the file
# proxy alone; new at each run: the go command never asks again for a
# version its module cache (and the module index in its build cache) holds.
version=v0.0.0-check.$(date -u +%Y%m%d%H%M%S)
bump_client_go=v0.34.13
bump_controller_runtime=v0.22.5

work=$(mktemp -d "${TMPDIR:-/tmp}/informer-conformance-release-check.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
rm -rf "$art"
mkdir -p "$art"

echo "== release $version into a file-based module proxy"
go run ./hack/release -version "$version" -proxy "$work/proxy"

upstream=$(go env GOPROXY)
export GOWORK=off GOFLAGS=-mod=mod GOPRIVATE='' GONOSUMDB=$suite GOPROXY="file://$work/proxy,$upstream"

# versions prints the module's Go version and the versions it selects of
# the modules an import must leave alone.
versions() {
  go list -m -f 'go {{.GoVersion}}'
  for m in k8s.io/client-go k8s.io/apimachinery k8s.io/api sigs.k8s.io/controller-runtime; do
    go list -m -f '{{.Path}} {{.Version}}' "$m" 2>/dev/null || true
  done
}

# adopt copies fixtures/NAME to $work/NAME and fetches into it the suite's
# modules it requires, at $version, from the proxy; fails when the import
# moved a version that versions prints.
adopt() {
  local name=$1 dir=$work/$1 mods
  cp -r "fixtures/$name" "$dir"
  rm -f "$dir"/go.work "$dir"/go.work.sum
  cd "$dir"
  # The module before it adopted the suite: its go.mod without the
  # suite's modules.
  mods=$(awk -v s="$suite" 'index($1, s) == 1 { print $1 }' go.mod)
  for m in $mods; do go mod edit -droprequire "$m"; done
  versions >"$art/$name.before"
  # Adoption: go get of the suite's modules, as the quickstart says.
  echo "== $name: go get ${mods//$'\n'/ } at $version"
  for m in $mods; do go get "$m@$version"; done
  go mod tidy
  go vet ./...
  versions >"$art/$name.after"
  echo "== $name: before and after the import"
  paste -d'|' "$art/$name.before" "$art/$name.after" | sed 's/|/   ->   /'
  if ! cmp -s "$art/$name.before" "$art/$name.after"; then
    echo "== FAILED: importing the suite changed $name's versions (above)" >&2
    exit 1
  fi
  cd "$repo"
}

adopt downstream
adopt controller-v0.33

echo "== controller-v0.33: base (client-go v0.33), then head (client-go $bump_client_go, controller-runtime $bump_controller_runtime)"
cp -r "$work/controller-v0.33" "$work/controller-v0.34"
(cd "$work/controller-v0.34" && go get "k8s.io/client-go@$bump_client_go" "k8s.io/api@$bump_client_go" \
  "sigs.k8s.io/controller-runtime@$bump_controller_runtime" && go mod tidy && versions)
export LABEL_FILTER=$filter PROCS=${PROCS:-2}
hack/downstream/run.sh "$work/controller-v0.33" ./conformance "$art/base"
hack/downstream/run.sh "$work/controller-v0.34" ./conformance "$art/head"
for side in base:v0.33.13 "head:$bump_client_go"; do
  header=$(grep -m1 -i 'client-go' "$art/${side%%:*}/informer-report-conformance.md" || true)
  echo "== ${side%%:*}'s report: $header"
  case $header in
  *"${side#*:}"*) ;;
  *)
    echo "== FAILED: the ${side%%:*} report's header does not name client-go ${side#*:}" >&2
    exit 1
    ;;
  esac
done
SUMMARY="$art/summary.md" hack/downstream/gate.sh "$art/head" "$art/base"
cat "$art/summary.md"
