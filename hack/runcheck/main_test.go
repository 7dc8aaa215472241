package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/informer-conformance/informer-conformance/report"
	"github.com/informer-conformance/informer-conformance/report/timing"
)

func spec(text string, state types.SpecState, skip string, labels ...string) types.SpecReport {
	return types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: text, State: state,
		Failure: types.Failure{Message: skip}, LeafNodeLabels: labels}
}

func suite(name, filter string, specs ...types.SpecReport) types.Report {
	return types.Report{SuiteDescription: name, SuiteConfig: types.SuiteConfig{LabelFilter: filter},
		SpecReports: append(types.SpecReports{{LeafNodeType: types.NodeTypeReportBeforeSuite, State: types.SpecStatePassed}}, specs...)}
}

const lacks = "backend existing lacks apiserver-restart: run this spec on the local backend"

// runOn writes reports as Ginkgo's --json-report does and runs the command on them.
func runOn(t *testing.T, cmd string, reports ...types.Report) (code int, stdout, stderr string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.json")
	data, err := json.Marshal(reports)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code = run([]string{cmd, path}, &out, &errb)
	return code, out.String(), errb.String()
}

func TestReportFailsWhenTheFilterSelectsNothing(t *testing.T) {
	code, out, errs := runOn(t, "report",
		suite("conformance", "no-such-label", spec("a", types.SpecStateSkipped, "", "S1", "fast"), spec("b", types.SpecStateSkipped, "", "S2")),
		suite("smoke", "no-such-label", spec("c", types.SpecStateSkipped, "", "smoke", "S3")))
	if code != 1 || !strings.Contains(errs, `no spec passed in any suite: the label filter "no-such-label" selects no spec (labels that exist: S1-S3, fast, smoke); a run that tests nothing fails`) {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if !strings.Contains(out, ": 0 passed") || !strings.Contains(out, "3 not run: not selected") {
		t.Errorf("stdout %q", out)
	}
}

func TestReportFailsWhenEverySelectedSpecSkipped(t *testing.T) {
	code, out, errs := runOn(t, "report",
		suite("conformance", "smoke", spec("a", types.SpecStateSkipped, "")),
		suite("smoke", "smoke", spec("b", types.SpecStateSkipped, lacks), spec("b2", types.SpecStateSkipped, lacks)))
	if code != 1 || !strings.Contains(errs, "every selected spec skipped") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if !strings.HasSuffix(out, "   2 skipped: "+lacks+"\n     1 not run: "+notSelected+"\n") {
		t.Errorf("the skip reason is not given with its count: %q", out)
	}
}

func TestReportPassesWhenASpecPassedInAnySuite(t *testing.T) {
	code, out, errs := runOn(t, "report",
		suite("conformance", "", spec("a", types.SpecStatePassed, ""), spec("b", types.SpecStateSkipped, lacks),
			spec("c", types.SpecStateSkipped, "other reason"), spec("d", types.SpecStateSkipped, lacks)),
		suite("smoke", "", spec("e", types.SpecStateSkipped, lacks)))
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	want := "runcheck: specs of conformance, smoke: 1 passed, 0 failed, 4 skipped\n" +
		"     3 skipped: " + lacks + "\n" +
		"     1 skipped: other reason\n" +
		"runcheck: time: 1 spec ran for 0 s in all; cluster starts: 0\n" +
		"runcheck: the 1 slowest specs:\n" +
		"     0.0 s  a (the rest 0.0 s)\n"
	if out != want {
		t.Errorf("stdout\n%s\nwant\n%s", out, want)
	}
}

func TestReportFailsWhenNonePassed(t *testing.T) {
	code, _, errs := runOn(t, "report", suite("smoke", "", spec("a", types.SpecStateFailed, "boom")))
	if code != 1 || !strings.Contains(errs, "none passed") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

// TestRanFailsOnlyWhenNothingRan: runcheck ran lets failed specs through
// (the workflow's compare with the base judges them) and fails a run that
// tested nothing, saying why.
func TestRanFailsOnlyWhenNothingRan(t *testing.T) {
	if code, out, errs := runOn(t, "ran", suite("conformance", "resync", spec("a", types.SpecStateFailed, "boom"), spec("b", types.SpecStateSkipped, ""))); code != 0 || errs != "" || !strings.Contains(out, "0 passed, 1 failed") {
		t.Errorf("a run whose one selected spec failed: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, _, errs := runOn(t, "ran", suite("conformance", "no-such-label", spec("a", types.SpecStateSkipped, ""))); code != 1 ||
		!strings.Contains(errs, `no spec ran in any suite: the label filter "no-such-label" selects no spec`) {
		t.Errorf("an empty selection: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := runOn(t, "ran", suite("conformance", "smoke", spec("a", types.SpecStateSkipped, lacks))); code != 1 ||
		!strings.Contains(errs, "no spec ran in any suite: every selected spec skipped") {
		t.Errorf("every selected spec skipped: exit %d, stderr %q", code, errs)
	}
}

func TestReportMissing(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"report", filepath.Join(t.TempDir(), "report.json")}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "no report at") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

func TestFilter(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"filter", "resync || !slow"}, &out, &errb); code != 0 {
		t.Errorf("a good filter: exit %d, %q", code, errb.String())
	}
	if code := run([]string{"filter", "(((("}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `label filter "((((" does not parse: Syntax Error Parsing Label Filter: (((( Mismatched`) {
		t.Errorf("a bad filter: exit %d, %q", code, errb.String())
	}
}

func TestLabelsListsLabelsFromVariables(t *testing.T) {
	s := spec("streaming list", types.SpecStatePassed, "", "sync:streaming-list")
	s.ContainerHierarchyLabels = [][]string{{"resync"}}
	l := spec("LIST+WATCH", types.SpecStatePassed, "", "sync:list")
	l.ContainerHierarchyLabels = [][]string{{"resync"}}
	code, out, _ := runOn(t, "labels", suite("conformance", "", s, l))
	want := "conformance:\n" +
		"  resync                         2 specs\n" +
		"  sync:list                      1 spec\n" +
		"  sync:streaming-list            1 spec\n"
	if code != 0 || out != want {
		t.Errorf("exit %d, stdout\n%s\nwant\n%s", code, out, want)
	}
}

// TestReportCountsDetectorStates: the specs that ran say whether the
// watch-list consistency detector checked their streaming lists; an off
// one is not hidden among the on ones.
func TestReportCountsDetectorStates(t *testing.T) {
	noted := func(s types.SpecReport, state string) types.SpecReport {
		d := report.Spec{SyncMode: "streaming list", Detector: state}
		s.ReportEntries = types.ReportEntries{{Name: report.SpecEntry, Value: types.WrapEntryValue(d)}}
		return s
	}
	off := `off (KUBE_WATCHLIST_INCONSISTENCY_DETECTOR="false" when the process started; client-go reads it once, at its init)`
	code, out, errs := runOn(t, "report", suite("conformance", "",
		noted(spec("a", types.SpecStatePassed, ""), "on"), noted(spec("b", types.SpecStateFailed, "boom"), "on"),
		noted(spec("c", types.SpecStatePassed, ""), off), noted(spec("d", types.SpecStateSkipped, lacks), "on"),
		spec("e", types.SpecStatePassed, "")))
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{
		"runcheck: watch-list consistency detector on in 2 streaming-list specs\n",
		"runcheck: watch-list consistency detector " + off + " in 1 streaming-list spec\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

// timed is a spec that ran for seconds, with its report.Spec entry
// timing phases (name, seconds, ...), summed by name as e2e's Env.TimePhase
// does (runOn writes it as Ginkgo does, JSON only); from, if not "", is
// where its cluster came from.
func timed(text string, state types.SpecState, seconds float64, from string, phases ...any) types.SpecReport {
	sp := spec(text, state, "")
	sp.RunTime = time.Duration(seconds * float64(time.Second))
	d := report.Spec{ClusterFrom: from}
	for i := 0; i+1 < len(phases); i += 2 {
		if d.Time == nil {
			d.Time = map[string]float64{}
		}
		d.Time[phases[i].(string)] += phases[i+1].(float64)
	}
	sp.ReportEntries = append(sp.ReportEntries, types.ReportEntry{Name: report.SpecEntry, Value: types.WrapEntryValue(d)})
	return sp
}

// TestReportSaysWhereTheTimeWent: the run's total, each phase's sum and
// share (cluster starts first, counted), and the slowest specs, slowest
// first, each with its phases and the rest; skipped specs do not count.
func TestReportSaysWhereTheTimeWent(t *testing.T) {
	var specs []types.SpecReport
	for i := range 12 {
		specs = append(specs, timed(fmt.Sprintf("s%02d", i), types.SpecStatePassed, float64(i+1), "", timing.ClusterStart, 0.5, timing.ClusterClose, 0.25))
	}
	specs = append(specs,
		timed("slow one", types.SpecStateFailed, 40, "", timing.ClusterStart, 2.0, "server: graceful shutdown", 30.0, "server: graceful shutdown", 4.0),
		timed("shared", types.SpecStatePassed, 0.5, ""),
		spec("skipped", types.SpecStateSkipped, lacks))
	_, out, _ := runOn(t, "report", suite("conformance", "", specs...))
	for _, want := range []string{
		"runcheck: time: 14 specs ran for 118 s in all; cluster starts: 13 (p50 0.5 s, p95 2.0 s); cluster start 8 s (7%); server: graceful shutdown 34 s (29%); cluster close 3 s (3%)\n",
		"runcheck: the 10 slowest specs:\n    40.0 s  slow one (cluster start 2.0 s, server: graceful shutdown 34.0 s, the rest 4.0 s)\n    12.0 s  s11 (cluster close 0.2 s, cluster start 0.5 s, the rest 11.2 s)\n",
		"     4.0 s  s03 (",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s02 (") || strings.Contains(out, "skipped (") {
		t.Errorf("more than the 10 slowest, or a skipped spec, listed:\n%s", out)
	}
}

// TestReportSaysWhereClustersCameFrom: the specs' own clusters are counted
// by their report.Spec's ClusterFrom.
func TestReportSaysWhereClustersCameFrom(t *testing.T) {
	var specs []types.SpecReport
	for i, from := range []string{"spare ready", "started", "spare ready", "spare still starting"} {
		specs = append(specs, timed(fmt.Sprintf("s%02d", i), types.SpecStatePassed, 2, from, timing.ClusterStart, 0.5))
	}
	_, out, _ := runOn(t, "report", suite("conformance", "", specs...))
	want := "cluster starts: 4 (p50 0.5 s, p95 0.5 s); the specs' own clusters: 2 spare ready, 1 spare still starting, 1 started; cluster start"
	if !strings.Contains(out, want) {
		t.Errorf("report lacks %q:\n%s", want, out)
	}
}

// TestReportSetsInterruptedSpecsApart: a run stopped by --fail-fast counts
// the spec that failed as failed and the specs it interrupted apart.
func TestReportSetsInterruptedSpecsApart(t *testing.T) {
	_, out, _ := runOn(t, "report", suite("conformance", "",
		spec("a", types.SpecStatePassed, ""), spec("b", types.SpecStateFailed, "boom"),
		spec("c", types.SpecStateInterrupted, "interrupted by other ginkgo process"), spec("d", types.SpecStateInterrupted, "")))
	if !strings.Contains(out, "1 passed, 1 failed, 0 skipped, 2 interrupted by another spec's failure") {
		t.Errorf("stdout:\n%s", out)
	}
}

// TestReportNamesOnlyNamedSuites: under --fail-fast a suite that never
// started has no description; the summary line does not name it
// ("specs of conformance, : 44 passed").
func TestReportNamesOnlyNamedSuites(t *testing.T) {
	_, out, _ := runOn(t, "report", suite("conformance", "", spec("a", types.SpecStatePassed, "")), suite("", ""))
	if !strings.HasPrefix(out, "runcheck: specs of conformance: 1 passed") {
		t.Errorf("stdout %q", out)
	}
}
