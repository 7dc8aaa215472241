package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/informer-conformance/informer-conformance/report"
)

// writeRun writes an informer report of specs into a new directory under
// parent and returns it.
func writeRun(t *testing.T, parent, name, clientGo string, specs ...report.SpecSummary) string {
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

func spec(name, outcome string, recovery float64, causes map[report.Cause]int) report.SpecSummary {
	return report.SpecSummary{Spec: name, Outcome: outcome, Informers: []report.Numbers{{Informer: "pods", Reinitialisations: causes, RecoverySeconds: recovery}}}
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
	text := c.text(b, h, n)
	for _, want := range []string{
		"## Outcomes that changed (2)\n\n- S1 restart: BASE passed, HEAD failed\n- S14 bookmark: BASE passed, HEAD not in HEAD\n",
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
	text := compareRuns(b, h, n).text(b, h, n)
	if !strings.Contains(text, "- S2 blackhole: BASE passed, HEAD failed in 1 of 2 runs") {
		t.Errorf("the flaky outcome is not named with its count:\n%s", text)
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
	text := c.text(b, h, n)
	for _, want := range []string{
		"## Failing on both sides (already failing in BASE: not a change of HEAD's) (1)\n\n- S10 shutdown: BASE failed, HEAD failed\n",
		"## Fixed in HEAD (failed in BASE) (1)\n\n- S19 transform: BASE failed, HEAD passed\n",
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
		report.SpecSummary{Spec: "S14 bookmark", Outcome: "failed", Failure: "no bookmark\nmore"},
		spec("S22 writes", "failed", 0, nil),
	)
	_, h = loadSides(t, base, newer)
	c = compareRuns(b, h, n)
	if !c.fails(false) {
		t.Errorf("S14 failed in HEAD only, yet the comparison passes: %+v", c)
	}
	text = c.text(b, h, n)
	if want := "## Outcomes that changed (4)\n\n- S10 shutdown: BASE failed, HEAD not in HEAD\n- S14 bookmark: BASE skipped, HEAD failed (no bookmark)\n- S19 transform: BASE failed, HEAD not in HEAD\n- S22 writes: BASE not in BASE, HEAD failed\n"; !strings.Contains(text, want) {
		t.Errorf("comparison lacks %q:\n%s", want, text)
	}
}
