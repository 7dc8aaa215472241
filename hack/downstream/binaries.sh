#!/usr/bin/env bash
# The local backend's kube-apiserver and etcd for a downstream module, as
# the suite version that module resolves builds them (its
# hack/build-binaries, run in the module: the versions are that suite's
# pinned defaults, or KUBE_VERSION and ETCD_VERSION).
#   hack/downstream/binaries.sh key MODULE_DIR    print the CI cache key: OS, architecture, build recipe and versions
#   hack/downstream/binaries.sh build MODULE_DIR  build them (once per version, cached in ~/.cache/informer-conformance)
# SUITE_MODULE is the suite's module path (default github.com/informer-conformance/informer-conformance).
set -o errexit -o nounset -o pipefail
if [ $# -ne 2 ] || { [ "$1" != key ] && [ "$1" != build ]; }; then
  echo "usage: $0 key|build MODULE_DIR" >&2
  exit 2
fi
suite_module=${SUITE_MODULE:-github.com/informer-conformance/informer-conformance}
cd "$2"
case $1 in
key)
  key=$(go run "$suite_module/hack/build-binaries" -print-key)
  echo "informer-conformance-binaries-$(go env GOOS)-$(go env GOARCH)-$key"
  ;;
build)
  go run "$suite_module/hack/build-binaries"
  ;;
esac
