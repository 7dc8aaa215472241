// Command matrix runs the conformance suite once per client-go version
// (k8s.io/api and k8s.io/apimachinery aligned with it) and, optionally, per
// kube-apiserver version, and prints one table: a row per spec, a column per
// version, each cell the outcome and the spec's re-initialisations.
//
//	go run ./hack/matrix -client-go "v0.31 v0.33 v0.35 v0.37" [-kube "v1.36.3 v1.37.2"] [-etcd "v3.5.35 v3.7.3"] [-gates "default; AtomicFIFO=false"] [-label-filter '!slow && !extra-stack']
//
// -gates adds a column per set of client-go feature gates (semicolon
// separated; a set is comma separated Name=true|false, "default" for none),
// set through client-go's KUBE_FEATURE_<Name> environment variables. Before
// a column runs, its client-go's features/known_features.go (module cache)
// says which gates it has and which are locked: a set naming a gate the
// version lacks, or asking a locked gate for the other value, is not run
// but listed as "not applicable: client-go v0.31.14 has no AtomicFIFO
// gate" (not a failure). Each column's report states every gate's value,
// checked after the run: a gate that did not take the value asked makes the
// column an error, not a silent default.
//
// -verdicts plans its own columns (verdicts.go: the newest patch of each
// minor with its default gates and with each of verdictGateSets where it
// applies, and each minor's first patch with its defaults; label filter
// release-sensitive, VERDICT_LABELS overrides) and writes, besides the
// matrix, a verdict document (-doc, default docs/clientgo-releases.md) that
// explains each failing spec from a table of known upstream changes; it
// fails only if a column errored or a failing spec is unexplained.
//
//	go run ./hack/matrix -verdicts [-out DIR] [-doc docs/clientgo-releases.md]
//
// A minor version (v0.33) means its newest patch on the module proxy. Each
// client-go version gets a go.mod of its own, generated from this module's
// direct requirements and resolved afresh by `go mod tidy` (downgrading one
// go.mod in place leaves newer indirect modules behind that older
// apimachinery does not compile with); the suite is built with
// `-modfile`, so the source tree is the same for every column.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	goversion "go/version"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"

	"github.com/informer-conformance/informer-conformance/internal/lines"
	"github.com/informer-conformance/informer-conformance/report"
	"github.com/informer-conformance/informer-conformance/report/known"
)

// The modules that move together.
var k8sModules = []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/client-go"}

// main reads the flags (their defaults from the environment the Makefile
// exports), applies the -verdicts defaults, and runs the matrix.
func main() {
	clientGo := flag.String("client-go", os.Getenv("CLIENT_GO"), "client-go versions, space or comma separated (v0.33 = newest v0.33.x, v0.38.0-alpha.2 a pre-release, \""+nextMinor+"\" the newest pre-release of the next minor); empty = go.mod's (-verdicts: "+defaultVerdictMinors+")")
	kube := flag.String("kube", os.Getenv("KUBE_VERSIONS"), "kube-apiserver versions; empty = the pinned default")
	etcd := flag.String("etcd", os.Getenv("ETCD_VERSIONS"), "etcd versions (3.5.x to 3.7.x), each a server column with each kube-apiserver version; empty = the pinned default")
	gates := flag.String("gates", os.Getenv("GATES"), `client-go feature gate sets, ";" separated, each "Name=false,Other=true" or "default"; empty = defaults only (not with -verdicts, which plans its own)`)
	labels := flag.String("label-filter", envOr("LABEL_FILTER", "!slow && !extra-stack"), "ginkgo label filter (-verdicts: $VERDICT_LABELS, or "+defaultVerdictLabels+")")
	procs := flag.Int("procs", 4, "ginkgo parallel processes")
	out := flag.String("out", "", "output directory; empty = $"+report.EnvArtifacts+"/matrix (-verdicts: .../verdicts), _artifacts if unset")
	suites := flag.String("suites", "./suites/conformance", "suite packages")
	verdicts := flag.Bool("verdicts", false, "plan the verdict columns (each minor's newest patch with default and each verdict gate set, its first patch with defaults) and write the verdict document")
	doc := flag.String("doc", "", "with -verdicts: the verdict document to write; empty = docs/clientgo-releases.md in the module")
	render := flag.String("render", "", "with -verdicts: run nothing, write the verdict document from an earlier verdict run's matrix.json (after the explanation table changed)")
	runCommit := flag.String("commit", "", "with -render: the suite's commit the columns ran at, for column files that do not record it (runs before they did); the suite defects fixed since (the verdict data's entries of kind \"suite defect\") explain their failures")
	reports := flag.String("reports", "", "with -render: where the columns' report directories are, found by name when not where their run wrote them (the downloaded shards); empty = beside matrix.json")
	list := flag.Bool("list", false, "print the planned columns, one per line (index and name), and run nothing: how many shards a workflow fans out to")
	shardFlag := flag.String("shard", os.Getenv("MATRIX_SHARD"), "I/N: run only the planned columns whose index is I modulo N (0 <= I < N); every run writes its column files to OUT/columns for `matrix merge`")
	shardBy := flag.String("shard-by", os.Getenv("MATRIX_SHARD_BY"), "with -shard: \"column\" (the default: the columns whose index is I modulo N, a machine each) or \"version\" (every column of the client-go versions whose index among the plan's versions is I modulo N: each version built once, for a few machines or runs one after the other)")
	if len(os.Args) > 1 && os.Args[1] == "merge" {
		os.Exit(mergeMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "bisect" {
		os.Exit(bisectMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "compare" {
		os.Exit(compareMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "flakes" {
		os.Exit(flakesMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "verdict" {
		os.Exit(verdictMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "skew" {
		os.Exit(skewMain(os.Args[2:]))
	}
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	gateSets, err := parseGateSets(*gates)
	if err != nil {
		fmt.Fprintln(os.Stderr, "matrix:", err)
		os.Exit(2)
	}
	sh, err := parseShard(*shardFlag)
	if err == nil {
		sh, err = parseShardBy(sh, *shardBy)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "matrix:", err)
		os.Exit(2)
	}
	cfg := config{clientGo: fields(*clientGo), kube: fields(*kube), etcd: fields(*etcd), gates: gateSets, labels: *labels, procs: *procs, out: *out, suites: *suites, verdicts: *verdicts, doc: *doc, shard: sh, list: *list}
	if cfg.out == "" {
		cfg.out = filepath.Join(report.ArtifactsRoot(), map[bool]string{false: "matrix", true: "verdicts"}[cfg.verdicts])
	}
	if cfg.verdicts {
		if len(cfg.gates) > 0 {
			fmt.Fprintf(os.Stderr, "matrix: -verdicts plans its own gate sets (default, %s); leave -gates and GATES empty\n", verdictGateSetsString())
			os.Exit(2)
		}
		if len(cfg.clientGo) == 0 {
			cfg.clientGo = fields(defaultVerdictMinors)
		}
		if !set["label-filter"] {
			cfg.labels = envOr("VERDICT_LABELS", defaultVerdictLabels)
		}
		cfg.gateLabels = envOr("VERDICT_GATE_LABELS", defaultVerdictGateLabels)
		cfg.firstPatches = os.Getenv("VERDICT_FIRST_PATCHES")
		cfg.defaultGatesOnly = os.Getenv("VERDICT_GATES") == "none"
		cfg.stepKube = verdictSteps("VERDICT_KUBE_STEPS", defaultVerdictKubeSteps)
		cfg.stepEtcd = verdictSteps("VERDICT_ETCD_STEPS", defaultVerdictEtcdSteps)
	} else if set["doc"] || set["render"] || set["commit"] {
		fmt.Fprintln(os.Stderr, "matrix: -doc, -render and -commit are the verdict document's: they go with -verdicts")
		os.Exit(2)
	}
	if *render != "" {
		if err := renderVerdicts(cfg, *render, *reports, *runCommit); err != nil {
			fmt.Fprintln(os.Stderr, "matrix:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "matrix:", err)
		os.Exit(1)
	}
}

// config is what one invocation runs and where it writes.
type config struct {
	clientGo, kube, etcd []string
	gates                []gateSet
	labels               string
	// gateLabels is the label filter of a verdict run's gate columns.
	gateLabels string
	// focus, when set, is ginkgo's --focus (matrix bisect's -spec).
	focus       string
	procs       int
	out, suites string
	// verdicts plans the verdict columns (verdictPlan) instead of clientGo ×
	// kube × gates, and writes the verdict document to doc ("" = the
	// module's docs/clientgo-releases.md).
	verdicts bool
	doc      string
	// firstPatches is VERDICT_FIRST_PATCHES (firstPatchesOf), and
	// defaultGatesOnly VERDICT_GATES=none: a verdict run plans no gate
	// sets.
	firstPatches     string
	defaultGatesOnly bool
	// stepKube and stepEtcd are VERDICT_KUBE_STEPS and VERDICT_ETCD_STEPS:
	// the servers a verdict run's newest client-go release also runs
	// against, for the page's server section (withServerSteps).
	stepKube, stepEtcd []string
	// shard is the share of the planned columns this run runs; list
	// prints the plan instead.
	shard shard
	list  bool
	// commit is the suite's commit (git HEAD; empty outside a checkout),
	// recorded on each column.
	commit string
}

// server is what a column runs against: a kube-apiserver version and an
// etcd version ("" = the pinned default, named by the column's report).
type server struct{ Kube, Etcd string }

// compareServers orders servers by kube-apiserver version, then etcd's.
func compareServers(a, b server) int {
	return cmp.Or(semver.Compare(a.Kube, b.Kube), semver.Compare(a.Etcd, b.Etcd))
}

// server is what the column ran against.
func (c column) server() server { return server{c.Kube, c.Etcd} }

// servers is every kube-apiserver version with every etcd version.
func servers(kube, etcd []string) []server {
	if len(kube) == 0 {
		kube = []string{""}
	}
	if len(etcd) == 0 {
		etcd = []string{""}
	}
	var s []server
	for _, k := range kube {
		for _, e := range etcd {
			s = append(s, server{k, e})
		}
	}
	return s
}

// column is one run: a client-go version against a kube-apiserver version
// (on an etcd version).
type column struct {
	ClientGo string  `json:"clientGo"`
	Kube     string  `json:"kubeAPIServer"`
	Etcd     string  `json:"etcd,omitempty"`
	Gates    gateSet `json:"gates,omitempty"`
	// Error says why the suite did not run or did not report (a version that
	// does not resolve or compile): every cell of the column is empty.
	Error string `json:"error,omitempty"`
	// NotApplicable says why the column was not run although nothing went
	// wrong: its gate set names a gate its client-go lacks, or asks a locked
	// gate for the other value ("client-go v0.31.14 has no AtomicFIFO gate").
	NotApplicable string `json:"notApplicable,omitempty"`
	// Labels is the column's label filter when it is not the run's (a
	// verdict run's gate columns run the release-sensitive specs only).
	Labels string `json:"labelFilter,omitempty"`
	// Toolchain is the Go toolchain the column ran with when its client-go
	// needs a newer Go than this one (GOTOOLCHAIN, from MATRIX_GOTOOLCHAIN);
	// empty: this one.
	Toolchain string `json:"toolchain,omitempty"`
	// Raised are the modules the column requires at a newer version than
	// its client-go asks, the proxy not serving that one.
	Raised []string `json:"raised,omitempty"`
	// Skipped are, on the next minor's column, the newer pre-releases it
	// stands in for, each with why it could not be built here.
	Skipped []string `json:"skipped,omitempty"`
	// Commit is the suite's commit the column ran at (empty: not recorded;
	// `-render -commit` names it for such runs).
	Commit string `json:"commit,omitempty"`
	// ServerStep marks a verdict run's column of its newest client-go
	// release against another server (withServerSteps): the page's server
	// section compares it, its header names the run's server without it.
	ServerStep bool `json:"serverStep,omitempty"`
	// Dir is where the column's run wrote its reports.
	Dir     string               `json:"dir,omitempty"`
	Passed  bool                 `json:"passed"`
	Seconds float64              `json:"seconds"`
	Cells   map[string]cell      `json:"cells"`
	Suite   *report.SuiteSummary `json:"-"`
}

// name is the column's heading: its client-go version, and its
// kube-apiserver version, etcd version and gate set when it has them.
func (c column) name() string {
	n := "client-go " + c.ClientGo
	if c.Kube != "" {
		n += " / kube-apiserver " + c.Kube
	}
	if c.Etcd != "" {
		n += " / etcd " + c.Etcd
	}
	if len(c.Gates) > 0 {
		n += " / " + c.Gates.String()
	}
	return n
}

// cell is one spec's result in one column.
type cell struct {
	Outcome string         `json:"outcome"`
	Reinits int            `json:"reinitialisations"`
	ByCause map[string]int `json:"byCause,omitempty"`
	Failure string         `json:"failure,omitempty"`
	// Control: the spec is a negative control (it tests the suite against
	// a broken client; no client-go change explains its outcome).
	Control bool `json:"control,omitempty"`
}

// run plans the columns, runs them, and writes matrix.md, matrix.html
// and matrix.json (and with -verdicts the verdict document). It fails if a
// column that applies did not pass (-verdicts: if a column errored or a
// failing spec is unexplained).
func run(ctx context.Context, cfg config) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	// Each column's go.mod starts from the versions this repository's own
	// runs use (hack/pin, the workspace's pins: the suite's go.mod names
	// the lowest versions it compiles with, for its importers), client-go
	// swapped; the pinned client-go's column runs in the workspace itself.
	gomod, err := pinnedGoMod(root)
	if err != nil {
		return err
	}
	pinned, err := requiredVersion(gomod, "k8s.io/client-go")
	if err != nil {
		return err
	}
	if len(cfg.clientGo) == 0 {
		cfg.clientGo = []string{pinned}
	}
	if len(cfg.gates) == 0 {
		cfg.gates = []gateSet{nil}
	}
	out, err := filepath.Abs(cfg.out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	cfg.commit, _ = gitOutput(root, "rev-parse", "HEAD") // none outside a checkout
	var plan []column
	// The versions the proxy lists, when the plan needs them; "next" is the
	// newest pre-release of the next minor whose modules resolve here.
	var listed, skipped []string
	resolved := map[string]columnModules{} // by client-go version, resolved while planning
	if cfg.verdicts || slices.Contains(cfg.clientGo, nextMinor) {
		if listed, err = listClientGo(ctx, root); err != nil {
			return err
		}
	}
	if slices.Contains(cfg.clientGo, nextMinor) {
		if listed, skipped, err = dropUnresolvable(ctx, root, gomod, listed, filepath.Join(out, "modfiles"), resolved); err != nil {
			return err
		}
		if newestPrerelease(listed) == "" && len(skipped) > 0 {
			return fmt.Errorf("%q: no pre-release of the next minor builds here: %s", nextMinor, strings.Join(skipped, "; "))
		}
	}
	if cfg.verdicts {
		gateSets := verdictGateSets
		if cfg.defaultGatesOnly {
			gateSets = nil // e.g. first patches given as the versions
		}
		if plan, err = verdictPlan(listed, cfg.clientGo, gateSets, servers(cfg.kube, cfg.etcd), firstPatchesOf(cfg.firstPatches)); err != nil {
			return err
		}
		plan = withServerSteps(plan, stepServers(cfg.stepKube, cfg.stepEtcd))
		for i := range plan {
			if len(plan[i].Gates) > 0 && cfg.gateLabels != cfg.labels {
				plan[i].Labels = cfg.gateLabels
			}
		}
	} else {
		versions, err := resolve(ctx, root, cfg.clientGo, listed)
		if err != nil {
			return err
		}
		for _, v := range versions {
			for _, s := range servers(cfg.kube, cfg.etcd) {
				for _, g := range cfg.gates {
					plan = append(plan, column{ClientGo: v, Kube: s.Kube, Etcd: s.Etcd, Gates: g})
				}
			}
		}
	}
	if next := newestPrerelease(listed); next != "" && len(skipped) > 0 {
		for i := range plan {
			if plan[i].ClientGo == next {
				plan[i].Skipped = skipped
			}
		}
	}
	if cfg.list {
		for i, c := range plan {
			fmt.Printf("%d\t%s\n", i, c.name())
		}
		return nil
	}
	for _, s := range append(servers(cfg.kube, cfg.etcd), stepServers(cfg.stepKube, cfg.stepEtcd)...) {
		step("kube-apiserver %s, etcd %s: building or finding the binaries", orDefault(s.Kube), orDefault(s.Etcd))
		if err := goCmd(ctx, root, nil, os.Stderr, "run", "./hack/build-binaries", "-kube-version", s.Kube, "-etcd-version", s.Etcd); err != nil {
			return fmt.Errorf("binaries for kube-apiserver %s, etcd %s: %w", orDefault(s.Kube), orDefault(s.Etcd), err)
		}
	}

	gatesOf := func(version string) (knownGates, error) { return clientGoGates(ctx, root, version) }
	cols, err := runPlan(ctx, root, cfg, out, gomod, pinned, plan, resolved, gatesOf)
	if err != nil {
		return err
	}
	if err := writeMatrix(out, cols); err != nil {
		return err
	}
	if err := checkTested(cols); err != nil {
		return fmt.Errorf("%w (label filter %q, %s)", err, cfg.labels, cfg.suites)
	}
	if cfg.verdicts {
		if cfg.shard.n > 1 {
			step("%s: the verdict document needs every column: `matrix merge -verdicts` the shards' column files, then -verdicts -render OUT/matrix.json", cfg.shard)
			return checkRan(cols)
		}
		return writeVerdicts(cfg, root, cols)
	}
	return checkPassed(cols)
}

// writeMatrix writes the table (printed too), the HTML grid and the JSON
// of cols to out.
func writeMatrix(out string, cols []column) error {
	table := markdown(cols)
	if err := os.WriteFile(filepath.Join(out, "matrix.md"), []byte(table), 0o644); err != nil {
		return err
	}
	page, err := htmlMatrix(cols)
	if err != nil {
		return fmt.Errorf("matrix.html: %w", err)
	}
	if err := os.WriteFile(filepath.Join(out, "matrix.html"), page, 0o644); err != nil {
		return err
	}
	data, _ := json.MarshalIndent(cols, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "matrix.json"), data, 0o644); err != nil {
		return err
	}
	fmt.Print(table)
	step("table: %s (and matrix.html)", filepath.Join(out, "matrix.md"))
	return nil
}

// checkRan fails if a column did not run (an error, a missing shard): a
// verdict run's columns may fail, the verdict document judges them.
func checkRan(cols []column) error {
	for _, c := range cols {
		if c.Error != "" {
			return fmt.Errorf("%s did not run: %s", c.name(), c.Error)
		}
	}
	return nil
}

// checkTested fails a run in which no column that ran had a spec pass or
// fail: a matrix that tests nothing (an empty selection) is no verdict.
// Columns that did not run (an error, not applicable) are judged by
// checkRan and checkPassed.
func checkTested(cols []column) error {
	ran := false
	for _, c := range cols {
		if c.Error != "" || c.NotApplicable != "" {
			continue
		}
		ran = true
		for _, cl := range c.Cells {
			if cl.Outcome != "skipped" && cl.Outcome != "pending" {
				return nil
			}
		}
	}
	if !ran {
		return nil
	}
	return errors.New("no spec passed or failed in any column")
}

// checkPassed fails unless every column that applies passed.
func checkPassed(cols []column) error {
	for _, c := range cols {
		if c.NotApplicable == "" && !c.Passed {
			return errors.New("not every version passed: see the table")
		}
	}
	return nil
}

// runPlan runs the planned columns in order: a column whose gate set does
// not apply to its client-go (gatesOf, normally clientGoGates, then
// gateSet.notApplicable) is returned unrun with NotApplicable set, one whose
// client-go's gates cannot be read with Error set; each other client-go
// version's go.mod is resolved once, before its first column runs. A column
// with the default gates needs no lookup.
func runPlan(ctx context.Context, root string, cfg config, out string, gomod []byte, pinned string, plan []column, resolved map[string]columnModules, gatesOf func(version string) (knownGates, error)) ([]column, error) {
	type prepared struct {
		columnModules
		err error
	}
	modfiles := map[string]prepared{}
	for v, m := range resolved {
		modfiles[v] = prepared{columnModules: m}
	}
	type lookedUp struct {
		known knownGates
		err   error
	}
	known := map[string]lookedUp{}
	var cols []column
	ps := plannedOf(plan)
	done := func(index int, col column) error {
		cols = append(cols, col)
		return writeColumnFile(out, columnFile{Index: index, Plan: ps, Labels: cfg.labels, Suites: cfg.suites, Column: col})
	}
	for index, col := range plan {
		if ctx.Err() != nil {
			return cols, ctx.Err()
		}
		if !cfg.shard.has(plan, index) {
			continue
		}
		v := col.ClientGo
		if len(col.Gates) > 0 {
			k, ok := known[v]
			if !ok {
				k.known, k.err = gatesOf(v)
				known[v] = k
			}
			if k.err != nil {
				col.Error = fmt.Sprintf("cannot tell whether gate set %s applies: %v", col.Gates, k.err)
			} else if col.NotApplicable = col.Gates.notApplicable(v, k.known); col.NotApplicable != "" {
				step("%s: not applicable: %s", col.name(), col.NotApplicable)
			}
			if col.Error != "" || col.NotApplicable != "" {
				if err := done(index, col); err != nil {
					return cols, err
				}
				continue
			}
		}
		p, ok := modfiles[v]
		if !ok && v != pinned {
			p.columnModules, p.err = resolveModules(ctx, root, gomod, v, filepath.Join(out, "modfiles"))
		}
		modfiles[v] = p
		if p.err != nil {
			col.Error = p.err.Error()
		} else {
			col.Toolchain, col.Raised = p.toolchain, p.raised
			col = runColumn(ctx, root, cfg, out, p.modfile, col)
		}
		if err := done(index, col); err != nil {
			return cols, err
		}
	}
	return cols, ctx.Err()
}

// renderVerdicts writes the verdict document from the columns an earlier
// verdict run wrote to matrix.json, dated by that file.
func renderVerdicts(cfg config, matrixJSON, reports, commit string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(matrixJSON)
	if err != nil {
		return err
	}
	var cols []column
	if err := json.Unmarshal(data, &cols); err != nil {
		return fmt.Errorf("%s: %w", matrixJSON, err)
	}
	fi, err := os.Stat(matrixJSON)
	if err != nil {
		return err
	}
	if reports == "" {
		reports = filepath.Dir(matrixJSON)
	}
	if err := findColumnDirs(cols, reports); err != nil {
		return err
	}
	if commit != "" {
		full, err := gitOutput(root, "rev-parse", "--verify", commit+"^{commit}")
		if err != nil {
			return fmt.Errorf("-commit %q: %w", commit, err)
		}
		for i := range cols {
			if cols[i].Commit == "" {
				cols[i].Commit = full
			}
		}
	}
	return writeVerdictsAt(cfg, root, cols, fi.ModTime())
}

// findColumnDirs points each column whose Dir holds no informer report at
// a directory of the same name under root that does (the columns of
// sharded runs, each written on its own machine and downloaded here); a
// column found nowhere keeps its Dir, and its upgrade steps say they were
// not compared.
func findColumnDirs(cols []column, root string) error {
	found := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), "informer-report-") && strings.HasSuffix(d.Name(), ".json") {
			dir := filepath.Dir(path)
			if _, seen := found[filepath.Base(dir)]; !seen {
				found[filepath.Base(dir)] = dir
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("column reports under %s: %w", root, err)
	}
	for i, c := range cols {
		if c.Dir == "" {
			continue
		}
		if own, _ := filepath.Glob(filepath.Join(c.Dir, "informer-report-*.json")); len(own) > 0 {
			continue
		}
		if d, ok := found[filepath.Base(c.Dir)]; ok {
			cols[i].Dir = d
		}
	}
	return nil
}

// gitContains says whether the checkout at root has fix in commit's
// history (withSuiteDefects' fixed): one git call per (commit, fix), not
// per spec.
func gitContains(root string) func(commit, fix string) bool {
	contains := map[[2]string]bool{}
	return func(commit, fix string) bool {
		k := [2]string{commit, fix}
		if v, ok := contains[k]; ok {
			return v
		}
		_, err := gitOutput(root, "merge-base", "--is-ancestor", fix, commit)
		contains[k] = err == nil
		return contains[k]
	}
}

// writeVerdicts writes the verdict document of a -verdicts run and fails
// if a column errored or a failing spec is unexplained.
func writeVerdicts(cfg config, root string, cols []column) error {
	return writeVerdictsAt(cfg, root, cols, time.Now())
}

// writeVerdictsAt is writeVerdicts for a run that ended at date.
func writeVerdictsAt(cfg config, root string, cols []column, date time.Time) error {
	path := cfg.doc
	if path == "" {
		path = filepath.Join(root, "docs", "clientgo-releases.md")
	}
	fixed := gitContains(root)
	table := withSuiteDefects(verdicts, fixed)
	catalogue, err := catalogueIDs(root)
	if err != nil {
		return fmt.Errorf("the scenario catalogue: %w", err)
	}
	doc, problems := verdictDoc(verdictRun{Date: date, Cores: runtime.NumCPU(), Labels: cfg.labels, Command: verdictCommand(cfg), DefaultGatesOnly: cfg.defaultGatesOnly, Catalogue: catalogue, Fixed: fixed}, cols, table)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("verdict document: %w", err)
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		return fmt.Errorf("verdict document: %w", err)
	}
	step("verdicts: %s", path)
	if abs, err := filepath.Abs(path); err == nil && abs == filepath.Join(root, "docs", "clientgo-releases.md") {
		// The page in the tree: the data the suite ships learns the run too.
		data := filepath.Join(root, filepath.FromSlash(known.File))
		if err := writeKnownData(data, cfg, cols, table, "docs/clientgo-releases.md"); err != nil {
			return fmt.Errorf("verdict data: %w", err)
		}
		step("verdict data: %s", data)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s) a person must look at (see %s):\n  %s", len(problems), path, strings.Join(problems, "\n  "))
	}
	return nil
}

// gitOutput runs git in dir and returns its trimmed output.
func gitOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// columnDir is where a column's run writes its reports: out, then the
// column's version, kube-apiserver and gate set.
func columnDir(out string, col column) string {
	name := col.ClientGo + "_" + col.Kube
	if col.Etcd != "" {
		name += "_etcd" + col.Etcd
	}
	return filepath.Join(out, report.SafeName(strings.TrimSpace(name+"_"+col.Gates.String())))
}

// runColumn runs the suite once and reads the informer report it wrote.
func runColumn(ctx context.Context, root string, cfg config, out, modfilePath string, col column) column {
	dir := columnDir(out, col)
	col.Commit = cfg.commit
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		col.Error = err.Error()
		return col
	}
	logPath := filepath.Join(dir, "ginkgo.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		col.Error = err.Error()
		return col
	}
	defer logFile.Close()
	// e2e.RunSpecs runs the specs only with INFORMER_CONFORMANCE=1
	// (e2e.EnvRun).
	env := []string{report.EnvArtifacts + "=" + dir, "INFORMER_CONFORMANCE=1"}
	if col.Kube != "" {
		env = append(env, "KUBE_VERSION="+col.Kube)
	}
	if col.Etcd != "" {
		env = append(env, "ETCD_VERSION="+col.Etcd)
	}
	if modfilePath != "" {
		// -modfile is refused in workspace mode (go.work at the root).
		env = append(env, "GOWORK=off", "GOFLAGS=-modfile="+modfilePath)
	}
	if col.Toolchain != "" {
		env = append(env, "GOTOOLCHAIN="+col.Toolchain)
	}
	env = append(env, col.Gates.env()...)
	labels := cfg.labels
	if col.Labels != "" {
		labels = col.Labels
	}
	col.Dir = dir
	step("%s: running %s (label filter %q); log %s", col.name(), cfg.suites, labels, logPath)
	start := time.Now()
	// Ginkgo's own progress goes to the log; a line per finished spec to
	// the terminal, so a long column is never silent.
	w := io.MultiWriter(logFile, &specTicker{prefix: "  " + col.name() + ": "})
	args := []string{"tool", "ginkgo", fmt.Sprintf("-procs=%d", cfg.procs), "--no-color",
		"--label-filter=" + labels, "--json-report=report.json", "--output-dir=" + dir}
	if cfg.focus != "" {
		args = append(args, "--focus="+cfg.focus)
	}
	if hasInformerMetrics(col.ClientGo) {
		// The informers' recording metrics provider (probe/informermetrics.go).
		args = append(args, "--tags=informermetrics")
	}
	runErr := goCmd(ctx, root, env, w, append(args, cfg.suites)...)
	col.Seconds = time.Since(start).Seconds()

	suiteName := filepath.Base(cfg.suites)
	jsonPath := report.FilesIn(dir, suiteName).JSON
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		col.Error = fmt.Sprintf("no report (%v); the suite's last words: %s", runErr, tail(logPath, 6))
		return col
	}
	var s report.SuiteSummary
	if err := json.Unmarshal(data, &s); err != nil {
		col.Error = fmt.Sprintf("read %s: %v", jsonPath, err)
		return col
	}
	if s.ClientGo != "" && s.ClientGo != col.ClientGo {
		col.Error = fmt.Sprintf("the suite ran with client-go %s, not %s", s.ClientGo, col.ClientGo)
		return col
	}
	if col.Kube == "" {
		col.Kube = s.KubeAPIServer
	}
	if col.Etcd == "" {
		col.Etcd = s.Etcd
	}
	if err := col.Gates.check(s.ClientGoGates); err != nil {
		col.Error = fmt.Sprintf("client-go %s: %v", col.ClientGo, err)
		return col
	}
	col.Cells = map[string]cell{}
	col.Passed = runErr == nil
	for _, sp := range s.Specs {
		c := cell{Outcome: sp.Outcome, ByCause: map[string]int{}, Control: slices.Contains(sp.Labels, report.LabelNegativeControl)}
		for _, n := range sp.Informers {
			for cause, k := range n.Reinitialisations {
				c.Reinits += k
				c.ByCause[string(cause)] += k
			}
		}
		if sp.Failure != "" {
			c.Failure = firstLine(sp.Failure)
		}
		col.Cells[sp.Spec] = c
	}
	step("%s: %s in %.0fs", col.name(), map[bool]string{true: "passed", false: "FAILED"}[col.Passed], col.Seconds)
	return col
}

// grid is the matrix both renderings (markdown, HTML) draw: a row per spec
// that ran somewhere, a cell per column, and the specs whose columns differ.
// Columns not applicable (their gate set does not apply to their
// client-go) have no cells: they are only listed, in notRun.
type grid struct {
	// cols are the columns drawn: all but those not applicable.
	cols []column
	rows []gridRow
	// outcomeDiffers: the outcome changes between columns; causesDiffer: the
	// same outcome, other re-initialisations by cause.
	outcomeDiffers, causesDiffer []gridRow
	// notRun: the columns that did not run (errors, not applicable), with why.
	notRun []string
}

// gridRow is one spec's cells, a cell per drawn column.
type gridRow struct {
	Spec  string
	Cells []gridCell
}

// gridCell is one spec in one column, as both renderings draw it.
type gridCell struct {
	// Kind is "pass", "fail", "skipped", "missing" (the column has no such
	// spec) or "did-not-run" (the column did not run).
	Kind    string
	Reinits int
	// Label names the column in a difference: its client-go version, and its
	// kube-apiserver version and gates when these vary.
	Label, Outcome, ByCause, Failure string
}

// ran says whether the spec ran (passed or failed) in the column.
func (c gridCell) ran() bool { return c.Kind == "pass" || c.Kind == "fail" }

// newGrid computes the matrix: the rows in spec order, a spec skipped in
// every column (filtered out by labels) left out.
func newGrid(all []column) grid {
	var g grid
	for _, c := range all {
		switch {
		case c.NotApplicable != "":
			g.notRun = append(g.notRun, c.name()+": not applicable: "+c.NotApplicable)
		case c.Error != "":
			g.notRun = append(g.notRun, c.name()+" did not run: "+c.Error)
			g.cols = append(g.cols, c)
		default:
			g.cols = append(g.cols, c)
		}
	}
	cols := g.cols
	specs := map[string]bool{}
	for _, c := range cols {
		for s := range c.Cells {
			specs[s] = true
		}
	}
	// Name a column by its client-go version alone unless the columns also
	// differ in kube-apiserver version or gates.
	kube, etcd, gates := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, c := range cols {
		if c.Error == "" {
			kube[c.Kube] = true
			etcd[c.Etcd] = true
			gates[c.Gates.String()] = true
		}
	}
	label := func(c column) string {
		l := c.ClientGo
		if len(kube) > 1 {
			l += " / kube-apiserver " + c.Kube
		}
		if len(etcd) > 1 {
			l += " / etcd " + c.Etcd
		}
		if len(gates) > 1 {
			l += " / " + c.Gates.String()
		}
		return l
	}
	for _, s := range slices.Sorted(maps.Keys(specs)) {
		if skippedEverywhere(cols, s) {
			continue
		}
		row := gridRow{Spec: s}
		outcomes, reinits := map[string]bool{}, map[string]bool{}
		for _, c := range cols {
			cl, ok := c.Cells[s]
			gc := gridCell{Label: label(c), Outcome: cl.Outcome, Reinits: cl.Reinits, ByCause: report.Counts(cl.ByCause), Failure: cl.Failure}
			switch {
			case c.Error != "":
				gc.Kind = "did-not-run"
			case !ok:
				gc.Kind = "missing"
			case cl.Outcome == "skipped":
				gc.Kind = "skipped"
			case cl.Outcome == "passed":
				gc.Kind = "pass"
			default:
				gc.Kind = "fail"
			}
			if gc.ran() {
				outcomes[cl.Outcome] = true
				reinits[gc.ByCause] = true
			}
			row.Cells = append(row.Cells, gc)
		}
		g.rows = append(g.rows, row)
		switch {
		case len(outcomes) > 1:
			g.outcomeDiffers = append(g.outcomeDiffers, row)
		case len(reinits) > 1:
			g.causesDiffer = append(g.causesDiffer, row)
		}
	}
	return g
}

const (
	outcomeDiffersTitle = "Outcomes that differ between versions"
	causesDifferTitle   = "Same outcome, other re-initialisations (specs that allow several causes, e.g. a restart's races, can differ from run to run: rerun before calling it a change)"
)

// markdown is the table: rows = specs, columns = versions; then the specs
// whose outcome or re-initialisations differ between versions.
func markdown(cols []column) string {
	g := newGrid(cols)
	var b strings.Builder
	b.WriteString("# client-go version matrix\n\nCells: outcome, re-initialisations (all informers of the spec) `r=N`.\n\n| spec |")
	for _, c := range g.cols {
		fmt.Fprintf(&b, " %s |", c.name())
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(g.cols)) + "\n")
	for _, r := range g.rows {
		fmt.Fprintf(&b, "| %s |", r.Spec)
		for _, c := range r.Cells {
			switch c.Kind {
			case "did-not-run":
				b.WriteString(" did not run |")
			case "missing":
				b.WriteString(" - |")
			case "skipped":
				b.WriteString(" skipped |")
			default:
				fmt.Fprintf(&b, " %s r=%d |", map[bool]string{true: "pass", false: "**FAIL**"}[c.Kind == "pass"], c.Reinits)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	for _, n := range g.notRun {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	for _, c := range g.cols {
		if len(c.Skipped) > 0 {
			fmt.Fprintf(&b, "- %s: %s\n", c.name(), skippedNote(c.Skipped))
		}
	}
	writeSkew(&b, g.cols)
	differences(&b, outcomeDiffersTitle, g.outcomeDiffers)
	differences(&b, causesDifferTitle, g.causesDiffer)
	return b.String()
}

// skippedNote says which newer pre-releases the next minor's column
// stands in for, and why.
func skippedNote(skipped []string) string {
	return "the newest pre-release of its minor that builds here; newer ones skipped: " + strings.Join(skipped, "; ")
}

// differences lists rows under a title, each with every column that ran
// the spec.
func differences(b *strings.Builder, title string, rows []gridRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## %s\n\n", title)
	for _, r := range rows {
		fmt.Fprintf(b, "- %s:", r.Spec)
		for _, c := range r.Cells {
			if c.ran() {
				fmt.Fprintf(b, " %s: %s, re-initialisations %s", c.Label, c.Outcome, c.ByCause)
				if c.Failure != "" {
					fmt.Fprintf(b, " (%s)", c.Failure)
				}
				b.WriteString(";")
			}
		}
		b.WriteString("\n")
	}
}

// skippedEverywhere says whether no column ran the spec (its labels left it
// out everywhere).
func skippedEverywhere(cols []column, spec string) bool {
	for _, c := range cols {
		if cl, ok := c.Cells[spec]; ok && cl.Outcome != "skipped" {
			return false
		}
	}
	return true
}

// resolve turns minor versions into the newest patch the proxy serves
// (listed: the versions it lists, nil to list them when needed).
func resolve(ctx context.Context, root string, want, listed []string) ([]string, error) {
	var out []string
	for _, v := range want {
		if v == nextMinor {
			if listed == nil {
				var err error
				if listed, err = listClientGo(ctx, root); err != nil {
					return nil, err
				}
			}
			next := newestPrerelease(listed)
			if next == "" {
				return nil, fmt.Errorf("%q: the module proxy serves no pre-release of a client-go minor newer than its newest release", nextMinor)
			}
			out = append(out, next)
			continue
		}
		v, err := clientGoVersion(v)
		if err != nil {
			return nil, err
		}
		if isPatch(v) || semver.Prerelease(v) != "" {
			out = append(out, v)
			continue
		}
		if listed == nil {
			if listed, err = listClientGo(ctx, root); err != nil {
				return nil, err
			}
		}
		best := newestRelease(listed, v)
		if best == "" {
			return nil, fmt.Errorf("the module proxy serves no release of k8s.io/client-go %s", v)
		}
		out = append(out, best)
	}
	return out, nil
}

// clientGoVersion checks a version given on the command line (v0.33,
// 0.33.13, ...) and adds the "v" it may lack.
func clientGoVersion(v string) (string, error) {
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	if !semver.IsValid(v) {
		return "", fmt.Errorf("client-go version %q is not a version like v0.33 or v0.33.13", v)
	}
	return v, nil
}

// isPatch says whether a valid version names a patch (v0.33.13), not a
// minor (v0.33).
func isPatch(v string) bool { return semver.Canonical(v) == v && strings.Count(v, ".") == 2 }

// listClientGo lists the client-go versions the module proxy serves.
func listClientGo(ctx context.Context, root string) ([]string, error) {
	var buf bytes.Buffer
	if err := goCmd(ctx, root, nil, &buf, "list", "-m", "-versions", "k8s.io/client-go"); err != nil {
		return nil, fmt.Errorf("list client-go versions: %w", err)
	}
	return strings.Fields(buf.String()), nil
}

// releasesOf are the releases (no pre-releases) of a minor (v0.33) among
// listed versions, oldest first.
func releasesOf(listed []string, minor string) []string {
	var out []string
	for _, l := range listed {
		if semver.IsValid(l) && semver.MajorMinor(l) == minor && semver.Prerelease(l) == "" {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, semver.Compare)
	return out
}

// nextMinor names, among the versions a run is given, the newest
// pre-release of the minor after the newest release (v0.38.0-alpha.2 while
// v0.37 is the newest minor released): what the next release will change,
// before it ships.
const nextMinor = "next"

// newestPrerelease is the newest pre-release (alpha, beta, rc) among
// listed versions of a minor newer than every release's, "" if none.
func newestPrerelease(listed []string) string {
	newestMinor := ""
	for _, l := range listed {
		if semver.IsValid(l) && semver.Prerelease(l) == "" && semver.Compare(semver.MajorMinor(l), newestMinor) > 0 {
			newestMinor = semver.MajorMinor(l)
		}
	}
	best := ""
	for _, l := range listed {
		if semver.IsValid(l) && semver.Prerelease(l) != "" && semver.Compare(semver.MajorMinor(l), newestMinor) > 0 && semver.Compare(l, best) > 0 {
			best = l
		}
	}
	return best
}

// newestRelease is the newest release of a minor among listed versions,
// "" if none.
func newestRelease(listed []string, minor string) string {
	r := releasesOf(listed, minor)
	if len(r) == 0 {
		return ""
	}
	return r[len(r)-1]
}

// writeModfile writes go.<version>.mod: this module's direct requirements
// with the k8s.io modules at version, resolved by go mod tidy.
func writeModfile(ctx context.Context, root string, gomod []byte, version, dir, toolchain string) (string, []string, error) {
	f, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		return "", nil, err
	}
	for _, r := range slices.Clone(f.Require) {
		if r.Indirect {
			if err := f.DropRequire(r.Mod.Path); err != nil {
				return "", nil, err
			}
		}
	}
	for _, m := range k8sModules {
		if err := f.AddRequire(m, version); err != nil {
			return "", nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, "go."+version+".mod")
	env := []string{"GOWORK=off"}
	if toolchain != "" {
		env = append(env, "GOTOOLCHAIN="+toolchain)
	}
	// A dependency version the module proxy does not serve (a pre-release's
	// pseudo-version it never fetched: "403 Forbidden ... not available")
	// is raised to the newest it serves, at most a few times, and said.
	var raised []string
	for attempt := 0; ; attempt++ {
		f.Cleanup()
		data, err := f.Format()
		if err != nil {
			return "", nil, err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return "", nil, err
		}
		_ = os.Remove(strings.TrimSuffix(path, ".mod") + ".sum")
		var buf bytes.Buffer
		tidyErr := goCmd(ctx, root, env, &buf, "mod", "tidy", "-modfile="+path)
		if tidyErr == nil {
			return path, raised, nil
		}
		m := notServed.FindStringSubmatch(buf.String())
		if m == nil || attempt == 3 {
			return "", nil, fmt.Errorf("resolve modules for client-go %s: %w: %s", version, tidyErr, lastLines(buf.String(), 6))
		}
		var latest bytes.Buffer
		if err := goCmd(ctx, root, env, &latest, "list", "-m", "-f", "{{.Version}}", m[1]+"@latest"); err != nil {
			return "", nil, fmt.Errorf("resolve modules for client-go %s: %s@%s is not served and no newer version is: %w: %s", version, m[1], m[2], err, lastLines(buf.String(), 6))
		}
		newer := strings.TrimSpace(latest.String())
		if semver.Compare(newer, m[2]) <= 0 {
			return "", nil, &notServedError{Module: m[1], Version: m[2], Newest: newer}
		}
		if err := f.AddRequire(m[1], newer); err != nil {
			return "", nil, err
		}
		raised = append(raised, fmt.Sprintf("%s %s (the proxy does not serve %s)", m[1], newer, m[2]))
	}
}

// notServed finds, in the go command's output, a module version whose
// zip the module proxy refuses.
var notServed = regexp.MustCompile(`(\S+)@(v\S+): reading \S+: 403 Forbidden`)

// notServedError: a client-go version's module graph needs a module
// version the proxy refuses, and it serves no newer one to raise it to.
type notServedError struct{ Module, Version, Newest string }

func (e *notServedError) Error() string {
	return fmt.Sprintf("it requires %s@%s, which the module proxy does not serve (403 \"not available\"; the newest it serves is %s)", e.Module, e.Version, e.Newest)
}

// dropUnresolvable takes out of listed, newest first, the next minor's
// pre-releases whose module graph cannot be resolved here (notServedError:
// v0.38.0-beta.0 requires a structured-merge-diff the proxy refuses), so
// that "next" is the newest pre-release that builds. It returns what it
// took out, each with its reason, for the column to say. Other errors (no
// toolchain for it) are returned: they are not the pre-release's.
func dropUnresolvable(ctx context.Context, root string, gomod []byte, listed []string, dir string, resolved map[string]columnModules) ([]string, []string, error) {
	return dropPrereleases(listed, func(next string) error {
		m, err := resolveModules(ctx, root, gomod, next, dir)
		if err == nil {
			resolved[next] = m // its column uses them: no second resolution
		}
		return err
	})
}

// dropPrereleases is dropUnresolvable's loop over the next minor's
// pre-releases, newest first, with resolves the check.
func dropPrereleases(listed []string, resolves func(version string) error) ([]string, []string, error) {
	var skipped []string
	for {
		next := newestPrerelease(listed)
		if next == "" {
			return listed, skipped, nil
		}
		err := resolves(next)
		var ns *notServedError
		if !errors.As(err, &ns) {
			return listed, skipped, err
		}
		step("client-go %s: skipped: %v", next, err)
		skipped = append(skipped, next+": "+err.Error())
		listed = slices.DeleteFunc(slices.Clone(listed), func(l string) bool { return l == next })
	}
}

// columnModules is how a column builds against its client-go: its go.mod
// (-modfile; "" for the pinned version, which runs in the workspace), the
// Go toolchain when the machine's is too old, and the dependencies raised
// over what the proxy does not serve.
type columnModules struct {
	modfile, toolchain string
	raised             []string
}

// resolveModules prepares a column's modules for client-go version v
// (toolchainFor, then writeModfile into dir).
func resolveModules(ctx context.Context, root string, gomod []byte, v, dir string) (columnModules, error) {
	step("client-go %s: resolving its module graph", v)
	var m columnModules
	var err error
	if m.toolchain, err = toolchainFor(ctx, root, v); err != nil {
		return m, err
	}
	m.modfile, m.raised, err = writeModfile(ctx, root, gomod, v, dir, m.toolchain)
	if len(m.raised) > 0 {
		step("client-go %s: raised %s", v, strings.Join(m.raised, "; "))
	}
	return m, err
}

// EnvToolchain names the Go toolchain (GOTOOLCHAIN's value, go1.27.3) a
// column runs with when its client-go needs a newer Go than the one
// running the matrix (a pre-release of the next minor often does).
const EnvToolchain = "MATRIX_GOTOOLCHAIN"

// toolchainFor is the toolchain a client-go version needs: "" when this
// Go is new enough for its go.mod's go directive, else $MATRIX_GOTOOLCHAIN
// (an error when unset or older than the directive).
func toolchainFor(ctx context.Context, root, clientGo string) (string, error) {
	var buf bytes.Buffer
	// A module that needs a newer Go fails the download (exit 1, "requires
	// go >= ...") after fetching its go.mod, which is all this reads.
	dlErr := goCmd(ctx, root, []string{"GOWORK=off"}, &buf, "mod", "download", "-json", "k8s.io/client-go@"+clientGo)
	var m struct{ GoMod string }
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil || m.GoMod == "" {
		return "", fmt.Errorf("client-go %s: go mod download -json: %v %v: %s", clientGo, dlErr, err, lastLines(buf.String(), 4))
	}
	data, err := os.ReadFile(m.GoMod)
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax(m.GoMod, data, nil)
	if err != nil || f.Go == nil {
		return "", fmt.Errorf("client-go %s: its go.mod names no Go version (%v)", clientGo, err)
	}
	need := "go" + f.Go.Version
	if goversion.Compare(need, runtime.Version()) <= 0 {
		return "", nil
	}
	tc := os.Getenv(EnvToolchain)
	switch {
	case tc == "":
		return "", fmt.Errorf("client-go %s needs %s, this is %s: set %s to a Go toolchain at least as new (GOTOOLCHAIN's value, e.g. go1.27.3)", clientGo, need, runtime.Version(), EnvToolchain)
	case goversion.Compare(tc, need) < 0:
		return "", fmt.Errorf("client-go %s needs %s: %s=%s is older", clientGo, need, EnvToolchain, tc)
	}
	return tc, nil
}

// pinnedGoMod is hack/pin/go.mod, the versions the workspace pins for this
// repository's own runs, as a go.mod of the suite's module (root's module
// path, its requirements), for writeModfile to swap client-go in.
func pinnedGoMod(root string) ([]byte, error) {
	own, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	pin, err := os.ReadFile(filepath.Join(root, "hack", "pin", "go.mod"))
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse("hack/pin/go.mod", pin, nil)
	if err != nil {
		return nil, err
	}
	if err := f.AddModuleStmt(modfile.ModulePath(own)); err != nil {
		return nil, err
	}
	f.Module.Syntax.Comments = modfile.Comments{}
	return f.Format()
}

// goCmd runs the go command in dir with env added, its output to out.
func goCmd(ctx context.Context, dir string, env []string, out io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// moduleRoot is the directory of this module's go.mod.
func moduleRoot() (string, error) {
	var buf bytes.Buffer
	if err := goCmd(context.Background(), ".", nil, &buf, "env", "GOMOD"); err != nil {
		return "", err
	}
	gomod := strings.TrimSpace(buf.String())
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("run from inside the informer-conformance module")
	}
	return filepath.Dir(gomod), nil
}

// requiredVersion is the version go.mod requires of a module.
func requiredVersion(gomod []byte, path string) (string, error) {
	f, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == path {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("go.mod does not require %s", path)
}

// specTicker prints one line per spec Ginkgo reports as done (succinct
// mode prints a mark per spec; the names come at the end).
type specTicker struct {
	prefix string
	n      int
}

func (t *specTicker) Write(p []byte) (int, error) {
	for _, r := range string(p) {
		if r == '•' {
			t.n++
			fmt.Fprintf(os.Stderr, "%s%d specs done\n", t.prefix, t.n)
		}
	}
	return len(p), nil
}

// step prints a progress line to stderr.
func step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[matrix %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// fields splits a list given space or comma separated.
func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
}

// envOr is the environment variable k if set (even empty), else def.
func envOr(k, def string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return def
}

// orDefault names an empty kube-apiserver version.
func orDefault(k string) string {
	if k == "" {
		return "(pinned default)"
	}
	return k
}

// firstLine is s's first line, escaped for a markdown table cell.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.ReplaceAll(s, "|", "\\|")
}

// tail is a file's last n lines, on one line.
func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	return lastLines(string(data), n)
}

// hasInformerMetrics says whether client-go version v (the workspace's
// pinned one when empty) has the informers' own metrics hook,
// cache.SetInformerMetricsProvider (v0.36+), for which the suite builds
// its recording provider with the tag informermetrics.
func hasInformerMetrics(v string) bool {
	return v == "" || semver.IsValid(v) && semver.Compare(v, "v0.36.0-0") >= 0
}

// lastLines is s's last n lines, joined by " / ".
func lastLines(s string, n int) string { return lines.OnOneLine(s, n) }

// gateSet is one column's client-go feature gates, in the order given.
type gateSet []gateValue

// gateValue is one gate of a set and the value asked for it.
type gateValue struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
}

// gateName is what a feature gate's name looks like (a Go identifier).
var gateName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// parseGateSets reads -gates: sets separated by ";", each "default" (or
// empty) or comma separated Name=true|false.
func parseGateSets(s string) ([]gateSet, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var sets []gateSet
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" || part == "default" {
			sets = append(sets, nil)
			continue
		}
		var set gateSet
		seen := map[string]bool{}
		for _, kv := range strings.Split(part, ",") {
			name, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || !gateName.MatchString(name) || (value != "true" && value != "false") {
				return nil, fmt.Errorf("gate set %q: %q is not Name=true or Name=false", part, kv)
			}
			if seen[name] {
				return nil, fmt.Errorf("gate set %q: %s given twice", part, name)
			}
			seen[name] = true
			set = append(set, gateValue{Name: name, Enabled: value == "true"})
		}
		sets = append(sets, set)
	}
	return sets, nil
}

// String is "default" or the set as given ("AtomicFIFO=false,...").
func (g gateSet) String() string {
	if len(g) == 0 {
		return "default"
	}
	var parts []string
	for _, v := range g {
		parts = append(parts, fmt.Sprintf("%s=%t", v.Name, v.Enabled))
	}
	return strings.Join(parts, ",")
}

// env sets the gates the way client-go reads them (features/envvar.go:
// KUBE_FEATURE_<Name>, read once per process).
func (g gateSet) env() []string {
	var env []string
	for _, v := range g {
		env = append(env, fmt.Sprintf("KUBE_FEATURE_%s=%t", v.Name, v.Enabled))
	}
	return env
}

// check compares the set with the gates a run's report states: a gate the
// client-go does not have, or one that did not take the value asked, is an
// error (client-go ignores unknown KUBE_FEATURE_ variables, and a locked
// gate keeps its default).
func (g gateSet) check(reported map[string]report.Gate) error {
	for _, v := range g {
		r, ok := reported[v.Name]
		switch {
		case !ok:
			return fmt.Errorf("has no feature gate %s (its gates: %s)", v.Name, strings.Join(slices.Sorted(maps.Keys(reported)), ", "))
		case r.Enabled != v.Enabled:
			return fmt.Errorf("feature gate %s stayed %t (locked to its default?), not %t as asked", v.Name, r.Enabled, v.Enabled)
		}
	}
	return nil
}
