package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/informer-conformance/informer-conformance/report"
	"github.com/informer-conformance/informer-conformance/report/known"
)

// writeRun writes an informer report of specs into a new directory under
// parent and returns it.
func writeRun(t *testing.T, parent, name, clientGo string, specs ...report.Spec) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(report.SuiteSummary{Suite: "conformance", ClientGo: clientGo, Specs: specs})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(report.FilesIn(dir, "conformance").JSON, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// loadSides loads two runs' directories as compare does, failing the test
// on an error.
func loadSides(t *testing.T, base, head string) (runSpecs, runSpecs) {
	t.Helper()
	b, err := loadSide(base)
	if err != nil {
		t.Fatal(err)
	}
	h, err := loadSide(head)
	if err != nil {
		t.Fatal(err)
	}
	return b, h
}

func spec(name, outcome string, recovery float64, causes map[report.Cause]int) report.Spec {
	return report.Spec{Spec: name, Outcome: outcome, Informers: []report.Numbers{{Informer: "pods", Reinitialisations: causes, RecoverySeconds: recovery}}}
}

func TestCompareTwoRuns(t *testing.T) {
	root := t.TempDir()
	gone := map[report.Cause]int{"410 Gone": 1}
	base := writeRun(t, root, "base", "v0.35.10",
		spec("S1 restart", "passed", 3, gone),
		spec("S5 compaction", "passed", 2, gone),
		spec("S6 restore", "passed", 10, nil),
		spec("S8 resync", "passed", 0, nil),
		spec("S9 sync", "skipped", 0, nil),
		spec("S14 bookmark", "passed", 0, nil),
	)
	head := writeRun(t, root, "head", "v0.36.6",
		spec("S1 restart", "failed", 3, map[report.Cause]int{"410 Gone": 2}),
		spec("S5 compaction", "passed", 2, map[report.Cause]int{"transport error": 1}),
		spec("S6 restore", "passed", 30, nil),
		spec("S8 resync", "passed", 0.5, nil),
		spec("S9 sync", "passed", 0, nil),
	)
	b, h := loadSides(t, base, head)
	n := noise{Seconds: 2, Ratio: 0.5}
	c := compareRuns(b, h, n)
	if !c.changed() {
		t.Fatal("an outcome changed, compare says none did")
	}
	text := c.text(b, h, n, false)
	for _, want := range []string{
		"**Verdict: blocks**: HEAD made 2 outcome(s) worse (2 unexplained, 0 known behaviour of HEAD's client-go). One run a side: an outcome that differs is one observation, not yet a change",
		"## Outcomes that changed (2)\n\n- S1 restart: BASE passed, HEAD failed — unexplained: no known behaviour of client-go v0.36.6 explains it (verdict data of the run at " + knownRunCommit(t) + ") (one run a side)\n",
		"- S14 bookmark: BASE passed, HEAD not in HEAD\n",
		"- S5 compaction: BASE 410 Gone: 1; HEAD transport error: 1",
		"- S6 restore: BASE 10.0 s, HEAD 30.0 s",
		"## Ran in HEAD only (1)\n\n- S9 sync (BASE: skipped)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("comparison lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "S8 resync") {
		t.Errorf("S8's 0.5 s recovery is within the noise, yet listed:\n%s", text)
	}
	if i, j := strings.Index(text, "Outcomes that changed"), strings.Index(text, "other re-initialisations"); i < 0 || j < i {
		t.Errorf("the outcomes do not come first:\n%s", text)
	}
}

// TestCompareSeries: a side may be a directory of runs; a recovery counts
// as moved only when the two sides' ranges lie apart beyond the noise, and
// an outcome that failed in some runs says how many.
func TestCompareSeries(t *testing.T) {
	root := t.TempDir()
	for i, r := range []float64{8, 31, 17} {
		writeRun(t, filepath.Join(root, "base"), "run-"+string(rune('a'+i)), "v0.36.6", spec("S6 restore", "passed", r, nil), spec("S2 blackhole", "passed", 5, nil))
	}
	for i, r := range []float64{12, 26} {
		outcome := "passed"
		if i == 1 {
			outcome = "failed"
		}
		writeRun(t, filepath.Join(root, "head"), "run-"+string(rune('a'+i)), "v0.36.6", spec("S6 restore", "passed", r, nil), spec("S2 blackhole", outcome, 50, nil))
	}
	b, h := loadSides(t, filepath.Join(root, "base"), filepath.Join(root, "head"))
	if b.runs != 3 || h.runs != 2 {
		t.Fatalf("runs %d and %d, want 3 and 2", b.runs, h.runs)
	}
	n := noise{Seconds: 2, Ratio: 0.5}
	text := compareRuns(b, h, n).text(b, h, n, false)
	if !strings.Contains(text, "## Flaky: passed in some runs of a side and failed in others (pass rates; noise, not a change) (1)\n\n- S2 blackhole: BASE passed 3 of 3 runs, HEAD passed 1 of 2 runs") ||
		!strings.Contains(text, "**Verdict: passes**: HEAD made no outcome worse; 1 flaky") || strings.Contains(text, "Outcomes that changed") {
		t.Errorf("the flaky outcome is not named with its pass rates, apart from changes:\n%s", text)
	}
	if strings.Contains(text, "S6 restore") {
		t.Errorf("S6's recoveries overlap (8-31 s and 12-26 s), yet listed:\n%s", text)
	}
	if _, err := loadSide(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no informer report") {
		t.Errorf("a directory without reports = %v", err)
	}
}

// TestCompareGatesOnWhatHeadChanges: a spec failing on both sides is listed
// apart and does not fail the comparison unless asked; a fix is listed and
// does not fail it; a spec that did not run in BASE and fails in HEAD does.
func TestCompareGatesOnWhatHeadChanges(t *testing.T) {
	root := t.TempDir()
	base := writeRun(t, root, "base", "v0.36.6",
		spec("S8 resync", "passed", 0, nil),
		spec("S10 shutdown", "failed", 0, nil),
		spec("S14 bookmark", "skipped", 0, nil),
		spec("S19 transform", "failed", 0, nil),
	)
	head := writeRun(t, root, "head", "v0.37.2",
		spec("S8 resync", "passed", 0, nil),
		spec("S10 shutdown", "failed", 0, nil),
		spec("S14 bookmark", "skipped", 0, nil),
		spec("S19 transform", "passed", 0, nil),
	)
	b, h := loadSides(t, base, head)
	n := noise{Seconds: 2, Ratio: 0.5}
	c := compareRuns(b, h, n)
	if c.fails(false) {
		t.Errorf("nothing changed for the worse, yet the comparison fails: %+v", c)
	}
	if !c.fails(true) {
		t.Errorf("with failOnBase, S10 failing on both sides does not fail the comparison: %+v", c)
	}
	text := c.text(b, h, n, false)
	for _, want := range []string{
		"## Failing on both sides, unexplained (already failing in BASE: not a change of HEAD's) (1)\n\n- S10 shutdown: BASE failed, HEAD failed — unexplained",
		"## Fixed in HEAD (failed in BASE) (1)\n\n- S19 transform: BASE failed, HEAD passed (one run a side)\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("comparison lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Outcomes that changed") || strings.Contains(text, "No change") {
		t.Errorf("comparison:\n%s", text)
	}

	// The bump meets S14's version constraint and S14 fails: HEAD's change.
	newer := writeRun(t, root, "newer", "v0.37.2",
		spec("S8 resync", "passed", 0, nil),
		report.Spec{Spec: "S14 bookmark", Outcome: "failed", Failure: "no bookmark\nmore"},
		spec("S22 writes", "failed", 0, nil),
	)
	_, h = loadSides(t, base, newer)
	c = compareRuns(b, h, n)
	if !c.fails(false) {
		t.Errorf("S14 failed in HEAD only, yet the comparison passes: %+v", c)
	}
	text = c.text(b, h, n, false)
	if want := "(4)\n\n- S10 shutdown: BASE failed, HEAD not in HEAD\n- S14 bookmark: BASE skipped, HEAD failed (no bookmark) — unexplained: no known behaviour of client-go v0.37.2 explains it (verdict data of the run at " + knownRunCommit(t) + ") (one run a side)\n- S19 transform: BASE failed, HEAD not in HEAD\n- S22 writes: BASE not in BASE, HEAD failed — unexplained"; !strings.Contains(text, want) {
		t.Errorf("comparison lacks %q:\n%s", want, text)
	}
}

// TestCompareKnownFailures: a downstream bumps client-go v0.32.13 to
// v0.33.0: S17 fails on both sides, known for HEAD's client-go (listed
// apart with its upstream change and link, never blocking); S16's known
// failure is fixed by the bump (said with what BASE's was); S13 failing on
// both sides with no entry is unexplained (blocking only with failOnBase).
func TestCompareKnownFailures(t *testing.T) {
	const (
		s17 = "S17 what a handler sees of the store during a relist every handler call of a relist after a 410 sees a store the server once had LIST+WATCH"
		s13 = "S13 GOAWAY across HA kube-apiservers informers move with their connections LIST+WATCH"
		s16 = "S16 handler order across objects the handler hears a burst of changes slow index function, LIST+WATCH"
	)
	root := t.TempDir()
	failed := func(name string) report.Spec {
		return report.Spec{Spec: name, Outcome: "failed", Failure: "boom"}
	}
	base := writeRun(t, root, "base", "v0.32.13", failed(s17), failed(s13), failed(s16))
	head := writeRun(t, root, "head", "v0.33.0", failed(s17), failed(s13), spec(s16, "passed", 0, nil))
	b, h := loadSides(t, base, head)
	n := noise{Seconds: 2, Ratio: 0.5}
	c := compareRuns(b, h, n)
	if c.fails(false) {
		t.Errorf("nothing worse, yet it blocks: %+v", c)
	}
	if !c.fails(true) || len(c.bothFailed) != 1 {
		t.Errorf("with failOnBase the unexplained S13 alone blocks: %+v", c)
	}
	text := c.text(b, h, n, false)
	for _, want := range []string{
		"## Known failures on both sides (known behaviour of HEAD's client-go, with the upstream change: not blocking) (1)\n\n- " + s17 + ": BASE failed, HEAD failed — known for client-go v0.33.0: documented change: kubernetes PR #132240",
		"https://github.com/kubernetes/kubernetes/pull/132240",
		"## Failing on both sides, unexplained (already failing in BASE: not a change of HEAD's) (1)\n\n- " + s13,
		"- " + s16 + ": BASE failed, HEAD passed — known for client-go v0.32.13: documented change: kubernetes PR #129568",
		"**Verdict: passes**: HEAD made no outcome worse; 1 known failure(s) on both sides (not blocking), 1 unexplained failure(s) on both sides",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("comparison lacks %q:\n%s", want, text)
		}
	}
}

// TestCompareSameCodeSeries: five runs a side of the same client-go, one
// spec flaky on each side in turn, observations varying within their
// range: no change listed, the verdict passes.
func TestCompareSameCodeSeries(t *testing.T) {
	root := t.TempDir()
	for side, flakyRun := range map[string]int{"base": 1, "head": 3} {
		for i := range 5 {
			outcome := "passed"
			if i == flakyRun {
				outcome = "failed"
			}
			writeRun(t, filepath.Join(root, side), "run-"+string(rune('a'+i)), "v0.36.6",
				spec("S2 blackhole", outcome, 5, nil),
				spec("S6 restore", "passed", float64(8+3*i), map[report.Cause]int{"410 Gone": 1 + i%2, report.Cause([]string{"clean close", "transport error"}[i%2]): 1}),
				report.Spec{Spec: "S12 storm", Outcome: "passed", Observations: []report.Observation{report.Calls("LISTs", 20+i).Of("pods")}})
		}
	}
	b, h := loadSides(t, filepath.Join(root, "base"), filepath.Join(root, "head"))
	n := noise{Seconds: 2, Ratio: 0.5}
	c := compareRuns(b, h, n)
	if c.changed() || c.fails(true) || len(c.fixed)+len(c.causes)+len(c.recoveries)+len(c.observations) != 0 {
		t.Errorf("the same code compared with itself lists changes: %+v", c)
	}
	text := c.text(b, h, n, false)
	if !strings.Contains(text, "- S2 blackhole: BASE passed 4 of 5 runs, HEAD passed 4 of 5 runs") || strings.Contains(text, "One run a side") {
		t.Errorf("comparison:\n%s", text)
	}
}

// TestCompareReruns: the specs whose outcome differs are named for a rerun
// (a focus that matches them alone); the reruns, in rerun-N directories of
// each side's run, make those specs a series: a failure HEAD repeats in
// every run is a change, without the one-run caveat; a flip that does not
// repeat is flaky.
func TestCompareReruns(t *testing.T) {
	root := t.TempDir()
	const s1, s2 = "S1 restart (graceful), LIST+WATCH", "S2 blackhole [x]"
	base := writeRun(t, root, "base", "v0.36.6", spec(s1, "passed", 0, nil), spec(s2, "passed", 0, nil), spec("S3 other", "passed", 0, nil))
	head := writeRun(t, root, "head", "v0.37.2", spec(s1, "failed", 0, nil), spec(s2, "failed", 0, nil), spec("S3 other", "passed", 0, nil))
	b, h := loadSides(t, base, head)
	c := compareRuns(b, h, noise{Seconds: 2, Ratio: 0.5})
	focus := focusOf(c.differing)
	re := regexp.MustCompile(strings.TrimSpace(focus))
	if !re.MatchString(s1) || !re.MatchString(s2) || re.MatchString("S3 other") || re.MatchString("x"+s1) {
		t.Errorf("focus %q does not match exactly the differing specs", focus)
	}
	for i := range 2 {
		writeRun(t, base, RerunPrefix+string(rune('1'+i)), "v0.36.6", spec(s1, "passed", 0, nil), spec(s2, "passed", 0, nil))
		writeRun(t, head, RerunPrefix+string(rune('1'+i)), "v0.37.2", spec(s1, "failed", 0, nil), spec(s2, "passed", 0, nil))
	}
	b, h = loadSides(t, base, head)
	n := noise{Seconds: 2, Ratio: 0.5}
	c = compareRuns(b, h, n)
	text := c.text(b, h, n, false)
	for _, want := range []string{
		"- " + s1 + ": BASE passed 3 of 3 runs, HEAD failed 3 of 3 runs",
		"## Flaky: passed in some runs of a side and failed in others (pass rates; noise, not a change) (1)\n\n- " + s2 + ": BASE passed 3 of 3 runs, HEAD passed 2 of 3 runs",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("comparison lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "one run a side") || !c.fails(false) || len(c.outcomes) != 1 {
		t.Errorf("comparison:\n%s", text)
	}
	if got := focusOf(nil); got != "" {
		t.Errorf("focus of none = %q", got)
	}
}

// TestRunVerdict: one run alone blocks on unexplained failures only; known
// ones are listed apart with their upstream change.
func TestRunVerdict(t *testing.T) {
	const s17 = "S17 what a handler sees of the store during a relist every handler call LIST+WATCH"
	root := t.TempDir()
	dir := writeRun(t, root, "head", "v0.33.0", report.Spec{Spec: s17, Outcome: "failed", Failure: "half replaced"}, spec("S1 restart", "passed", 0, nil))
	side, err := loadSide(dir)
	if err != nil {
		t.Fatal(err)
	}
	text, blocks := runVerdict(side)
	if blocks || !strings.HasPrefix(text, "**Verdict: passes**: no unexplained failure; 1 known failure(s) of client-go v0.33.0 (not blocking).") ||
		!strings.Contains(text, "- "+s17+": failed — known for client-go v0.33.0: documented change: kubernetes PR #132240") {
		t.Errorf("blocks %t:\n%s", blocks, text)
	}
	dir = writeRun(t, root, "other", "v0.33.0", report.Spec{Spec: "S13 GOAWAY x", Outcome: "failed", Failure: "relisted\nmore"})
	side, _ = loadSide(dir)
	text, blocks = runVerdict(side)
	if !blocks || !strings.Contains(text, "**Verdict: blocks**: 1 unexplained failure(s).") || !strings.Contains(text, "- S13 GOAWAY x: failed (relisted) — unexplained: no known behaviour of client-go v0.33.0") {
		t.Errorf("blocks %t:\n%s", blocks, text)
	}
}

// TestCompareTiesObservationsUpstream: a downstream's bump from v0.34.13 to
// v0.35.0 changes its informers' first request to a streaming list: compare
// lists it tied to the upstream change (the WatchListClient gate on by
// default); the same change between two runs of one release is not tied.
func TestCompareTiesObservationsUpstream(t *testing.T) {
	root := t.TempDir()
	obs := func(what string) report.Spec {
		return report.Spec{Spec: "S10 shutdown", Outcome: "passed", Observations: []report.Observation{report.Value(what, "protobuf").Of("pods")}}
	}
	base := writeRun(t, root, "base", "v0.34.13", obs("GET list /api/v1/namespaces/x/pods: Accept"))
	head := writeRun(t, root, "head", "v0.35.0", obs("GET streaming list /api/v1/namespaces/x/pods: Accept"))
	b, h := loadSides(t, base, head)
	n := noise{Seconds: 2, Ratio: 0.5}
	text := compareRuns(b, h, n).text(b, h, n, false)
	for _, want := range []string{
		`S10 shutdown: informer pods: GET streaming list /api/v1/namespaces/x/pods: Accept appeared: "protobuf" — known: client-go v0.35.0: kubernetes PR #134180`,
		`S10 shutdown: informer pods: GET list /api/v1/namespaces/x/pods: Accept disappeared (BASE: "protobuf") — known: client-go v0.35.0: kubernetes PR #134180`,
		"https://github.com/kubernetes/kubernetes/pull/134180",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("comparison lacks %q:\n%s", want, text)
		}
	}
	same := writeRun(t, root, "same", "v0.34.13", obs("GET streaming list /api/v1/namespaces/x/pods: Accept"))
	b, h = loadSides(t, base, same)
	if text := compareRuns(b, h, n).text(b, h, n, false); strings.Contains(text, "known:") {
		t.Errorf("tied without a step of client-go:\n%s", text)
	}
}

// TestFlakeTable: the series of a soak (idle-N, hog4-N) as pass rates, the
// specs that failed at least once, each with its verdict.
func TestFlakeTable(t *testing.T) {
	root := t.TempDir()
	for i := 1; i <= 3; i++ {
		s12 := "passed"
		if i == 2 {
			s12 = "failed"
		}
		writeRun(t, root, fmt.Sprintf("idle-%d", i), "v0.37.2", spec("S1 restart", "passed", 0, nil), report.Spec{Spec: "S12 storm", Outcome: s12, Failure: "re-initialised 5 times"})
		writeRun(t, root, fmt.Sprintf("hog4-%d", i), "v0.37.2", spec("S1 restart", "passed", 0, nil), spec("S12 storm", "passed", 0, nil))
	}
	if err := os.MkdirAll(filepath.Join(root, "idle-4"), 0o755); err != nil { // no report: not a run
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "idle.env"), []byte("commit=abc1234\ncores=2\nhog=0\nfilter=!slow\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "idle.tsv"), []byte("run\tseconds\tresult\n1\t300\tpassed\n2\t280\tfailed\n3\t310\tpassed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeRun(t, root, "kind-idle-1", "v0.37.2", spec("S1 restart", "passed", 0, nil))
	if err := os.WriteFile(filepath.Join(root, "kind-idle.env"), []byte("commit=abc1234\ncores=2\nhog=0\nfilter=sample\nbackend=kind\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text, failed, err := flakeTable(root)
	if err != nil || !failed {
		t.Fatalf("failed %t, err %v", failed, err)
	}
	for _, want := range []string{
		"| hog4 | 3 | 2 | 0 | 0 | - |", "| idle | 3 | 2 | 1 | 1 | 300 |", "| kind-idle | 1 | 1 | 0 | 0 | - |",
		`kind-idle: the suite at commit abc1234 on the kind backend, 2 cores, 0 CPU hogs, label filter "sample"`,
		`idle: the suite at commit abc1234, 2 cores, 0 CPU hogs, label filter "!slow"`, "hog4: no record of its commit and machine",
		"| S12 storm | 3 of 3 passed | 2 of 3 passed | not run | unexplained: no known behaviour of client-go v0.37.2 explains it",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	if _, _, err := flakeTable(t.TempDir()); err == nil {
		t.Error("an empty directory gives a table")
	}
}

// knownRunCommit is the commit of the verdict run the shipped data comes
// from (report/known's run), as the explanations name it.
func knownRunCommit(t *testing.T) string {
	t.Helper()
	d, err := known.Load()
	if err != nil {
		t.Fatal(err)
	}
	return d.Run.Commit
}

// TestStormAsFleet: an S12 report written before its informers were a
// fleet compares as one written since: the fifty informers' observations
// one set, the others' as they were; another spec's informer-NNN stay.
func TestStormAsFleet(t *testing.T) {
	var obs []report.Observation
	for i := range 50 {
		name := fmt.Sprintf("informer-%03d", i)
		obs = append(obs, report.Value("GET list pods: first request's Accept", "protobuf, JSON").Of(name), report.Calls("handler calls: Delete", 3).Of(name).Varying())
	}
	obs = append(obs, report.Value("S12's own", "x"))
	got := stormAsFleet("S12 relist storm cost every informer converges LIST+WATCH", obs)
	if len(got) != 3 || got[0].What != "S12's own" || got[1].Key() != "informer storm (50 informers): GET list pods: first request's Accept" || got[1].Value != "protobuf, JSON" || *got[2].Number != 150 {
		t.Errorf("stormAsFleet: %+v", got)
	}
	if got := stormAsFleet("S28 WaitForCacheSync", obs); len(got) != len(obs) {
		t.Errorf("stormAsFleet of another spec changed it: %d observations, want %d", len(got), len(obs))
	}
}
