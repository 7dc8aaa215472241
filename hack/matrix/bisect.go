package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/mod/semver"

	"github.com/informer-conformance/informer-conformance/report"
)

// `matrix bisect -good V1 -bad V2 -spec REGEX [-observation TEXT]`: the
// first released client-go tag between V1 and V2 (patches and
// pre-releases: alpha, beta, rc) where what the specs matching REGEX do
// changes: their outcomes, or, with -observation, the values of their
// observations whose key contains TEXT (report.Observation: "transform
// calls per object", "Accept"). It runs V1 and V2, then halves the tags
// between them (a run per step: log2 of their number), and prints the tag,
// the one before it and the upstream range to read.
//
// The tags walked (bisectPath) are those on the way from V1 to V2 as the
// releases were cut: from V1's minor to V2's, each later minor's
// pre-releases and its .0, then V2's minor's patches up to V2; patches of
// V1's minor newer than V1 (and of the minors between) are left out: they
// are backports on a branch of their own, not steps between the two.

// bisectPath are the tags a bisect walks, good excluded, bad included,
// oldest first.
func bisectPath(listed []string, good, bad string) ([]string, error) {
	if semver.Compare(good, bad) >= 0 {
		return nil, fmt.Errorf("-good %s is not older than -bad %s", good, bad)
	}
	gm, bm := semver.MajorMinor(good), semver.MajorMinor(bad)
	var path []string
	for _, v := range listed {
		if !semver.IsValid(v) || semver.Compare(v, good) <= 0 || semver.Compare(v, bad) > 0 {
			continue
		}
		m := semver.MajorMinor(v)
		switch {
		case gm == bm, m == bm:
		case m == gm:
			continue // a patch of good's minor newer than good: a backport
		case semver.Prerelease(v) == "" && !strings.HasSuffix(semver.Canonical(v), ".0"):
			continue // a patch of a minor between: a backport
		}
		path = append(path, v)
	}
	slices.SortFunc(path, semver.Compare)
	if len(path) == 0 || path[len(path)-1] != bad {
		return nil, fmt.Errorf("the module proxy does not list client-go %s", bad)
	}
	if !slices.Contains(listed, good) {
		return nil, fmt.Errorf("the module proxy does not list client-go %s", good)
	}
	return path, nil
}

// factSep separates, in a line of behaviour, what was judged (a spec, or a
// spec's observation) from what it was (the outcome, the value).
const factSep = " => "

// behaviour is what a run's matching specs did: a line per spec (its
// outcome) or per matching observation (spec, key and value), sorted.
func behaviour(dir string, spec *regexp.Regexp, observation string) (string, error) {
	r, err := loadRun(dir)
	if err != nil {
		return "", err
	}
	var lines []string
	for name, s := range r.specs {
		if !spec.MatchString(name) || !s.ran() {
			continue
		}
		if observation == "" {
			lines = append(lines, name+factSep+s.outcome)
			continue
		}
		for _, o := range s.observations {
			if o.Number == nil && strings.Contains(o.Key(), observation) {
				lines = append(lines, fmt.Sprintf("%s: %s%s%q", name, o.Key(), factSep, o.Value))
			}
		}
	}
	if len(lines) == 0 {
		what := "no spec matching " + spec.String() + " ran"
		if observation != "" {
			what = "no spec matching " + spec.String() + " ran with an observation containing " + fmt.Sprintf("%q", observation)
		}
		return "", errors.New(what)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n"), nil
}

// probe is one bisect step: a tag and what its run did.
type bisectStep struct {
	version, behaviour string
	seconds            float64
}

// bisect finds the first tag of path whose behaviour differs from good's,
// given a function that runs a tag; path's last tag is bad. It returns the
// steps in the order run and the index of that first tag in path.
func bisect(good string, path []string, runTag func(string) (string, error)) ([]bisectStep, int, error) {
	var steps []bisectStep
	at := func(v string) (string, error) {
		start := time.Now()
		b, err := runTag(v)
		if err != nil {
			return "", fmt.Errorf("client-go %s: %w", v, err)
		}
		steps = append(steps, bisectStep{version: v, behaviour: b, seconds: time.Since(start).Seconds()})
		return b, nil
	}
	goodB, err := at(good)
	if err != nil {
		return steps, -1, err
	}
	badB, err := at(path[len(path)-1])
	if err != nil {
		return steps, -1, err
	}
	if goodB == badB {
		return steps, -1, fmt.Errorf("client-go %s and %s behave the same:\n%s", good, path[len(path)-1], indent(goodB))
	}
	// Invariant: path[lo] (or good, lo = -1) behaves as good; path[hi]
	// does not.
	lo, hi := -1, len(path)-1
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		b, err := at(path[mid])
		if err != nil {
			return steps, -1, err
		}
		if b == goodB {
			lo = mid
		} else {
			hi = mid
		}
	}
	return steps, hi, nil
}

// kubernetesTag is the kubernetes/kubernetes tag a client-go tag was cut
// from (v0.34.1 -> v1.34.1, v0.36.0-rc.0 -> v1.36.0-rc.0).
func kubernetesTag(clientGo string) string { return "v1." + strings.TrimPrefix(clientGo, "v0.") }

// bisectRun is what the bisect report's header says of its run.
type bisectRun struct {
	Date    time.Time
	Cores   int
	Command string
}

// bisectReport is the bisect's result as markdown.
func bisectReport(run bisectRun, what, good string, path []string, steps []bisectStep, first int) string {
	var b strings.Builder
	bad := path[len(path)-1]
	fmt.Fprintf(&b, "# Bisect: %s, client-go %s to %s\n\n", what, good, bad)
	if run.Command != "" {
		fmt.Fprintf(&b, "Produced %s on a machine with %d cores by\n\n```\n%s\n```\n\n", run.Date.UTC().Format("2006-01-02 15:04 UTC"), run.Cores, run.Command)
	}
	// What was judged, numbered once; the table gives each run's values.
	var subjects []string
	for _, s := range steps {
		for _, line := range strings.Split(s.behaviour, "\n") {
			if subject, _, _ := strings.Cut(line, factSep); !slices.Contains(subjects, subject) {
				subjects = append(subjects, subject)
			}
		}
	}
	fmt.Fprintf(&b, "Judged:\n\n")
	for i, s := range subjects {
		fmt.Fprintf(&b, "%d. %s\n", i+1, s)
	}
	fmt.Fprintf(&b, "\n%d tags on the way (%s), %d runs:\n\n| run | client-go | judged: what it was | seconds |\n|---:|---|---|---:|\n", len(path), strings.Join(path, " "), len(steps))
	for i, s := range steps {
		var cells []string
		for _, line := range strings.Split(s.behaviour, "\n") {
			subject, value, _ := strings.Cut(line, factSep)
			cells = append(cells, fmt.Sprintf("%d: %s", slices.Index(subjects, subject)+1, value))
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %.0f |\n", i+1, s.version, strings.Join(cells, "; "), s.seconds)
	}
	before := good
	if first > 0 {
		before = path[first-1]
	}
	kb, kf := kubernetesTag(before), kubernetesTag(path[first])
	fmt.Fprintf(&b, "\n**First tag that behaves as %s: %s** (the tag before it: %s).\n\n", bad, path[first], before)
	fmt.Fprintf(&b, "Upstream range to read: client-go is cut from kubernetes/kubernetes's staging tree:\n\n")
	fmt.Fprintf(&b, "- https://github.com/kubernetes/kubernetes/compare/%s...%s\n", kb, kf)
	fmt.Fprintf(&b, "- `git log --oneline %s..%s -- staging/src/k8s.io/client-go staging/src/k8s.io/apimachinery` in a kubernetes clone\n", kb, kf)
	fmt.Fprintf(&b, "- https://github.com/kubernetes/client-go/compare/%s...%s\n", before, path[first])
	return b.String()
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

// bisectMain is `matrix bisect`.
func bisectMain(args []string) int {
	fset := flag.NewFlagSet("matrix bisect", flag.ContinueOnError)
	good := fset.String("good", "", "client-go tag that behaves the old way (v0.33.13)")
	bad := fset.String("bad", "", "client-go tag that behaves the new way (v0.34.13); newer than -good")
	specRe := fset.String("spec", "", "regular expression: the specs to run (ginkgo --focus) and to judge")
	observation := fset.String("observation", "", "judge the values of the matching specs' observations whose key contains this text; empty: their outcomes")
	labels := fset.String("label-filter", envOr("LABEL_FILTER", "!slow && !extra-stack"), "ginkgo label filter, with -spec")
	gates := fset.String("gates", os.Getenv("GATES"), `one client-go feature gate set for every run ("Name=false,Other=true")`)
	procs := fset.Int("procs", 2, "ginkgo parallel processes")
	out := fset.String("out", filepath.Join(report.ArtifactsRoot(), "bisect"), "output directory")
	fset.Usage = func() {
		fmt.Fprintln(fset.Output(), "usage: matrix bisect -good V1 -bad V2 -spec REGEX [-observation TEXT]: the first client-go tag between V1 and V2 where the specs' outcomes (or observations) change, in log2 runs")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		return 2
	}
	fail := func(code int, err error) int {
		fmt.Fprintln(os.Stderr, "matrix bisect:", err)
		return code
	}
	if *good == "" || *bad == "" || *specRe == "" || fset.NArg() > 0 {
		fset.Usage()
		return 2
	}
	re, err := regexp.Compile(*specRe)
	if err != nil {
		return fail(2, fmt.Errorf("-spec: %w", err))
	}
	for _, v := range []*string{good, bad} {
		if *v, err = clientGoVersion(*v); err != nil {
			return fail(2, err)
		}
		if !isPatch(*v) && semver.Prerelease(*v) == "" {
			return fail(2, fmt.Errorf("%s names a minor: bisect between tags (v0.33.13, v0.36.0-rc.0)", *v))
		}
	}
	gateSets, err := parseGateSets(*gates)
	if err != nil || len(gateSets) > 1 {
		return fail(2, fmt.Errorf("-gates: one gate set (%v)", err))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := moduleRoot()
	if err != nil {
		return fail(1, err)
	}
	listed, err := listClientGo(ctx, root)
	if err != nil {
		return fail(1, err)
	}
	path, err := bisectPath(listed, *good, *bad)
	if err != nil {
		return fail(2, err)
	}
	gomod, err := pinnedGoMod(root)
	if err != nil {
		return fail(1, err)
	}
	pinned, err := requiredVersion(gomod, "k8s.io/client-go")
	if err != nil {
		return fail(1, err)
	}
	outDir, err := filepath.Abs(*out)
	if err != nil {
		return fail(1, err)
	}
	var gs gateSet
	if len(gateSets) == 1 {
		gs = gateSets[0]
	}
	cfg := config{labels: *labels, focus: *specRe, procs: *procs, suites: "./suites/conformance"}
	what := "outcomes of " + *specRe
	if *observation != "" {
		what = fmt.Sprintf("observations %q of %s", *observation, *specRe)
	}
	step("bisect %s: %d tags between %s and %s: at most %d runs", what, len(path), *good, *bad, bisectRuns(len(path)))
	runTag := func(v string) (string, error) {
		var m columnModules
		if v != pinned {
			if m, err = resolveModules(ctx, root, gomod, v, filepath.Join(outDir, "modfiles")); err != nil {
				return "", err
			}
		}
		col := column{ClientGo: v, Gates: gs, Toolchain: m.toolchain, Raised: m.raised}
		dir := columnDir(outDir, col) // before the run: it names the kube-apiserver it ran
		if col = runColumn(ctx, root, cfg, outDir, m.modfile, col); col.Error != "" {
			return "", errors.New(col.Error)
		}
		b, err := behaviour(dir, re, *observation)
		if err == nil {
			step("client-go %s: %s", v, strings.ReplaceAll(b, "\n", "; "))
		}
		return b, err
	}
	steps, first, err := bisect(*good, path, runTag)
	if err != nil {
		return fail(1, err)
	}
	command := fmt.Sprintf("go run ./hack/matrix bisect -good %s -bad %s -spec %s -label-filter %s", *good, *bad, shellQuote(*specRe), shellQuote(*labels))
	if *observation != "" {
		command += " -observation " + shellQuote(*observation)
	}
	if len(gs) > 0 {
		command += " -gates " + shellQuote(gs.String())
	}
	text := bisectReport(bisectRun{Date: time.Now(), Cores: runtime.NumCPU(), Command: command}, what, *good, path, steps, first)
	fmt.Print(text)
	if err := os.WriteFile(filepath.Join(outDir, "bisect.md"), []byte(text), 0o644); err != nil {
		return fail(1, err)
	}
	return 0
}

// bisectRuns is the most runs a bisect of n tags takes: both ends, then
// ceil(log2(n)) halvings.
func bisectRuns(n int) int {
	runs := 2
	for k := 1; k < n; k *= 2 {
		runs++
	}
	return runs
}
