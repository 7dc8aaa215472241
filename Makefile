# informer-conformance: conformance suite for client-go informers on real clusters.
# `make` or `make help` lists the targets.

SHELL := bash
.SHELLFLAGS := -o errexit -o nounset -o pipefail -c
.DEFAULT_GOAL := help

GO ?= go
# kube-apiserver (1.31.x-1.37.x; built from source 1.33.x-1.37.x only, the
# minors whose staging modules the Go module proxy serves: 1.31 and 1.32 as
# release binaries or INFORMER_CONFORMANCE_ASSETS, docs/backends.md) and etcd
# (3.5.x-3.7.x) versions; empty = pinned defaults.
KUBE_VERSION ?=
ETCD_VERSION ?=
export KUBE_VERSION ETCD_VERSION
# Where logs, JUnit and reports go.
ARTIFACTS ?= $(CURDIR)/_artifacts
# Paths given relative (ARTIFACTS=out, KUBECONFIG=kc.yaml, a list of them,
# INFORMER_CONFORMANCE_ASSETS=bin, ...) are made absolute here, against the
# directory make runs in: go test runs each suite in its own package
# directory, and the suites refuse relative paths.
empty :=
space := $(empty) $(empty)
abspaths = $(subst $(space),:,$(abspath $(subst :, ,$(1))))
override ARTIFACTS := $(abspath $(ARTIFACTS))
export INFORMER_CONFORMANCE_ARTIFACTS := $(ARTIFACTS)
ifneq ($(strip $(KUBECONFIG)),)
override KUBECONFIG := $(call abspaths,$(KUBECONFIG))
endif
ifneq ($(strip $(INFORMER_CONFORMANCE_KUBECONFIG)),)
override INFORMER_CONFORMANCE_KUBECONFIG := $(abspath $(INFORMER_CONFORMANCE_KUBECONFIG))
export INFORMER_CONFORMANCE_KUBECONFIG
endif
ifneq ($(strip $(INFORMER_CONFORMANCE_ASSETS)),)
override INFORMER_CONFORMANCE_ASSETS := $(abspath $(INFORMER_CONFORMANCE_ASSETS))
export INFORMER_CONFORMANCE_ASSETS
endif
ifneq ($(strip $(INFORMER_CONFORMANCE_CACHE)),)
override INFORMER_CONFORMANCE_CACHE := $(abspath $(INFORMER_CONFORMANCE_CACHE))
export INFORMER_CONFORMANCE_CACHE
endif
# The test packages that run specs (suites/*, the fixtures and integrations)
# call e2e.RunSpecs, which runs them only with INFORMER_CONFORMANCE=1, so that
# a plain `go test ./...` skips them saying how to run them; every target
# here runs them (make test-unit's -short still skips them).
export INFORMER_CONFORMANCE := 1
# Backend for e2e: local (a fresh control plane per spec), kind (a kind
# cluster per Ginkgo process, specs in namespaces of their own) or existing
# (the cluster of KUBECONFIG); specs needing what a backend lacks skip, saying why.
BACKEND ?= local
export INFORMER_CONFORMANCE_BACKEND := $(BACKEND)
export KUBECONFIG
# client-go's watch-list consistency detector: after each streaming list a
# LIST at its resourceVersion, compared; a difference fails the spec. On in
# every run (package probe/watchlistdetector sets it too, for library users);
# KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=false switches it off, and each
# streaming-list spec's report says so.
KUBE_WATCHLIST_INCONSISTENCY_DETECTOR ?= true
export KUBE_WATCHLIST_INCONSISTENCY_DETECTOR
# Ginkgo label filter for e2e, e.g. LABEL_FILTER='!slow'. Empty, e2e runs
# E2E_LABELS' default, '!slow && !long && !extra-stack': it leaves out the
# specs labelled slow (a minute or more each: `make e2e-slow`), long (five
# minutes or more each, client-go's fixed periods: `make e2e-long`) and
# those on informer stacks other than the typed one (label extra-stack:
# `make e2e-stacks`).
LABEL_FILTER ?=
# Ginkgo parallel processes. The specs spend most of their time waiting
# (backoffs, timeouts, restarts), so 4 processes suit even 2 cores (the
# default suite's time with 4 there: docs/measured.md). -p picks from the
# CPU count. On kind, KIND_PROCS.
GINKGO_PROCS ?= $(if $(filter kind,$(BACKEND)),$(KIND_PROCS),-procs=4)
# Extra ginkgo flags, e.g. --no-color or -v.
GINKGO_FLAGS ?=
# The bound on a whole run (go test's -timeout, ginkgo's --timeout). On
# kind, the default suite spends most of its time starting kind clusters
# (a run on 2 cores: docs/flakes-kind.md), close to 30 minutes: 60 there.
TEST_TIMEOUT ?= $(if $(filter kind,$(BACKEND)),60m,30m)

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: binaries
binaries: ## Build (once per version, cached) kube-apiserver, etcd and etcdutl from pinned source.
	$(GO) run ./hack/build-binaries

.PHONY: test
test: binaries ## Run the Go tests of the suite's own packages (backends against the real binaries).
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v /suites/)

.PHONY: test-unit
test-unit: ## Run the Go tests that need no binaries and no cluster (go test -short: classifier, versions, reports, matrix, fault proxy, controls; the informers' metrics provider with its build tag); no build.
	$(GO) test -short -count=1 ./...
	$(if $(E2E_TAGS),$(GO) test -short -count=1 -tags '$(E2E_TAGS)' -run 'InformerMetrics' ./probe)

.PHONY: e2e
e2e: $(if $(filter local,$(BACKEND)),binaries) $(if $(filter kind,$(BACKEND)),kind-image) ## Run the conformance specs (BACKEND=local|existing, LABEL_FILTER=..., GINKGO_PROCS=...); fails if no spec passed.
	$(RUNCHECK) filter '$(E2E_LABELS)'
	mkdir -p $(ARTIFACTS)
	rm -f $(ARTIFACTS)/junit.xml $(ARTIFACTS)/report.json $(ARTIFACTS)/informer-report-*.json $(ARTIFACTS)/informer-report-*.md $(ARTIFACTS)/informer-report-*.html $(ARTIFACTS)/informer-report-*.png
	bin=$$(mktemp -d "$${TMPDIR:-/tmp}/informer-conformance-suites.XXXXXX"); trap 'rm -rf "$$bin"' EXIT; \
	pids=(); for s in $(SUITES); do mkdir "$$bin/$$s"; $(GO) test -c $(if $(E2E_TAGS),-tags '$(E2E_TAGS)') -o "$$bin/$$s/$$s.test" ./suites/$$s & pids+=($$!); done; \
	for p in "$${pids[@]}"; do wait "$$p"; done; \
	rc=0; INFORMER_CONFORMANCE_ALLOW_EMPTY=true $(GO) tool ginkgo $(GINKGO_PROCS) $(GINKGO_FLAGS) --timeout=$(TEST_TIMEOUT) --label-filter='$(E2E_LABELS)' \
		--junit-report=junit.xml --json-report=report.json --output-dir=$(ARTIFACTS) $(foreach s,$(SUITES),"$$bin/$(s)/$(s).test") || rc=$$?; \
	$(RUNCHECK) report $(ARTIFACTS)/report.json || { [ $$rc -ne 0 ] || rc=1; }; exit $$rc

# The suites make e2e runs. Each is built (go test -c) into a temporary
# directory of the run's own, in a directory named as its package (the
# suite's artifacts are named after the directory it runs in), and ginkgo
# runs the binaries as precompiled suites: left to itself, ginkgo builds
# suites/<name>/<name>.test in the checkout and deletes it after the run,
# so two runs at once in one checkout (make e2e-kind beside make e2e-long
# in .ci/run) would build, run and delete one file. One label filter runs
# over every suite, and may select from one only (LABEL_FILTER=long selects
# no smoke spec): INFORMER_CONFORMANCE_ALLOW_EMPTY=true lets a suite's empty
# selection pass, and runcheck report fails the run when no spec passed in
# any suite.
SUITES = $(patsubst suites/%/,%,$(sort $(dir $(wildcard suites/*/*_test.go))))
# The build tags of the suites make e2e builds: informermetrics compiles
# the informers' own recording metrics provider (probe/informermetrics.go:
# client-go v0.36+, which the workspace pins in hack/pin); S32 then asserts
# the informers' metrics. Empty on an older client-go.
E2E_TAGS ?= informermetrics

# The label filter of make e2e: LABEL_FILTER, or all but the specs labelled
# slow (make e2e-slow) or long (make e2e-long) and those on informer stacks
# other than the typed one (make e2e-stacks), so that the default run stays
# short (its time: docs/measured.md).
E2E_LABELS = $(or $(LABEL_FILTER),!slow && !long && !extra-stack)
# Checks a run from outside Ginkgo: the label filter parses (Ginkgo's parse
# error alone, before any process starts), some spec passed in some suite
# (a run that tests nothing fails), why specs skipped; the spec labels.
RUNCHECK = $(GO) build -o $(CURDIR)/_bin/runcheck ./hack/runcheck && $(CURDIR)/_bin/runcheck

# client-go versions for `make matrix` (v0.33 = newest v0.33.x), and optionally
# kube-apiserver and etcd versions (each kube-apiserver on each etcd: a server
# column each).
CLIENT_GO ?= v0.31 v0.32 v0.33 v0.34 v0.35 v0.36 v0.37 next
KUBE_VERSIONS ?=
ETCD_VERSIONS ?=
# client-go feature gate sets for `make matrix`, a column each: ";" separated,
# each "default" or "Name=false,Other=true" (KUBE_FEATURE_<Name> variables).
GATES ?=
export CLIENT_GO KUBE_VERSIONS ETCD_VERSIONS GATES
# The Go toolchain (GOTOOLCHAIN) of a matrix, verdict or bisect column whose
# client-go needs a newer Go than the machine's (the next minor's
# pre-releases: k8s.io/api v0.38.0-alpha.2 requires go 1.27).
MATRIX_GOTOOLCHAIN ?= go1.27.3
export MATRIX_GOTOOLCHAIN

.PHONY: binaries-upgrade
binaries-upgrade: ## Build also the kube-apiserver S25's rolling upgrade starts from (the previous minor's pinned patch, or KUBE_UPGRADE_FROM).
	$(GO) run ./hack/build-binaries -upgrade

.PHONY: e2e-slow
e2e-slow: binaries-upgrade ## Run the specs labelled slow (a minute or more each, or kube-apiserver's 15 s compaction poll), but not long, on the typed stack; reports in $(ARTIFACTS)/slow.
	$(MAKE) e2e LABEL_FILTER='slow && !long && !extra-stack' ARTIFACTS=$(ARTIFACTS)/slow

.PHONY: e2e-long
e2e-long: ## Run only the specs labelled long (S15's serving-CA rotation: client-go re-reads a CA file after 5 minutes), in parallel; reports in $(ARTIFACTS)/long.
	$(MAKE) e2e LABEL_FILTER=long GINKGO_PROCS=-procs=2 ARTIFACTS=$(ARTIFACTS)/long

# The HTML report of the last make e2e, as a person opens it: headless
# Chromium (apt-get install chromium) loads it with no console message,
# it stays under 5 MB, and a known spec's timeline shows its fault window
# and its re-initialisation; a screenshot is left next to it
# (informer-report-conformance.html.png).
.PHONY: report-check
report-check: ## Check the HTML report of the last make e2e in headless Chromium (leaves a screenshot next to it).
	@test -f $(ARTIFACTS)/informer-report-conformance.html || { echo "report-check: no $(ARTIFACTS)/informer-report-conformance.html: run make e2e first" >&2; exit 1; }
	INFORMER_CONFORMANCE_HTML_REPORT=$(ARTIFACTS)/informer-report-conformance.html \
		$(GO) test -count=1 -v -run 'TestHTMLReportInChromium|TestChromiumCheckSeesConsoleErrors' ./report/

.PHONY: e2e-stacks
e2e-stacks: ## Run the specs on the informer stacks other than the typed one (typed-json, dynamic, metadata, dynamic-crd, dynamic-crd-cbor: S1, S2, S3, S5 (its slow compaction while watching included), S7, S10, S16's slow index function, S17, S19 in both sync modes; S33 with the CBOR gates on, on dynamic-crd-cbor), all but long; reports in $(ARTIFACTS)/stacks.
	$(MAKE) e2e LABEL_FILTER='extra-stack && !long' ARTIFACTS=$(ARTIFACTS)/stacks

# make flakes: the default suite RUNS times idle and RUNS times beside LOAD
# CPU hogs (stress-ng; default twice the cores), then the pass rate of every
# spec that failed at least once ($(ARTIFACTS)/flakes.md, each with its
# verdict): the flake budget. Fails when a spec failed in some run.
# LOAD=0 runs the idle series only; BACKEND=kind names the series for kind
# (kind-idle): `make flakes BACKEND=kind RUNS=3 LOAD=0 ARTIFACTS=_artifacts/kind`.
RUNS ?= 10
LOAD ?= $(shell echo $$((2 * $$(nproc))))
.PHONY: flakes
flakes: binaries ## The flake budget: the default suite RUNS times (10) idle and RUNS times beside LOAD CPU hogs (twice the cores; stress-ng), then per-spec pass rates in $(ARTIFACTS)/flakes.md; fails when a spec failed in some run.
	@[ "$(LOAD)" -eq 0 ] || command -v stress-ng >/dev/null || { echo "make flakes: LOAD needs stress-ng (Debian: apt-get install stress-ng)"; exit 2; }
	rm -rf $(ARTIFACTS)/soak
	rc=0; hack/soak.sh SOAK_RUNS=$(RUNS) SOAK_HOG=0 ARTIFACTS=$(ARTIFACTS) || rc=1; \
	if [ "$(LOAD)" -gt 0 ]; then hack/soak.sh SOAK_RUNS=$(RUNS) SOAK_HOG=$(LOAD) ARTIFACTS=$(ARTIFACTS) || rc=1; fi; \
	$(GO) run ./hack/matrix flakes -out $(ARTIFACTS)/flakes.md $(ARTIFACTS)/soak || rc=1; exit $$rc

.PHONY: soak
soak: binaries ## Run the non-slow suite SOAK_RUNS times (default 10) idle, then beside a CPU hog (stress-ng --cpu 1); per-run times in $(ARTIFACTS)/soak.
	hack/soak.sh SOAK_RUNS=$(or $(SOAK_RUNS),10) SOAK_HOG=0 ARTIFACTS=$(ARTIFACTS)
	hack/soak.sh SOAK_RUNS=$(or $(SOAK_RUNS),10) SOAK_HOG=1 ARTIFACTS=$(ARTIFACTS)

.PHONY: matrix
matrix: binaries ## Run the suite once per client-go version (CLIENT_GO=..., KUBE_VERSIONS=..., ETCD_VERSIONS=..., GATES='default; AtomicFIFO=false', LABEL_FILTER default '!slow && !extra-stack'); prints a table.
	$(GO) run ./hack/matrix -procs=$(patsubst -procs=%,%,$(GINKGO_PROCS)) -label-filter='$(or $(LABEL_FILTER),!slow && !extra-stack)' -out=$(ARTIFACTS)/matrix

.PHONY: measured
MEASURED ?= docs/measured.md
measured: ## Write $(MEASURED) (docs/measured.md) from the reports of the last make e2e, e2e-slow, e2e-long and e2e-kind under $(ARTIFACTS) (kind's in $(ARTIFACTS)/kind, as CI runs it): counts, wall time, cluster starts, slowest specs, the machine and the commit (run it at the commit that ran them; CI writes its own into $(ARTIFACTS)).
	$(GO) run ./hack/runcheck page $(MEASURED) 'make e2e=$(ARTIFACTS)/report.json' 'make e2e-slow=$(ARTIFACTS)/slow/report.json' 'make e2e-long=$(ARTIFACTS)/long/report.json' 'make e2e-kind=$(ARTIFACTS)/kind/report.json'

.PHONY: compare
compare: ## What changed between two runs (BASE=dir HEAD=dir: artifacts directories, or directories of runs): a one-line verdict, then outcomes (each failure known for its client-go, with the upstream change, or unexplained; pass rates with several runs a side), re-initialisation causes, recoveries beyond their noise; fails when HEAD changed an outcome for the worse (FAIL_ON_BASE_FAILURES=1: also when an unexplained spec fails on both).
	$(if $(and $(BASE),$(HEAD)),,$(error make compare BASE=<artifacts dir> HEAD=<artifacts dir>))
	$(GO) run ./hack/matrix compare $(if $(FAIL_ON_BASE_FAILURES),-fail-on-base-failures) -out=$(ARTIFACTS)/compare.md '$(BASE)' '$(HEAD)'

.PHONY: bisect
bisect: binaries ## The first client-go tag (patches, alpha, beta, rc) between GOOD and BAD where the specs matching SPEC change outcome, or with OBSERVATION the value of their observations whose key contains it; log2 runs; prints the upstream range.
	$(if $(and $(GOOD),$(BAD),$(SPEC)),,$(error make bisect GOOD=v0.33.13 BAD=v0.34.13 SPEC='S19 .* streaming list' [OBSERVATION='transform calls']))
	$(GO) run ./hack/matrix bisect -good='$(GOOD)' -bad='$(BAD)' -spec='$(SPEC)' -observation='$(OBSERVATION)' -procs=$(patsubst -procs=%,%,$(GINKGO_PROCS)) -label-filter='$(or $(LABEL_FILTER),!slow && !extra-stack)' -out=$(ARTIFACTS)/bisect

# `make matrix MATRIX_SHARD=I/N` runs one machine's share of the columns (MATRIX_SHARD_BY=version:
# of the client-go versions, each built once);
# `make matrix-merge MATRIX_IN='dir1 dir2'` joins the shards' column files.
MATRIX_IN ?=
.PHONY: matrix-merge
matrix-merge: ## Join the column files of sharded matrix runs (MATRIX_IN='dir ...', each a run's -out or a parent of several) into one table, HTML grid and JSON in $(ARTIFACTS)/matrix.
	$(if $(MATRIX_IN),,$(error MATRIX_IN names the directories of the shards' column files))
	$(GO) run ./hack/matrix merge -out=$(ARTIFACTS)/matrix $(MATRIX_IN)

# Label filter of `make verdicts`: every scenario of the catalogue (the
# default suite and the slow specs; not the five-minute waits, not the extra
# informer stacks) on each client-go column with its default gates (every
# change a release makes, outcomes and observations); its gate columns run
# VERDICT_GATE_LABELS, the specs whose outcome depends on the client-go
# release or its feature gates, on the typed stack (the queue they tell
# apart is the same on every stack).
VERDICT_LABELS ?= !long && !extra-stack
VERDICT_GATE_LABELS ?= release-sensitive && !extra-stack
export VERDICT_GATE_LABELS
# The minors whose first patch (vX.Y.0) `make verdicts` runs besides the
# newest: empty or "all", "none", or a list ("v0.31 v0.32"); each costs a
# build of the suite against that client-go (5-6 min on 2 cores).
VERDICT_FIRST_PATCHES ?=
export VERDICT_FIRST_PATCHES
# VERDICT_GATES=none: default gates only (no gate columns), e.g. for a run
# of patch versions named in CLIENT_GO (v0.33.0 stands for itself there).
VERDICT_GATES ?=
export VERDICT_GATES
# The page's server section: the newest client-go release (default gates)
# also against each kube-apiserver of VERDICT_KUBE_STEPS (on the default
# etcd) and each etcd of VERDICT_ETCD_STEPS (under the default
# kube-apiserver), each step to the next server judged as an upgrade step
# is. Their defaults are hack/matrix's (the supported kube-apiserver minors'
# pinned patches before the default, the etcd minors before the default),
# so the matrix workflow plans the same columns; set either empty (or none)
# to leave its part out. Each kube-apiserver is built once.
# Where `make verdicts` writes its verdict document.
VERDICT_DOC ?= docs/clientgo-releases.md

.PHONY: verdicts
verdicts: binaries-upgrade ## Run every scenario (VERDICT_LABELS) on each CLIENT_GO minor (first and newest patch) and on "next" (the newest pre-release of the next minor); the release-sensitive specs also with InOrderInformers, InOrderInformersBatchProcess, AtomicFIFO, UnlockWhileProcessingFIFO off where it has the gate; the newest release also against VERDICT_KUBE_STEPS and VERDICT_ETCD_STEPS; write VERDICT_DOC: each failure explained, what each upgrade step and each server step changes (outcomes and observations, tied to upstream changes); fails only on an errored column or an unexplained failure.
	$(GO) run ./hack/matrix -verdicts -procs=$(patsubst -procs=%,%,$(GINKGO_PROCS)) -label-filter='$(VERDICT_LABELS)' -out=$(ARTIFACTS)/verdicts -doc='$(abspath $(VERDICT_DOC))'

.PHONY: e2e-existing-local
e2e-existing-local: binaries ## Run the suite on the existing backend against a hack/local-up cluster (what CI does).
	hack/e2e-existing-local.sh GINKGO_FLAGS='$(GINKGO_FLAGS)' LABEL_FILTER='$(LABEL_FILTER)'

.PHONY: labels
labels: ## List the spec labels, with the number of specs carrying each (from a dry run of the suites).
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	INFORMER_CONFORMANCE_ARTIFACTS=$$tmp $(GO) tool ginkgo --dry-run --no-color --json-report=labels.json --output-dir=$$tmp ./suites/... >$$tmp/out 2>&1 || { cat $$tmp/out; exit 1; }; \
	$(RUNCHECK) labels $$tmp/labels.json

.PHONY: local-up
local-up: binaries ## Start a local control plane and keep it running (Ctrl-C stops it); prints the kubeconfig.
	# Built, then exec'd: the shell and "go run" would turn the command's
	# clean exit after Ctrl-C into "Error 1".
	$(GO) build -o $(CURDIR)/_bin/local-up ./hack/local-up && exec $(CURDIR)/_bin/local-up

# Where make bench, bench-start and kind-bench also write their results, as
# JSON (package hack/runcheck/benchresult), for make benchmarks; empty: the
# markdown table alone.
BENCH_JSON ?=
bench_json = $(if $(BENCH_JSON),-json '$(abspath $(BENCH_JSON))')

.PHONY: bench
bench: binaries ## Measure the local backend: start, restart downtime, compaction (markdown table; BENCH_JSON=file: also as JSON).
	$(GO) run ./hack/localbench $(bench_json)

BENCH_N ?= 10
.PHONY: bench-start
bench-start: binaries ## Compare how long a ready control plane takes, in one run on the same binaries: the local backend (from the bootstrapped etcd template, from a fresh etcd, 3 apiservers), controller-runtime's envtest, kind and kwokctl's binary runtime (BENCH_N samples each, default 10; kwok needs kubectl on PATH, kind Docker and its node image: else not run).
	cd hack/startbench && $(GO) run . -n $(BENCH_N) $(bench_json)

# make benchmarks: the page it writes, where its results go, and whether it
# runs make kind-bench: auto (where Docker has the kind node image, or
# KIND_NODE_IMAGE names one; elsewhere the page names it not run, and why)
# or yes (make kind-image first: builds the node image if missing, once).
BENCHMARKS ?= docs/benchmarks.md
BENCH_RESULTS = $(ARTIFACTS)/benchmarks
KIND_BENCH ?= $(if $(filter kind,$(BACKEND)),yes,auto)

.PHONY: benchmarks
benchmarks: binaries ## Run make bench, make bench-start (BENCH_N) and make kind-bench (KIND_BENCH=auto: where the kind node image exists; yes, or BACKEND=kind: build it first), then write $(BENCHMARKS) (docs/benchmarks.md) from their results: a table each, the machine, its load, the date, the commit and the commands; fails, after writing it, if a benchmark failed.
	$(if $(filter auto yes,$(KIND_BENCH)),,$(error KIND_BENCH is auto or yes, not '$(KIND_BENCH)'))
	mkdir -p $(BENCH_RESULTS) && rm -f $(BENCH_RESULTS)/*.json
	rc=0; \
	$(MAKE) --no-print-directory bench BENCH_JSON=$(BENCH_RESULTS)/bench.json || rc=1; \
	$(MAKE) --no-print-directory bench-start BENCH_N=$(BENCH_N) BENCH_JSON=$(BENCH_RESULTS)/bench-start.json || rc=1; \
	$(if $(filter yes,$(KIND_BENCH)),$(MAKE) --no-print-directory kind-bench KIND_APISERVERS=$(KIND_APISERVERS) BENCH_JSON=$(BENCH_RESULTS)/kind-bench.json,$(GO) run ./hack/kind bench -apiservers $(KIND_APISERVERS) -skip-unavailable -json $(BENCH_RESULTS)/kind-bench.json) || rc=1; \
	$(GO) run ./hack/runcheck benchmarks $(BENCHMARKS) 'make bench=$(BENCH_RESULTS)/bench.json' \
		'make bench-start BENCH_N=$(BENCH_N)=$(BENCH_RESULTS)/bench-start.json' \
		'make kind-bench KIND_APISERVERS=$(KIND_APISERVERS)=$(BENCH_RESULTS)/kind-bench.json' || rc=1; \
	exit $$rc

# The operating systems make verify vets beside the host's: the module's only
# OS-specific files (cluster/internal/process, cluster/internal/ports) differ
# by GOOS, none of its code by GOARCH, and the integrations have no
# OS-specific file of their own, so the module on one pair per other OS
# covers what a Mac or a Windows machine compiles of ours (each pair compiles
# every dependency again: minutes on a fresh machine).
VET_PLATFORMS = darwin/arm64 windows/amd64

.PHONY: verify
verify: verify-fast verify-builds ## gofmt, go vet (also for macOS and Windows), the import rules (hack/importrules: the house's floors), the docs' links and paths (hack/docscheck), staticcheck and actionlint of the workflows (pinned in tools/go.mod) and shellcheck of the scripts: make verify-fast and make verify-builds.

.PHONY: verify-fast
verify-fast: ## make verify on the host's module sets (what .ci/run checks before landing): gofmt, go vet of the suite (in the workspace and on its own go.mod) and of the integrations, the import rules, the docs, staticcheck, actionlint and shellcheck; not the other OSes' vet nor the modules on other client-go versions (make verify-builds).
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run ./hack/importrules
	$(GO) run ./hack/docscheck
	# The suite's go.mod (what importers get) is tidy on its own, so its go
	# directive is the highest its requirements need, and vetted on the
	# versions it requires (no workspace: the lowest client-go it supports);
	# go vet's stdversion check reports any standard library symbol newer
	# than the directive, the compiler any newer language feature.
	GOWORK=off $(GO) mod tidy -diff
	GOWORK=off $(GO) vet ./...
	cd integrations/e2eframework && $(GO) vet ./...
	cd fixtures/e2eframework && $(GO) vet ./...
	cd integrations/controllerruntime && $(GO) vet ./...
	cd tools && $(GO) build -o $(CURDIR)/_bin/staticcheck honnef.co/go/tools/cmd/staticcheck
	cd tools && $(GO) build -o $(CURDIR)/_bin/actionlint github.com/rhysd/actionlint/cmd/actionlint
	$(CURDIR)/_bin/actionlint .github/workflows/*.yaml
	$(CURDIR)/_bin/staticcheck ./...
	cd integrations/e2eframework && $(CURDIR)/_bin/staticcheck ./...
	cd fixtures/e2eframework && $(CURDIR)/_bin/staticcheck ./...
	cd integrations/controllerruntime && $(CURDIR)/_bin/staticcheck ./...
	@command -v shellcheck >/dev/null || { echo "shellcheck not found: apt-get install shellcheck"; exit 1; }
	shellcheck .ci/run $$(git ls-files 'hack/*.sh')

# What make verify checks beyond make verify-fast: each compiles every
# dependency again for a build of its own (minutes each on a fresh machine),
# so .ci/run's landing run leaves them to its full run (.ci/run full: weekly
# and in GitHub's ci.yaml).
.PHONY: verify-builds
verify-builds: ## go vet of the suite for macOS and Windows (VET_PLATFORMS), and vet and staticcheck of the modules on client-go versions of their own (fixtures/controller-v0.33, hack/startbench).
	@for p in $(VET_PLATFORMS); do echo "GOOS=$${p%/*} GOARCH=$${p#*/} go vet ./..."; GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./... || exit 1; done
	cd fixtures/controller-v0.33 && $(GO) vet ./...
	cd hack/startbench && $(GO) vet ./...
	cd tools && $(GO) build -o $(CURDIR)/_bin/staticcheck honnef.co/go/tools/cmd/staticcheck
	cd hack/startbench && $(CURDIR)/_bin/staticcheck ./...

# Labels the example downstream module runs in CI (its specs run in one process).
DOWNSTREAM_LABELS ?= (resync || shutdown) && !extra-stack

# A release: every module a user fetches (the suite, integrations/*) at one
# version, checked to build from the released versions alone, then tagged.
# PROXY_DIR: the directory the file-based module proxy it is checked through
# is written to and kept in (a relative one against the directory make runs
# in); empty, a temporary one. A module then fetches the release from there
# before it is pushed, or from a fork or a private copy that no public proxy
# serves: GOPROXY=file://$(PROXY_DIR),https://proxy.golang.org with the
# suite's modules in GONOSUMDB (docs/downstream.md). RELEASE_TAG=no writes
# the proxy only: no commit, no tag, the checkout unchanged (uncommitted
# changes released too).
PROXY_DIR ?=
RELEASE_TAG ?= yes

.PHONY: release
release: ## Release the suite's modules at VERSION (vX.Y.Z): go.mod requirements written, checked through a file-based module proxy (PROXY_DIR=dir: written there and kept, for GOPROXY=file://dir), committed and tagged (not pushed; RELEASE_TAG=no: the proxy only).
	$(if $(VERSION),,$(error make release VERSION=vX.Y.Z [PROXY_DIR=dir] [RELEASE_TAG=no]))
	$(if $(filter yes no,$(RELEASE_TAG)),,$(error RELEASE_TAG is yes or no, not '$(RELEASE_TAG)'))
	$(if $(and $(filter no,$(RELEASE_TAG)),$(if $(PROXY_DIR),,no)),$(error RELEASE_TAG=no releases into PROXY_DIR alone: name it, e.g. PROXY_DIR=/tmp/proxy))
	$(GO) run ./hack/release -version $(VERSION) $(if $(PROXY_DIR),-proxy '$(abspath $(PROXY_DIR))') $(if $(filter yes,$(RELEASE_TAG)),-tag)

.PHONY: release-check
release-check: binaries ## Adopt the suite as a downstream does, offline: release this checkout into a file-based module proxy, fetch it into the example modules (GOWORK=off, no replace), check their client-go and Go versions are unchanged, and gate the v0.33 example's bump to v0.34.
	hack/release-check.sh

.PHONY: tidy
tidy: ## go mod tidy the suite's go.mod and every nested module's (those require the suite at v0.0.0, which go.work serves and go mod tidy does not read).
	GOWORK=off $(GO) mod tidy
	$(GO) run ./hack/release -tidy

.PHONY: downstream
downstream: binaries ## Run the example downstream module (fixtures/downstream): the specs imported as a library, on its own client-go.
	$(RUNCHECK) filter '$(DOWNSTREAM_LABELS)'
	mkdir -p $(ARTIFACTS)/downstream
	rm -f $(ARTIFACTS)/downstream/report.json
	rc=0; cd fixtures/downstream && INFORMER_CONFORMANCE_ARTIFACTS=$(ARTIFACTS)/downstream \
		$(GO) test -v -count=1 -timeout $(TEST_TIMEOUT) . -ginkgo.label-filter='$(DOWNSTREAM_LABELS)' -ginkgo.no-color -ginkgo.v \
		-ginkgo.json-report=$(ARTIFACTS)/downstream/report.json || rc=$$?; \
	cd $(CURDIR) && $(RUNCHECK) report $(ARTIFACTS)/downstream/report.json || { [ $$rc -ne 0 ] || rc=1; }; exit $$rc

# controller-runtime's cache as the informer source (integrations/
# controllerruntime, a module of its own: controller-runtime v0.25 needs
# client-go v0.37): all but the long and extra-stack specs by default (the
# slow ones included).
CONTROLLER_RUNTIME_LABELS = $(or $(LABEL_FILTER),!long && !extra-stack)

.PHONY: controller-runtime
controller-runtime: binaries ## Run the specs with every typed-stack informer built by a controller-runtime cache and heard through its event handler (integrations/controllerruntime); specs building client-go's factory themselves skip.
	$(RUNCHECK) filter '$(CONTROLLER_RUNTIME_LABELS)'
	mkdir -p $(ARTIFACTS)/controller-runtime
	rm -f $(ARTIFACTS)/controller-runtime/report.json $(ARTIFACTS)/controller-runtime/informer-report-*
	cd integrations/controllerruntime && $(GO) vet ./...
	rc=0; cd integrations/controllerruntime && INFORMER_CONFORMANCE_ARTIFACTS=$(ARTIFACTS)/controller-runtime \
		$(GO) tool ginkgo $(GINKGO_PROCS) $(GINKGO_FLAGS) --timeout=$(TEST_TIMEOUT) --label-filter='$(CONTROLLER_RUNTIME_LABELS)' \
		--json-report=report.json --output-dir=$(ARTIFACTS)/controller-runtime . || rc=$$?; \
	cd $(CURDIR) && $(RUNCHECK) report $(ARTIFACTS)/controller-runtime/report.json || { [ $$rc -ne 0 ] || rc=1; }; exit $$rc

# The e2e-framework integration (integrations/e2eframework, a module of its
# own: e2e-framework v0.7.0 needs client-go >= v0.35.3) and its example. The
# example runs each quick scenario feature once by default (-scenarios=smoke,
# CI's); E2EFRAMEWORK_FLAGS='-args -scenarios=quick' runs every assessment but
# the slow and long ones, '-args -scenarios=all' all of them (S15's serving CA
# rotation alone waits 5 minutes: raise E2EFRAMEWORK_TIMEOUT), and e2e-framework's
# own flags filter further ('-args --feature "S1 |S7 " --skip-labels speed=slow').
E2EFRAMEWORK_TIMEOUT ?= 20m
E2EFRAMEWORK_FLAGS ?=

.PHONY: e2eframework
e2eframework: binaries ## Test the e2e-framework providers (integrations/e2eframework), then run the example module (fixtures/e2eframework): every quick scenario feature once (E2EFRAMEWORK_FLAGS='-args -scenarios=all': all of them) and a negative control, with plain go test.
	cd integrations/e2eframework && $(GO) vet ./... && $(GO) test -count=1 -timeout $(E2EFRAMEWORK_TIMEOUT) ./...
	mkdir -p $(ARTIFACTS)/e2eframework
	cd fixtures/e2eframework && INFORMER_CONFORMANCE_ARTIFACTS=$(ARTIFACTS)/e2eframework \
		$(GO) test -v -count=1 -timeout $(E2EFRAMEWORK_TIMEOUT) . $(E2EFRAMEWORK_FLAGS)

.PHONY: e2eframework-compare
e2eframework-compare: kind-image ## Time creating a kind cluster through this module's kind provider and through e2e-framework's own (kind CLI), same image and configuration.
	cd integrations/e2eframework && INFORMER_CONFORMANCE_COMPARE_KIND=1 $(GO) test -count=1 -v -timeout 20m -run TestCompareWithE2EFrameworkKind ./kind/

# kind backend. KIND_NODE_IMAGE=kindest/node:v1.37.x uses a published image
# instead of the one kind-image builds (where a registry is reachable).
KIND_NODE_IMAGE ?=
export KIND_NODE_IMAGE
# Ginkgo processes on the kind backend: each runs its own kind clusters (up
# to two nodes at once, one cluster per number of apiservers and flag
# profile: cluster/kind ClustersPerProcess), so two processes keep at most
# four nodes, within the 128 inotify instances Linux gives root by default
# (about 25 a node).
KIND_PROCS ?= -procs=2
# The subset `make e2e-kind` runs: one spec per scenario (label sample, in
# the streaming-list mode, typed stack) and the smoke spec, several control
# planes (capability:ha) included, S24's etcd links too; S12 has no sample
# (its specs are all slow).
KIND_LABELS ?= ((sample && !sync:list) || smoke) && !extra-stack

.PHONY: kind-image
kind-image: ## Build (once per version, cached in Docker) the kind node image offline from pinned sources, and a stand-in for kind's load balancer image (haproxy) where kind's own cannot be pulled.
	$(if $(KIND_NODE_IMAGE),@echo "KIND_NODE_IMAGE=$(KIND_NODE_IMAGE): not building a node image",$(GO) run ./hack/kind-image)

.PHONY: e2e-kind
e2e-kind: kind-image ## Run the kind subset (one spec per scenario: label sample, and smoke) on kind clusters, the backend's own leak test and the e2e-framework kind provider's test.
	INFORMER_CONFORMANCE_KIND_INTEGRATION=1 $(GO) test -count=1 -timeout 10m ./cluster/kind/...
	cd integrations/e2eframework && INFORMER_CONFORMANCE_KIND_INTEGRATION=1 $(GO) test -count=1 -timeout 10m ./kind/...
	$(MAKE) e2e BACKEND=kind GINKGO_PROCS='$(KIND_PROCS)' LABEL_FILTER='$(KIND_LABELS)'

# Control-plane nodes of the clusters kind-up and kind-bench create (more
# than one: behind kind's load balancer).
KIND_APISERVERS ?= 1

.PHONY: kind-up
kind-up: kind-image ## Create a kind cluster (KIND_APISERVERS control-plane nodes) and keep it until Ctrl-C; prints the kubeconfig.
	$(GO) run ./hack/kind up -apiservers $(KIND_APISERVERS)

.PHONY: kind-bench
kind-bench: kind-image ## Measure the kind backend (KIND_APISERVERS control-plane nodes): create-to-ready, restarts, compaction, delete (BENCH_JSON=file: also as JSON).
	$(GO) run ./hack/kind bench -apiservers $(KIND_APISERVERS) $(bench_json)

.PHONY: kind-clean
kind-clean: ## Delete what runs left in Docker: clusters of dead owners, labelled containers, the network, kind's load balancer name left on our stand-in.
	$(GO) run ./hack/kind clean
