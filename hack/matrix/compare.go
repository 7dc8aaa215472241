package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/informer-conformance/informer-conformance/report"
	"github.com/informer-conformance/informer-conformance/report/known"
)

// `matrix compare BASE HEAD`: what changed between two runs of the suite
// (two artifacts directories, each with its informer-report-<suite>.json;
// or two directories of such runs, a series a side). Its first line is the
// verdict: whether it blocks, and why. Then the outcomes, then the
// re-initialisations by cause, the recovery times that moved beyond their
// noise, the specs one run has and the other not, the observations.
//
// Every failure is marked with its verdict (report/known): known behaviour
// of that side's client-go (the upstream change, the release that changed
// or fixed it) or unexplained. It exits 1 when HEAD changed an outcome for
// the worse: a spec that passed in BASE and failed in HEAD, that ran in
// BASE and not in HEAD, or that failed in HEAD without having run in BASE
// (a version constraint the bump now meets). A spec failing on both sides
// is listed apart: a known one never blocks, an unexplained one only with
// -fail-on-base-failures. One that failed in BASE and passes in HEAD is
// listed as fixed.
//
// Noise is told from change: with one run a side, every outcome that
// differs says it is one observation (rerun to tell a change from a
// flake); with two or more runs a side, a spec that passed in some runs of
// a side and failed in others is flaky, listed with its pass rates and
// never called a change, and observations are listed only outside their
// run-to-run range. The reusable workflow reruns the specs whose outcome
// differs before it judges (hack/downstream/gate.sh).

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
	// fixed, when set, says whether the suite at a column's commit has a
	// fix (gitContains): the verdict data's noise rules apply to columns
	// run before theirs (suiteNoise).
	fixed func(commit, fix string) bool
}

// suiteNoise says whether an observation change between columns from and
// to is one the verdict data names noise (known.Data.NoiseOf) and either
// column ran before the suite marked it varying at its source.
func (n noise) suiteNoise(sentence string, from, to column) bool {
	if n.fixed == nil {
		return false
	}
	r, ok := knownData().NoiseOf(sentence)
	return ok && (!n.fixed(from.Commit, r.FixedBySuite) || !n.fixed(to.Commit, r.FixedBySuite))
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
	// kube is the kube-apiserver the side ran against.
	kube string
	// failingRuns counts the runs in which some spec failed.
	failingRuns int
	specs       map[string]specResult
}

// specResult is what compare looks at in one spec, over a side's runs.
type specResult struct {
	outcome string // "failed" if a run failed it, "passed" if every run that ran it passed, else the first run's
	failed  int    // runs that failed it
	ranIn   int    // runs that ran it
	causes  string // re-initialisations by cause, all informers, summed over the runs (report.Counts)
	// causeRuns counts, per cause, the runs in which some informer of the
	// spec re-initialised for it.
	causeRuns  map[report.Cause]int
	recoveries []float64 // per run, the longest of its informers' recoveries
	failure    string
	// verdict is what its failure is (known behaviour of the side's
	// client-go, or unexplained): the first failing run's.
	verdict *known.Verdict
	// control: the spec is a negative control (a deliberately broken
	// client: what it observes is the broken client's, not client-go's).
	control bool
	// observations are its observations by key, over the runs that ran it.
	observations map[string]*observed
}

// RerunPrefix names the subdirectories of a run's directory that hold
// reruns of some of its specs (hack/downstream/run.sh with FOCUS_FILE):
// the run and its reruns are one side's series.
const RerunPrefix = "rerun-"

// runDirs are the runs of a side: dir itself when it holds an informer
// report, with its reruns (RerunPrefix subdirectories that hold one), else
// its subdirectories that do (a series: hack/soak.sh's).
func runDirs(dir string) ([]string, error) {
	if own, _ := filepath.Glob(filepath.Join(dir, "informer-report-*.json")); len(own) > 0 {
		dirs := []string{dir}
		reruns, _ := filepath.Glob(filepath.Join(dir, RerunPrefix+"*", "informer-report-*.json"))
		for _, r := range reruns {
			if d := filepath.Dir(r); !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
		return dirs, nil
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
	return loadRuns(dir, dirs)
}

// loadRuns is the runs in dirs as one side, named name.
func loadRuns(name string, dirs []string) (runSpecs, error) {
	side := runSpecs{dir: name, runs: len(dirs), specs: map[string]specResult{}}
	causes := map[string]map[report.Cause]int{}
	for _, d := range dirs {
		r, err := loadRun(d)
		if err != nil {
			return runSpecs{}, err
		}
		for _, one := range r.specs {
			if one.outcome == "failed" {
				side.failingRuns++
				break
			}
		}
		if side.clientGo == "" {
			side.clientGo = r.clientGo
			side.kube = r.kube
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
					if k > 0 {
						if acc.causeRuns == nil {
							acc.causeRuns = map[report.Cause]int{}
						}
						acc.causeRuns[c]++
					}
				}
				if one.outcome == "failed" {
					acc.failed++
					acc.outcome = "failed"
					if acc.failure == "" {
						acc.failure = one.failure
					}
					if acc.verdict == nil {
						acc.verdict = one.verdict
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
	verdict      *known.Verdict
	observations []report.Observation
}

func (s oneRun) ran() bool { return s.outcome == "passed" || s.outcome == "failed" }

// runOf is one run's specs.
type runOf struct {
	clientGo, kube string
	specs          map[string]oneRun
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
		// Reports written before they carried verdicts: the same data.
		if err := report.Classify(&s); err != nil {
			return runOf{}, err
		}
		if r.clientGo == "" {
			r.clientGo = s.ClientGo
			r.kube = s.KubeAPIServer
		}
		for _, sp := range s.Specs {
			one := oneRun{outcome: sp.Outcome, control: slices.Contains(sp.Labels, report.LabelNegativeControl), failure: firstLine(sp.Failure), verdict: sp.Verdict, byCause: map[report.Cause]int{}, observations: stormAsFleet(sp.Spec, acceptOccasional(sp.Observations))}
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

// acceptOccasional is obs as a report written since what the client asks
// for in a request that a fault brings or not is occasional
// (report.Observation.Occasional) has them: reports before marked that
// Accept varying, a report since never does.
func acceptOccasional(obs []report.Observation) []report.Observation {
	out := slices.Clone(obs)
	for i, o := range out {
		if o.Varies && strings.HasSuffix(o.What, ": first request's Accept") {
			out[i].Varies, out[i].Occasional = false, true
		}
	}
	return out
}

// stormInformer is the name S12 gave each of its fifty informers in
// reports written before they were observed as one (e2e.Observed.Fleet).
var stormInformer = regexp.MustCompile(`^informer-[0-9]{3}$`)

// stormAsFleet is an S12 spec's observations as a report written since
// its informers are a fleet has them: the fifty informers' merged into one
// set, "storm (50 informers)" (report.Fleet), so that runs before and
// after compare, and the fifty do not count as fifty changes. Other
// specs' observations, and S12's of a newer report, are as they are.
func stormAsFleet(spec string, obs []report.Observation) []report.Observation {
	if !strings.HasPrefix(spec, "S12 ") {
		return obs
	}
	var out []report.Observation
	var members [][]report.Observation
	at := map[string]int{}
	for _, o := range obs {
		if !stormInformer.MatchString(o.Informer) {
			out = append(out, o)
			continue
		}
		i, ok := at[o.Informer]
		if !ok {
			i = len(members)
			at[o.Informer] = i
			members = append(members, nil)
		}
		members[i] = append(members[i], o)
	}
	if len(members) == 0 {
		return obs
	}
	return append(out, report.Fleet(fmt.Sprintf("storm (%d informers)", len(members)), members...)...)
}

// ran says whether the spec ran (passed or failed).
func (s specResult) ran() bool { return s.outcome == "passed" || s.outcome == "failed" }

// comparison is what changed, in the order it is printed.
type comparison struct {
	// outcomes changed for the worse (each with HEAD's verdict);
	// knownBoth and bothFailed failed on both sides, known behaviour of
	// HEAD's client-go or not; fixed failed in BASE and passed in HEAD;
	// flaky passed in some runs of a side and failed in others (series
	// only): noise, not a change.
	outcomes, knownBoth, bothFailed, fixed, flaky, causes, recoveries, onlyHead []string
	// worseUnexplained and worseKnown count outcomes by HEAD's verdict.
	worseUnexplained, worseKnown int
	// oneRun: an outcome that differs rests on a single run of a side (a
	// line says so): one observation, not yet a change.
	oneRun bool
	// differing are the specs whose outcome differs between the sides
	// (worse, fixed, flaky): what a rerun runs again.
	differing []string
	// observations changed in specs that ran on both sides;
	// varyingObservations counts those left out (report.Observation.Varies,
	// not both sides series).
	observations        []observationChange
	varyingObservations int
}

// changed says whether HEAD changed an outcome for the worse.
func (c comparison) changed() bool { return len(c.outcomes) > 0 }

// fails says whether the comparison fails a gate: an outcome changed for
// the worse, or, with failOnBase, an unexplained spec failed on both sides
// (a known one never blocks: it is listed apart, with its upstream change).
func (c comparison) fails(failOnBase bool) bool {
	return c.changed() || failOnBase && len(c.bothFailed) > 0
}

// verdict is the comparison's first line: whether it blocks, and why, in
// one sentence.
func (c comparison) verdict(failOnBase bool) string {
	var why []string
	if c.changed() {
		why = append(why, fmt.Sprintf("HEAD made %d outcome(s) worse (%d unexplained, %d known behaviour of HEAD's client-go)", len(c.outcomes), c.worseUnexplained, c.worseKnown))
	}
	if failOnBase && len(c.bothFailed) > 0 {
		why = append(why, fmt.Sprintf("%d unexplained spec(s) fail on both sides (fail-on-base-failures)", len(c.bothFailed)))
	}
	var also []string
	if len(c.flaky) > 0 {
		also = append(also, fmt.Sprintf("%d flaky (outcomes vary between runs of a side: not a change)", len(c.flaky)))
	}
	if len(c.knownBoth) > 0 {
		also = append(also, fmt.Sprintf("%d known failure(s) on both sides (not blocking)", len(c.knownBoth)))
	}
	if len(c.bothFailed) > 0 && !failOnBase {
		also = append(also, fmt.Sprintf("%d unexplained failure(s) on both sides (already failing in BASE: not blocking)", len(c.bothFailed)))
	}
	if len(c.fixed) > 0 {
		also = append(also, fmt.Sprintf("%d fixed in HEAD", len(c.fixed)))
	}
	line := "**Verdict: passes**: HEAD made no outcome worse"
	if len(why) > 0 {
		line = "**Verdict: blocks**: " + strings.Join(why, "; ")
	}
	if len(also) > 0 {
		line += "; " + strings.Join(also, ", ")
	}
	line += "."
	if c.oneRun && (len(c.outcomes) > 0 || len(c.fixed) > 0) {
		line += " " + oneRunCaveat
	}
	return line
}

// oneRunCaveat qualifies an outcome that differs between one run a side.
const oneRunCaveat = "One run a side: an outcome that differs is one observation, not yet a change; rerun (two or more runs a side: a directory of run directories each) to tell a change from a flake."

// rate is a side's outcome of a spec as a pass rate: "passed", "failed",
// or "passed N of M runs".
func (s specResult) rate() string {
	switch {
	case s.ranIn > 1 && s.failed > 0 && s.failed < s.ranIn:
		return fmt.Sprintf("passed %d of %d runs", s.ranIn-s.failed, s.ranIn)
	case s.ranIn > 1 && s.failed == s.ranIn:
		return fmt.Sprintf("failed %d of %d runs", s.failed, s.ranIn)
	case s.ranIn > 1:
		return fmt.Sprintf("passed %d of %d runs", s.ranIn, s.ranIn)
	}
	return s.outcome
}

// mixed says whether the spec passed in some runs and failed in others.
func (s specResult) mixed() bool { return s.failed > 0 && s.failed < s.ranIn }

// verdictOf is " — known for ...: ..." or " — unexplained: ...", from r's
// verdict ("" when it has none).
func verdictOf(r specResult) string {
	if r.verdict == nil {
		return ""
	}
	return " — " + r.verdict.Line()
}

func compareRuns(base, head runSpecs, n noise) comparison {
	var c comparison
	// once qualifies a line whose outcome rests on one run of a side.
	once := func(b, h specResult, line string) string {
		if b.ranIn < 2 || h.ranIn < 2 {
			c.oneRun = true
			return line + " (one run a side)"
		}
		return line
	}
	worse := func(h specResult, line string) {
		c.outcomes = append(c.outcomes, line)
		if h.verdict != nil && h.verdict.Known {
			c.worseKnown++
		} else {
			c.worseUnexplained++
		}
	}
	for _, s := range unionKeys(base.specs, head.specs) {
		b, inBase := base.specs[s]
		h, inHead := head.specs[s]
		switch {
		case inBase && b.ran() && (!inHead || !h.ran()):
			outcome := "not in HEAD" // coverage lost is a change too
			if inHead {
				outcome = h.outcome
			}
			worse(specResult{}, fmt.Sprintf("%s: BASE %s, HEAD %s", s, b.rate(), outcome)) // nothing to rerun: HEAD lacks it
		case inHead && h.outcome == "failed" && (!inBase || !b.ran()) && !h.mixed():
			// It did not run in BASE (a version constraint, a label, a
			// spec the suite gained): its failure is HEAD's.
			was := "not in BASE"
			if inBase {
				was = b.outcome
			}
			c.differing = append(c.differing, s)
			worse(h, once(b, h, fmt.Sprintf("%s: BASE %s, HEAD %s%s%s", s, was, h.rate(), failureOf(specResult{}, h), verdictOf(h))))
		case inHead && h.ran() && (!inBase || !b.ran()) && !h.mixed():
			if inBase {
				c.onlyHead = append(c.onlyHead, fmt.Sprintf("%s (BASE: %s)", s, b.outcome))
			} else {
				c.onlyHead = append(c.onlyHead, s)
			}
		case inHead && h.mixed() && (!inBase || !b.ran()):
			c.differing = append(c.differing, s)
			c.flaky = append(c.flaky, fmt.Sprintf("%s: BASE %s, HEAD %s%s%s", s, orNotIn(inBase, b), h.rate(), failureOf(specResult{}, h), verdictOf(h)))
		case !inBase || !inHead || !b.ran():
			// Ran in neither.
		case b.mixed() || h.mixed():
			// A series whose runs disagree: noise, with its pass rates,
			// never a change.
			c.differing = append(c.differing, s)
			c.flaky = append(c.flaky, fmt.Sprintf("%s: BASE %s, HEAD %s%s%s", s, b.rate(), h.rate(), failureOf(b, h), verdictOf(h)))
		case b.outcome == "failed" && h.outcome == "failed" && h.verdict != nil && h.verdict.Known:
			c.knownBoth = append(c.knownBoth, fmt.Sprintf("%s: BASE %s, HEAD %s%s", s, b.rate(), h.rate(), verdictOf(h)))
		case b.outcome == "failed" && h.outcome == "failed":
			c.bothFailed = append(c.bothFailed, fmt.Sprintf("%s: BASE %s, HEAD %s%s%s", s, b.rate(), h.rate(), failureOf(b, h), verdictOf(h)))
		case b.outcome == "failed":
			was := "" // BASE's known failure: what the bump brought
			if b.verdict != nil && b.verdict.Known {
				was = verdictOf(b)
			}
			c.differing = append(c.differing, s)
			c.fixed = append(c.fixed, once(b, h, fmt.Sprintf("%s: BASE %s, HEAD %s%s", s, b.rate(), h.rate(), was)))
		case b.outcome != h.outcome:
			c.differing = append(c.differing, s)
			worse(h, once(b, h, fmt.Sprintf("%s: BASE %s, HEAD %s%s%s", s, b.rate(), h.rate(), failureOf(b, h), verdictOf(h))))
		case causesApart(b, h) && b.ranIn == 1 && h.ranIn == 1:
			c.causes = append(c.causes, fmt.Sprintf("%s: BASE %s; HEAD %s", s, b.causes, h.causes))
		case causesApart(b, h):
			c.causes = append(c.causes, fmt.Sprintf("%s: BASE %s over %d runs; HEAD %s over %d runs", s, b.causes, b.ranIn, h.causes, h.ranIn))
		case n.beyond(b.recoveries, h.recoveries):
			c.recoveries = append(c.recoveries, fmt.Sprintf("%s: BASE %s, HEAD %s", s, span(b.recoveries), span(h.recoveries)))
		}
	}
	c.observations, c.varyingObservations = compareObservations(base, head, n)
	return c
}

// orNotIn is r's pass rate, or "not in BASE" / its outcome when it did not
// run there.
func orNotIn(in bool, r specResult) string {
	if !in {
		return "not in BASE"
	}
	return r.outcome
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
func (c comparison) text(base, head runSpecs, n noise, failOnBase bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Comparison: BASE %s (client-go %s, %d runs) vs HEAD %s (client-go %s, %d runs)\n\n", base.dir, orNone(base.clientGo), base.runs, head.dir, orNone(head.clientGo), head.runs)
	b.WriteString(c.verdict(failOnBase) + "\n\n")
	if !c.changed() && len(c.bothFailed)+len(c.knownBoth)+len(c.flaky)+len(c.fixed)+len(c.causes)+len(c.recoveries)+len(c.onlyHead)+len(c.observations) == 0 {
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
	section("Flaky: passed in some runs of a side and failed in others (pass rates; noise, not a change)", c.flaky)
	section("Known failures on both sides (known behaviour of HEAD's client-go, with the upstream change: not blocking)", c.knownBoth)
	section("Failing on both sides, unexplained (already failing in BASE: not a change of HEAD's)", c.bothFailed)
	section("Fixed in HEAD (failed in BASE)", c.fixed)
	section("Same outcome, other re-initialisations (a spec that allows several causes can differ between runs: rerun before calling it a change)", c.causes)
	section(fmt.Sprintf("Recovery beyond the noise (more than %.0f s and %.0f%% apart)", n.Seconds, 100*n.Ratio), c.recoveries)
	section("Ran in HEAD only", c.onlyHead)
	section("Observations that changed (what the informers did differently in specs that ran on both sides, where no outcome says so: values, times beyond the noise, counts by more than one call and half, memory by more than 4 MiB and half; each tied to its upstream change where the verdict data knows it)", tiedObservations(c.observations, base, head))
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
	failOnBase := fset.Bool("fail-on-base-failures", false, "exit 1 also when an unexplained spec failed on both sides")
	differing := fset.String("differing", "", "also write a Ginkgo --focus regular expression of the specs whose outcome differs (worse, fixed, flaky) to this file, for reruns; empty file when none differs")
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
			text := c.text(base, head, n, *failOnBase)
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
			if *differing != "" {
				if err := os.WriteFile(*differing, []byte(focusOf(c.differing)), 0o644); err != nil {
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

// focusOf is a Ginkgo --focus regular expression matching exactly the
// specs (full texts) named, or "" for none.
func focusOf(specs []string) string {
	if len(specs) == 0 {
		return ""
	}
	var q []string
	for _, s := range specs {
		q = append(q, regexp.QuoteMeta(s))
	}
	return "^(" + strings.Join(q, "|") + ")$\n"
}

// runVerdict is the verdict of one side alone (no BASE to compare with: a
// push): it blocks on unexplained failures; known ones are listed apart,
// each with its upstream change; a spec that failed in some runs of a
// series and passed in others is flaky.
func runVerdict(side runSpecs) (string, bool) {
	var unexplained, knownLines, flaky []string
	for _, name := range slices.Sorted(maps.Keys(side.specs)) {
		r := side.specs[name]
		switch {
		case r.failed == 0:
		case r.mixed():
			flaky = append(flaky, fmt.Sprintf("%s: %s%s", name, r.rate(), verdictOf(r)))
		case r.verdict != nil && r.verdict.Known:
			knownLines = append(knownLines, fmt.Sprintf("%s: %s%s", name, r.rate(), verdictOf(r)))
		default:
			unexplained = append(unexplained, fmt.Sprintf("%s: %s%s%s", name, r.rate(), failureOf(specResult{}, r), verdictOf(r)))
		}
	}
	var b strings.Builder
	blocks := len(unexplained) > 0
	if blocks {
		fmt.Fprintf(&b, "**Verdict: blocks**: %d unexplained failure(s)", len(unexplained))
	} else {
		b.WriteString("**Verdict: passes**: no unexplained failure")
	}
	if len(knownLines) > 0 {
		fmt.Fprintf(&b, "; %d known failure(s) of client-go %s (not blocking)", len(knownLines), orNone(side.clientGo))
	}
	if len(flaky) > 0 {
		fmt.Fprintf(&b, "; %d flaky (failed in some runs only)", len(flaky))
	}
	b.WriteString(".\n\n")
	for _, sec := range []struct {
		title string
		lines []string
	}{{"Unexplained failures", unexplained}, {"Flaky", flaky}, {"Known failures (known behaviour of this client-go, with the upstream change)", knownLines}} {
		if len(sec.lines) == 0 {
			continue
		}
		fmt.Fprintf(&b, "## %s (%d)\n\n", sec.title, len(sec.lines))
		for _, l := range sec.lines {
			fmt.Fprintf(&b, "- %s\n", l)
		}
		b.WriteString("\n")
	}
	return b.String(), blocks
}

// verdictMain is `matrix verdict [-out FILE] DIR`: one run's (or series')
// failures, unexplained and known, and whether they block; exit 1 when an
// unexplained failure does.
func verdictMain(args []string) int {
	return dirCommand("verdict", "a run's failures (an artifacts directory, or a directory of runs), each known behaviour of its client-go or unexplained; exit 1 when one is unexplained", args,
		func(dir string) (string, bool, error) {
			side, err := loadSide(dir)
			if err != nil {
				return "", false, err
			}
			text, blocks := runVerdict(side)
			return text, blocks, nil
		})
}

// dirCommand runs `matrix NAME [-out FILE] DIR`: judge reads DIR and says
// what it found (markdown, printed and written to FILE) and whether that
// fails the command (exit 1); a usage error or an unreadable DIR exits 2.
func dirCommand(name, usage string, args []string, judge func(dir string) (string, bool, error)) int {
	fset := flag.NewFlagSet("matrix "+name, flag.ContinueOnError)
	out := fset.String("out", "", "also write it (markdown) to this file")
	fset.Usage = func() {
		fmt.Fprintf(fset.Output(), "usage: matrix %s [flags] DIR: %s\n", name, usage)
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		return 2
	}
	if fset.NArg() != 1 {
		fset.Usage()
		return 2
	}
	text, fails, err := judge(fset.Arg(0))
	if err == nil && *out != "" {
		err = os.WriteFile(*out, []byte(text), 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "matrix %s: %v\n", name, err)
		return 2
	}
	fmt.Print(text)
	if fails {
		return 1
	}
	return 0
}

// tiedObservations are the observation changes as compare prints them,
// each with the upstream changes of the step from base to head that
// explain it (the verdict data: a client-go change when the client-go
// versions differ, a kube-apiserver change when the servers do).
func tiedObservations(cs []observationChange, base, head runSpecs) []string {
	data := knownData()
	var out []string
	for i, line := range observationLines(cs) {
		var tied []knownChange
		if base.clientGo != "" && head.clientGo != "" && base.clientGo != head.clientGo {
			tied = append(tied, data.ExplainObservation(cs[i].sentence, known.ComponentClientGo, base.clientGo, head.clientGo)...)
		}
		if base.kube != "" && head.kube != "" && base.kube != head.kube {
			tied = append(tied, data.ExplainObservation(cs[i].sentence, known.ComponentKubeAPIServer, base.kube, head.kube)...)
		}
		for _, k := range tied {
			line += " — known: " + k.ComponentOf() + " " + k.AddedIn + ": " + k.Upstream
			if len(k.Links) > 0 {
				line += " (" + strings.Join(k.Links, ", ") + ")"
			}
		}
		out = append(out, line)
	}
	return out
}

// flakesMain is `matrix flakes [-out FILE] DIR`: the per-spec pass rates of
// the series of runs under DIR (hack/soak.sh's <series>-<n> directories,
// grouped by series: idle, hog4, ...), every spec that failed at least
// once, with its verdict; exit 1 when a spec failed in any run.
func flakesMain(args []string) int {
	return dirCommand("flakes", "per-spec pass rates of the series of runs in DIR (<series>-<n> run directories, as hack/soak.sh writes them); exit 1 when a spec failed in some run", args, flakeTable)
}

// seriesRun is a run directory's series: "idle-3" is series idle.
var seriesRun = regexp.MustCompile(`^(.+)-([0-9]+)$`)

// flakeTable is the pass-rate table of the series under dir, and whether
// any spec failed.
func flakeTable(dir string) (string, bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", false, err
	}
	bySeries := map[string][]string{}
	for _, e := range entries {
		m := seriesRun.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		if own, _ := filepath.Glob(filepath.Join(dir, e.Name(), "informer-report-*.json")); len(own) == 0 {
			continue // a run that wrote no report (see its log)
		}
		bySeries[m[1]] = append(bySeries[m[1]], filepath.Join(dir, e.Name()))
	}
	if len(bySeries) == 0 {
		return "", false, fmt.Errorf("%s has no run directories (<series>-<n>) with an informer report", dir)
	}
	series := slices.Sorted(maps.Keys(bySeries))
	sides := map[string]runSpecs{}
	for _, s := range series {
		side, err := loadRuns(s, bySeries[s])
		if err != nil {
			return "", false, err
		}
		sides[s] = side
	}
	var b strings.Builder
	b.WriteString("# Flake budget: pass rates per spec\n\n")
	first := sides[series[0]]
	fmt.Fprintf(&b, "**Run**: client-go %s, kube-apiserver %s; %s.\n\n", orDash(first.clientGo), orDash(first.kube), seriesInfo(dir, series))
	b.WriteString("| series | runs | specs that ran | runs with a failure | specs that failed | seconds a run (median) |\n|---|---:|---:|---:|---:|---:|\n")
	failing := map[string]bool{}
	for _, s := range series {
		side := sides[s]
		failedSpecs, ran := 0, 0
		for name, r := range side.specs {
			if r.ranIn > 0 {
				ran++
			}
			if r.failed > 0 {
				failing[name] = true
				failedSpecs++
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s |\n", s, side.runs, ran, side.failingRuns, failedSpecs, medianSeconds(filepath.Join(dir, s+".tsv")))
	}
	if len(failing) == 0 {
		b.WriteString("\nNo spec failed in any run.\n")
		return b.String(), false, nil
	}
	b.WriteString("\n| spec |")
	for _, s := range series {
		fmt.Fprintf(&b, " %s |", s)
	}
	b.WriteString(" verdict and first failure |\n|---|")
	for range series {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	for _, name := range slices.Sorted(maps.Keys(failing)) {
		fmt.Fprintf(&b, "| %s |", mdCell(name))
		var first specResult
		for _, s := range series {
			r := sides[s].specs[name]
			if r.ranIn == 0 {
				b.WriteString(" not run |")
				continue
			}
			fmt.Fprintf(&b, " %d of %d passed |", r.ranIn-r.failed, r.ranIn)
			if first.failure == "" && r.failed > 0 {
				first = r
			}
		}
		v := ""
		if first.verdict != nil {
			v = first.verdict.Line() + "; "
		}
		fmt.Fprintf(&b, " %s |\n", mdCell(v+first.failure))
	}
	return b.String(), true, nil
}

// seriesInfo names what hack/soak.sh recorded of each series in
// <series>.env (commit, backend, cores, CPU hogs, label filter), or that
// it did not.
func seriesInfo(dir string, series []string) string {
	var out []string
	for _, s := range series {
		raw, err := os.ReadFile(filepath.Join(dir, s+".env"))
		if err != nil {
			out = append(out, s+": no record of its commit and machine")
			continue
		}
		kv := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			if k, v, ok := strings.Cut(l, "="); ok {
				kv[k] = v
			}
		}
		backend := ""
		if b := kv["backend"]; b != "" {
			backend = " on the " + b + " backend"
		}
		out = append(out, fmt.Sprintf("%s: the suite at commit %s%s, %s cores, %s CPU hogs, label filter %q", s, orDash(kv["commit"]), backend, orDash(kv["cores"]), orDash(kv["hog"]), kv["filter"]))
	}
	return strings.Join(out, "; ")
}

// medianSeconds is the median of the seconds column of a soak's
// <series>.tsv, or "-".
func medianSeconds(tsv string) string {
	raw, err := os.ReadFile(tsv)
	if err != nil {
		return "-"
	}
	var secs []float64
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n")[1:] {
		f := strings.Split(l, "\t")
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			secs = append(secs, v)
		}
	}
	if len(secs) == 0 {
		return "-"
	}
	slices.Sort(secs)
	return strconv.FormatFloat(secs[len(secs)/2], 'f', 0, 64)
}

// unionKeys are the keys of a and b, sorted.
func unionKeys[V any](a, b map[string]V) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// causesApart says whether the sides' re-initialisation causes differ
// beyond their run-to-run range: a cause in every run of one side and in
// none of the other's (how many times it fired within a run is timing).
func causesApart(b, h specResult) bool {
	for _, cs := range []struct{ in, out specResult }{{b, h}, {h, b}} {
		for c, n := range cs.in.causeRuns {
			if n == cs.in.ranIn && cs.out.causeRuns[c] == 0 {
				return true
			}
		}
	}
	return false
}
