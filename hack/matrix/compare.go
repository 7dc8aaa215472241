package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/informer-conformance/informer-conformance/report"
)

// `matrix compare BASE HEAD`: what changed between two runs of the suite
// (two artifacts directories, each with its informer-report-<suite>.json;
// or two directories of such runs, a series a side):
// the outcomes first, then the re-initialisations by cause, then the
// recovery times that moved beyond their noise, then the specs one run
// has and the other not. It exits 1 when HEAD changed an outcome for the
// worse: a spec that passed in BASE and failed in HEAD, that ran in BASE
// and not in HEAD, or that failed in HEAD without having run in BASE (a
// version constraint the bump now meets): a client-go bump that changes
// what an informer does, named by scenario. A spec failing on both sides
// is listed apart and fails the comparison only with
// -fail-on-base-failures; one that failed in BASE and passes in HEAD is
// listed as fixed. The reusable workflow runs the same command on the base
// branch's and the head's reports, so a spec that already fails on the
// base does not fail every pull request.

// noise is how far a recovery time may move and still be the same: HEAD's
// recoveries of a spec differ from BASE's when their ranges (each side may
// be several runs) lie apart by more than Seconds and by more than Ratio of
// BASE's. Measured, 16 runs of S6 on kind (2026-11-26): specs whose
// recovery is a fixed wait spread 0.06-0.11 s (3.03-3.09 s, 43.07-43.18 s);
// those bounded by the reflector's jittered backoff after refused
// connections 7.5-32 s. A single run a side cannot tell the latter apart:
// recovery changes are listed, never a failure; several runs a side (a
// directory of run directories) narrow them.
type noise struct {
	Seconds float64
	Ratio   float64
}

// beyond says whether HEAD's recoveries lie apart from BASE's.
func (n noise) beyond(base, head []float64) bool {
	if len(base) == 0 || len(head) == 0 {
		return false
	}
	bLo, bHi := slices.Min(base), slices.Max(base)
	hLo, hHi := slices.Min(head), slices.Max(head)
	gap := max(hLo-bHi, bLo-hHi)
	return gap > n.Seconds && gap > n.Ratio*bHi
}

// runSpecs is one side's specs by name: every suite's report of each of
// its runs.
type runSpecs struct {
	dir      string
	runs     int
	clientGo string
	specs    map[string]specResult
}

// specResult is what compare looks at in one spec, over a side's runs.
type specResult struct {
	outcome    string    // "failed" if a run failed it, "passed" if every run that ran it passed, else the first run's
	failed     int       // runs that failed it
	ranIn      int       // runs that ran it
	causes     string    // re-initialisations by cause, all informers, summed over the runs (report.Counts)
	recoveries []float64 // per run, the longest of its informers' recoveries
	failure    string
	// control: the spec is a negative control (a deliberately broken
	// client: what it observes is the broken client's, not client-go's).
	control bool
	// observations are its observations by key, over the runs that ran it.
	observations map[string]*observed
}

// runDirs are the runs of a side: dir itself when it holds an informer
// report, else its subdirectories that do (a series: hack/soak.sh's).
func runDirs(dir string) ([]string, error) {
	if own, _ := filepath.Glob(filepath.Join(dir, "informer-report-*.json")); len(own) > 0 {
		return []string{dir}, nil
	}
	reports, err := filepath.Glob(filepath.Join(dir, "*", "informer-report-*.json"))
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, r := range reports {
		if d := filepath.Dir(r); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%s has no informer report (informer-report-<suite>.json), nor do its subdirectories: not the artifacts directory of a run or of a series", dir)
	}
	return dirs, nil
}

func loadSide(dir string) (runSpecs, error) {
	dirs, err := runDirs(dir)
	if err != nil {
		return runSpecs{}, err
	}
	side := runSpecs{dir: dir, runs: len(dirs), specs: map[string]specResult{}}
	causes := map[string]map[report.Cause]int{}
	for _, d := range dirs {
		r, err := loadRun(d)
		if err != nil {
			return runSpecs{}, err
		}
		if side.clientGo == "" {
			side.clientGo = r.clientGo
		}
		for name, one := range r.specs {
			acc, seen := side.specs[name]
			if !seen {
				acc.outcome = one.outcome
				causes[name] = map[report.Cause]int{}
			}
			acc.control = acc.control || one.control
			if one.ran() {
				acc.ranIn++
				if acc.observations == nil {
					acc.observations = map[string]*observed{}
				}
				observationsOf(acc.observations, one.observations)
				acc.recoveries = append(acc.recoveries, one.recoveries...)
				for c, k := range one.byCause {
					causes[name][c] += k
				}
				if one.outcome == "failed" {
					acc.failed++
					acc.outcome = "failed"
					if acc.failure == "" {
						acc.failure = one.failure
					}
				} else if acc.failed == 0 {
					acc.outcome = "passed"
				}
			}
			side.specs[name] = acc
		}
	}
	for name, acc := range side.specs {
		acc.causes = report.Counts(causes[name])
		side.specs[name] = acc
	}
	return side, nil
}

// oneRun is a spec in one run, as loadRun reads it.
type oneRun struct {
	outcome      string
	control      bool
	byCause      map[report.Cause]int
	recoveries   []float64
	failure      string
	observations []report.Observation
}

func (s oneRun) ran() bool { return s.outcome == "passed" || s.outcome == "failed" }

// runOf is one run's specs.
type runOf struct {
	clientGo string
	specs    map[string]oneRun
}

func loadRun(dir string) (runOf, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "informer-report-*.json"))
	if err != nil {
		return runOf{}, err
	}
	r := runOf{specs: map[string]oneRun{}}
	for _, p := range paths {
		s, err := report.ReadSummary(p)
		if err != nil {
			return runOf{}, err
		}
		if r.clientGo == "" {
			r.clientGo = s.ClientGo
		}
		for _, sp := range s.Specs {
			one := oneRun{outcome: sp.Outcome, control: slices.Contains(sp.Labels, report.LabelNegativeControl), failure: firstLine(sp.Failure), byCause: map[report.Cause]int{}, observations: sp.Observations}
			recovery := 0.0
			for _, n := range sp.Informers {
				for c, k := range n.Reinitialisations {
					one.byCause[c] += k
				}
				recovery = max(recovery, n.RecoverySeconds)
			}
			if recovery > 0 {
				one.recoveries = []float64{recovery}
			}
			r.specs[sp.Spec] = one
		}
	}
	return r, nil
}

// ran says whether the spec ran (passed or failed).
func (s specResult) ran() bool { return s.outcome == "passed" || s.outcome == "failed" }

// comparison is what changed, in the order it is printed.
type comparison struct {
	// outcomes changed for the worse; bothFailed failed on both sides;
	// fixed failed in BASE and passed in HEAD.
	outcomes, bothFailed, fixed, causes, recoveries, onlyHead []string
	// observations changed in specs that ran on both sides;
	// varyingObservations counts those left out (report.Observation.Varies,
	// not both sides series).
	observations        []observationChange
	varyingObservations int
}

// changed says whether HEAD changed an outcome for the worse.
func (c comparison) changed() bool { return len(c.outcomes) > 0 }

// fails says whether the comparison fails a gate: an outcome changed for
// the worse, or, with failOnBase, a spec failed on both sides.
func (c comparison) fails(failOnBase bool) bool {
	return c.changed() || failOnBase && len(c.bothFailed) > 0
}

func compareRuns(base, head runSpecs, n noise) comparison {
	var c comparison
	names := map[string]bool{}
	for s := range base.specs {
		names[s] = true
	}
	for s := range head.specs {
		names[s] = true
	}
	for _, s := range slices.Sorted(maps.Keys(names)) {
		b, inBase := base.specs[s]
		h, inHead := head.specs[s]
		switch {
		case inBase && b.ran() && (!inHead || !h.ran()):
			outcome := "not in HEAD" // coverage lost is a change too
			if inHead {
				outcome = h.outcome
			}
			c.outcomes = append(c.outcomes, fmt.Sprintf("%s: BASE %s, HEAD %s", s, b.outcome, outcome))
		case inHead && h.outcome == "failed" && (!inBase || !b.ran()):
			// It did not run in BASE (a version constraint, a label, a
			// spec the suite gained): its failure is HEAD's.
			was := "not in BASE"
			if inBase {
				was = b.outcome
			}
			c.outcomes = append(c.outcomes, fmt.Sprintf("%s: BASE %s, HEAD %s%s", s, was, h.describe(), failureOf(specResult{}, h)))
		case inHead && h.ran() && (!inBase || !b.ran()):
			if inBase {
				c.onlyHead = append(c.onlyHead, fmt.Sprintf("%s (BASE: %s)", s, b.outcome))
			} else {
				c.onlyHead = append(c.onlyHead, s)
			}
		case !inBase || !inHead || !b.ran():
			// Ran in neither.
		case b.outcome == "failed" && h.outcome == "failed":
			c.bothFailed = append(c.bothFailed, fmt.Sprintf("%s: BASE %s, HEAD %s%s", s, b.describe(), h.describe(), failureOf(b, h)))
		case b.outcome == "failed":
			c.fixed = append(c.fixed, fmt.Sprintf("%s: BASE %s, HEAD %s", s, b.describe(), h.describe()))
		case b.outcome != h.outcome:
			c.outcomes = append(c.outcomes, fmt.Sprintf("%s: BASE %s, HEAD %s%s", s, b.describe(), h.describe(), failureOf(b, h)))
		case b.causes != h.causes && base.runs == 1 && head.runs == 1:
			c.causes = append(c.causes, fmt.Sprintf("%s: BASE %s; HEAD %s", s, b.causes, h.causes))
		case b.causes != h.causes:
			c.causes = append(c.causes, fmt.Sprintf("%s: BASE %s over %d runs; HEAD %s over %d runs", s, b.causes, b.ranIn, h.causes, h.ranIn))
		case n.beyond(b.recoveries, h.recoveries):
			c.recoveries = append(c.recoveries, fmt.Sprintf("%s: BASE %s, HEAD %s", s, span(b.recoveries), span(h.recoveries)))
		}
	}
	c.observations, c.varyingObservations = compareObservations(base, head, n)
	return c
}

// describe is the outcome, with how many runs failed it when several ran.
func (s specResult) describe() string {
	if s.ranIn > 1 && s.failed > 0 {
		return fmt.Sprintf("failed in %d of %d runs", s.failed, s.ranIn)
	}
	return s.outcome
}

// span is a side's recoveries: one value, or the range over its runs.
func span(v []float64) string {
	if lo, hi := slices.Min(v), slices.Max(v); hi-lo >= 0.05 {
		return fmt.Sprintf("%.1f-%.1f s (%d runs)", lo, hi, len(v))
	}
	return fmt.Sprintf("%.1f s", v[0])
}

func failureOf(b, h specResult) string {
	for _, r := range []specResult{h, b} {
		if r.failure != "" {
			return " (" + r.failure + ")"
		}
	}
	return ""
}

// text is the comparison as markdown, the differences first.
func (c comparison) text(base, head runSpecs, n noise) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Comparison: BASE %s (client-go %s, %d runs) vs HEAD %s (client-go %s, %d runs)\n\n", base.dir, orNone(base.clientGo), base.runs, head.dir, orNone(head.clientGo), head.runs)
	if !c.changed() && len(c.bothFailed)+len(c.fixed)+len(c.causes)+len(c.recoveries)+len(c.onlyHead)+len(c.observations) == 0 {
		fmt.Fprintf(&b, "No change: %d specs in BASE, %d in HEAD, the same outcomes, re-initialisations and observations, recoveries within %.0f s or %.0f%%.\n", len(base.specs), len(head.specs), n.Seconds, 100*n.Ratio)
		c.varyingLine(&b)
		return b.String()
	}
	section := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		fmt.Fprintf(&b, "## %s (%d)\n\n", title, len(lines))
		for _, l := range lines {
			fmt.Fprintf(&b, "- %s\n", l)
		}
		b.WriteString("\n")
	}
	section("Outcomes that changed", c.outcomes)
	section("Failing on both sides (already failing in BASE: not a change of HEAD's)", c.bothFailed)
	section("Fixed in HEAD (failed in BASE)", c.fixed)
	section("Same outcome, other re-initialisations (a spec that allows several causes can differ between runs: rerun before calling it a change)", c.causes)
	section(fmt.Sprintf("Recovery beyond the noise (more than %.0f s and %.0f%% apart)", n.Seconds, 100*n.Ratio), c.recoveries)
	section("Ran in HEAD only", c.onlyHead)
	section("Observations that changed (what the informers did differently in specs that ran on both sides, where no outcome says so: values, times beyond the noise, counts by more than one call and half, memory by more than 4 MiB and half)", observationLines(c.observations))
	c.varyingLine(&b)
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// compareMain is `matrix compare [-noise-seconds S] [-noise-ratio R] [-fail-on-base-failures] [-out FILE] BASE HEAD`.
func compareMain(args []string) int {
	fset := flag.NewFlagSet("matrix compare", flag.ContinueOnError)
	n := noise{}
	fset.Float64Var(&n.Seconds, "noise-seconds", 2, "a recovery time that moved by this many seconds or less is the same")
	fset.Float64Var(&n.Ratio, "noise-ratio", 0.5, "... or by this share of BASE's or less")
	out := fset.String("out", "", "also write the comparison (markdown) to this file")
	failOnBase := fset.Bool("fail-on-base-failures", false, "exit 1 also when a spec failed on both sides")
	fset.Usage = func() {
		fmt.Fprintln(fset.Output(), "usage: matrix compare [flags] BASE HEAD: what changed between two runs' artifacts directories (or two directories of runs, a series each); exit 1 when HEAD changed an outcome for the worse")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		return 2
	}
	if fset.NArg() != 2 {
		fset.Usage()
		return 2
	}
	base, err := loadSide(fset.Arg(0))
	if err == nil {
		var head runSpecs
		if head, err = loadSide(fset.Arg(1)); err == nil {
			c := compareRuns(base, head, n)
			text := c.text(base, head, n)
			fmt.Print(text)
			if *out != "" {
				if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
					fmt.Fprintln(os.Stderr, "matrix compare:", err)
					return 2
				}
				if err := os.WriteFile(*out, []byte(text), 0o644); err != nil {
					fmt.Fprintln(os.Stderr, "matrix compare:", err)
					return 2
				}
			}
			if c.fails(*failOnBase) {
				return 1
			}
			return 0
		}
	}
	fmt.Fprintln(os.Stderr, "matrix compare:", err)
	return 2
}

// varyingLine says how many observations that vary between runs of the
// same code differ, when some do and were left out.
func (c comparison) varyingLine(b *strings.Builder) {
	if c.varyingObservations > 0 {
		fmt.Fprintf(b, "%d observations that vary between runs of the same code (statuses and errors under faults, request and handler call counts, resource versions at a moment) differ too: compare series (a directory of runs a side, two or more) to list them.\n", c.varyingObservations)
	}
}
