#!/usr/bin/env bash
# Prints the artifact name of one call of the reusable workflow
# (.github/workflows/downstream.yaml): NAME when given, else one made of the
# call's module directory and package, its backend and a hash of its label
# filter, so two calls in one workflow run (two packages, two backends, two
# label filters) upload under names of their own. Characters an artifact
# name may not hold become '-'.
#   hack/downstream/name.sh WORKING_DIR PACKAGE BACKEND LABEL_FILTER [NAME]
set -o errexit -o nounset -o pipefail
if [ $# -ne 4 ] && [ $# -ne 5 ]; then
  echo "usage: $0 WORKING_DIR PACKAGE BACKEND LABEL_FILTER [NAME]" >&2
  exit 2
fi
name=${5:-}
if [ -z "$name" ]; then
  where=$(realpath -m --relative-to=/ "/$1/$2")
  [ "$where" != . ] || where=root
  hash=$(printf '%s\n' "$1" "$2" "$3" "$4" | sha256sum | cut -c1-8)
  name="informer-conformance-$where-$3-$hash"
fi
# actions/upload-artifact refuses " : < > | * ? \ / and line breaks.
printf '%s' "$name" | tr -c 'A-Za-z0-9._-' '-' | tr -s '-'
echo
