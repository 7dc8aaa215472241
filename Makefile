# informer-conformance: conformance suite for client-go informers on real clusters.
# `make` or `make help` lists the targets.

SHELL := bash
.SHELLFLAGS := -o errexit -o nounset -o pipefail -c
.DEFAULT_GOAL := help

GO ?= go
# kube-apiserver (1.31.x-1.36.x) and etcd (3.5.x, 3.6.x) versions; empty = pinned defaults.
KUBE_VERSION ?=
ETCD_VERSION ?=
export KUBE_VERSION ETCD_VERSION
# Where logs, JUnit and reports go.
ARTIFACTS ?= $(CURDIR)/_artifacts
export INFORMER_CONFORMANCE_ARTIFACTS := $(ARTIFACTS)
# Ginkgo label filter for e2e, e.g. LABEL_FILTER='!slow'.
LABEL_FILTER ?=
# Ginkgo parallel processes. The specs spend most of their time waiting
# (backoffs, timeouts, restarts), so 4 processes suit even 2 cores: the
# non-slow suite takes ~4 min there with 4, ~7 with 2. -p picks from the CPU count.
GINKGO_PROCS ?= -procs=4
# Extra ginkgo flags, e.g. --no-color or -v.
GINKGO_FLAGS ?=
TEST_TIMEOUT ?= 30m

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: binaries
binaries: ## Build (once per version, cached) kube-apiserver, etcd and etcdutl from pinned source.
	$(GO) run ./hack/build-binaries

.PHONY: test
test: binaries ## Run the Go tests of the suite's own packages (backends against the real binaries).
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v /suites/)

.PHONY: e2e
e2e: binaries ## Run the conformance specs on the embedded local backend (LABEL_FILTER=..., GINKGO_PROCS=...).
	mkdir -p $(ARTIFACTS)
	$(GO) tool ginkgo $(GINKGO_PROCS) $(GINKGO_FLAGS) --timeout=$(TEST_TIMEOUT) --label-filter='$(LABEL_FILTER)' \
		--junit-report=junit.xml --json-report=report.json --output-dir=$(ARTIFACTS) ./suites/...

.PHONY: labels
labels: ## List the spec labels.
	$(GO) tool ginkgo labels ./suites/...

.PHONY: local-up
local-up: binaries ## Start a local control plane and keep it running (Ctrl-C stops it); prints the kubeconfig.
	$(GO) run ./hack/local-up

.PHONY: bench
bench: binaries ## Measure the local backend: cold start, restart downtime, compaction (markdown table).
	$(GO) run ./hack/localbench

.PHONY: verify
verify: ## gofmt and go vet.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
