package main

import (
	"strings"
	"testing"
	"time"

	"github.com/informer-conformance/informer-conformance/report"
)

func TestUpgradeSteps(t *testing.T) {
	root := t.TempDir()
	transforms := func(v string) report.Spec {
		return observedSpec("S19 transform streaming list", report.Value("transform calls per object (the store's and the handler calls')", v).Of("pods"))
	}
	col := func(v string, s ...report.Spec) column {
		return column{ClientGo: v, Dir: writeRun(t, root, v, v, s...)}
	}
	cols := []column{
		col("v0.33.0", transforms("1")),
		col("v0.33.13", transforms("1")),
		{ClientGo: "v0.33.13", Gates: gateSet{{Name: "InOrderInformers"}}, Dir: root},
		col("v0.34.13", transforms("1, 2")),
		col("v0.35.0-alpha.2", transforms("1, 2"), spec("S20 new", "failed", 0, nil)),
	}
	var got []string
	for _, s := range upgradeSteps(cols) {
		got = append(got, s.from.ClientGo+">"+s.to.ClientGo+" ("+s.what+")")
	}
	if want := "v0.33.0>v0.33.13 (patches of v0.33); v0.33.13>v0.34.13 (v0.33 to v0.34); v0.34.13>v0.35.0-alpha.2 (the next minor's pre-release: what v0.35 will change)"; strings.Join(got, "; ") != want {
		t.Errorf("steps %s\nwant  %s", strings.Join(got, "; "), want)
	}
	var b strings.Builder
	steps := judgeSteps(cols, verdicts, noise{Seconds: 2, Ratio: 0.5})
	writeStepVerdicts(&b, steps)
	writeUpgradeSteps(&b, steps)
	for _, want := range []string{
		"| v0.33.0 → v0.33.13 (patches of v0.33) | safe: no behaviour change",
		"| v0.33.13 → v0.34.13 (v0.33 to v0.34) | 1 behaviour change(s): kubernetes PR #131799 (transform-twice) |",
		"| v0.34.13 → v0.35.0-alpha.2 (the next minor's pre-release: what v0.35 will change) | **breaks**: 1 spec(s) no known change explains (S20 new) |",
		"### v0.33.0 → v0.33.13 (patches of v0.33)\n\nSafe: no behaviour change",
		"- **kubernetes PR #131799 (transform-twice)**, documented change: 1 observation(s). Kubernetes PR #131799",
		`  - S19 transform streaming list: informer pods: transform calls per object (the store's and the handler calls') changed from "1" to "1, 2"`,
		"- **breaks**: S20 new: v0.34.13 not run, v0.35.0-alpha.2 failed",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("section lacks %q:\n%s", want, b.String())
		}
	}
}

// TestUpgradeStepsPerServer: against two servers, client-go steps pair
// columns of the same server only, each step naming its server.
func TestUpgradeStepsPerServer(t *testing.T) {
	cols := []column{
		{ClientGo: "v0.36.6", Kube: "v1.36.3", Dir: "/a"},
		{ClientGo: "v0.36.6", Kube: "v1.37.2", Dir: "/b"},
		{ClientGo: "v0.37.2", Kube: "v1.36.3", Dir: "/c"},
		{ClientGo: "v0.37.2", Kube: "v1.37.2", Dir: "/d"},
	}
	var got []string
	for _, s := range upgradeSteps(cols) {
		got = append(got, s.from.Dir+">"+s.to.Dir+" ("+s.what+")")
	}
	if want := "/a>/c (v0.36 to v0.37, against kube-apiserver v1.36.3); /b>/d (v0.36 to v0.37, against kube-apiserver v1.37.2)"; strings.Join(got, "; ") != want {
		t.Errorf("steps %s\nwant  %s", strings.Join(got, "; "), want)
	}
}

// TestUpgradeStepMemory: S34's streaming-list peak with a stripping
// transform dropping from v0.34.2 to v0.34.3 is tied to its upstream
// change.
func TestUpgradeStepMemory(t *testing.T) {
	root := t.TempDir()
	peak := func(n float64) report.Spec {
		return observedSpec("S34 memory streaming list", report.MiB("peak live heap during the sync, with a transform stripping the data", n))
	}
	cols := []column{
		{ClientGo: "v0.34.2", Dir: writeRun(t, root, "v0.34.2", "v0.34.2", peak(37.1))},
		{ClientGo: "v0.34.13", Dir: writeRun(t, root, "v0.34.13", "v0.34.13", peak(6.5))},
	}
	var b strings.Builder
	writeUpgradeSteps(&b, judgeSteps(cols, verdicts, noise{Seconds: 2, Ratio: 0.5}))
	if want := "- **kubernetes PR #131799 (transform-twice)**, documented change: 1 observation(s)"; !strings.Contains(b.String(), want) || !strings.Contains(b.String(), "  - S34 memory streaming list: peak live heap during the sync, with a transform stripping the data moved from 37.1 MiB to 6.5 MiB") {
		t.Errorf("section lacks %q:\n%s", want, b.String())
	}
}

// TestFindColumnDirs: the columns of sharded runs name directories of the
// machines that ran them; their reports are found by name where the shards
// were downloaded.
func TestFindColumnDirs(t *testing.T) {
	root := t.TempDir()
	writeRun(t, root+"/shards/verdict-columns-0", "v0.36.6__default", "v0.36.6", transformsSpec("1, 2"))
	writeRun(t, root+"/shards/verdict-columns-1", "v0.37.2__default", "v0.37.2", transformsSpec("1"))
	cols := []column{{ClientGo: "v0.36.6", Dir: "/home/runner/work/_artifacts/verdicts/v0.36.6__default"}, {ClientGo: "v0.37.2", Dir: "/elsewhere/v0.37.2__default"}}
	if err := findColumnDirs(cols, root+"/shards"); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	writeUpgradeSteps(&b, judgeSteps(cols, verdicts, noise{Seconds: 2, Ratio: 0.5}))
	if !strings.Contains(b.String(), "1 observation change(s) not yet tied to an upstream change") || !strings.Contains(b.String(), `changed from "1, 2" to "1"`) {
		t.Errorf("the shards' reports were not compared:\n%s", b.String())
	}
}

// TestKnownChangesApply: each known change explains its own change on the
// step across its version, and not the other way round or on a step
// before it.
func TestKnownChangesApply(t *testing.T) {
	for _, tc := range []struct {
		sentence, from, to string
		want               int
	}{
		{`informer pods: transform calls per object (the store's and the handler calls') changed from "1" to "1, 2"`, "v0.34.2", "v0.34.3", 1},
		{`informer pods: transform calls per object (the store's and the handler calls') changed from "1" to "1, 2"`, "v0.33.13", "v0.34.2", 0},
		{`the factory's WaitForCacheSync returns changed from "polled" to "at once"`, "v0.35.10", "v0.36.6", 1},
		{`the factory's WaitForCacheSync returns changed from "polled" to "at once"`, "v0.36.0", "v0.36.6", 0},
		{`the factory's WaitForCacheSync returns changed from "at once" to "polled"`, "v0.35.10", "v0.36.6", 0},
		{`informer pods: GET list /api/v1/namespaces/<ns>/pods: first request's Accept changed from "JSON, */*" to "protobuf, JSON"`, "v0.31.14", "v0.32.13", 1},
		{`informer pods: GET streaming list /api/v1/namespaces/<ns>/pods: Content-Type of 2xx answers changed from "JSON" to "protobuf;stream=watch"`, "v0.31.14", "v0.32.13", 1},
		{`informer pods: GET list /api/v1/namespaces/<ns>/pods: first request's Accept changed from "JSON, */*" to "protobuf, JSON"`, "v0.32.0", "v0.32.13", 0},
		{`informer pods: GET list /api/v1/namespaces/<ns>/pods: first request's query disappeared (BASE: "limit=500&resourceVersion=0")`, "v0.34.13", "v0.35.10", 1},
		{`informer pods: GET streaming list /api/v1/namespaces/<ns>/pods: first request's query appeared: "allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true"`, "v0.34.13", "v0.35.10", 1},
		{`informer pods: GET streaming list /api/v1/namespaces/<ns>/pods: first request's query appeared: "allowWatchBookmarks=true"`, "v0.35.0", "v0.35.10", 0},
		{`informer pods: GET list /api/v1/namespaces/<ns>/pods: first request's query appeared: "limit=500"`, "v0.34.13", "v0.35.10", 0},
		{`error changed from "client rate limiter Wait returned an error: context canceled" to "context canceled"`, "v0.36.6", "v0.37.2", 1},
		{`error changed from "client rate limiter Wait returned an error: context deadline exceeded" to "context deadline exceeded"`, "v0.37.0", "v0.37.2", 0},
	} {
		if got := len(explainChange(tc.sentence, tc.from, tc.to)); got != tc.want {
			t.Errorf("%s, %s to %s: %d explanations, want %d", tc.sentence, tc.from, tc.to, got, tc.want)
		}
	}
}

func transformsSpec(v string) report.Spec {
	return observedSpec("S19 transform streaming list", report.Value("transform calls per object (the store's and the handler calls')", v).Of("pods"))
}

// TestMetricsHooksAddedByARelease: S32's "no such hook" observations are
// explained on the step that adds the hook, and only there.
func TestMetricsHooksAddedByARelease(t *testing.T) {
	sentence := func(hook, to string) string {
		return `S32 informer metrics: client-go metrics hook ` + hook + ` changed from "no such hook" to "` + to + `"`
	}
	for _, tc := range []struct {
		sentence, from, to string
		explained          bool
	}{
		{sentence("tools/metrics.ExecPluginPolicyCalls", "not emitted"), "v0.34.13", "v0.35.10", true},
		{sentence("tools/metrics.TransportCAReloads", "not emitted"), "v0.35.10", "v0.36.6", true},
		{sentence("tools/metrics.TransportCacheGCCalls", "not emitted"), "v0.35.10", "v0.36.6", true},
		{sentence("tools/cache.SetInformerMetricsProvider", "present, not registered (NewProcessingLatencyMetric, NewQueuedItemMetric, NewStoreResourceVersionMetric)"), "v0.35.10", "v0.36.6", true},
		{sentence("tools/metrics.RegisterOpts.RegisterFn", "called 1 time(s)"), "v0.36.6", "v0.37.2", true},
		{sentence("tools/metrics.RegisterOpts.RegisterFn", "called 1 time(s)"), "v0.37.2", "v0.38.0-alpha.2", false},
		{sentence("tools/metrics.TransportCAReloads", "not emitted"), "v0.34.13", "v0.35.10", false},
	} {
		if got := len(explainChange(tc.sentence, tc.from, tc.to)); (got == 1) != tc.explained || got > 1 {
			t.Errorf("%s, %s to %s: %d explanations, want explained %t (once)", tc.sentence, tc.from, tc.to, got, tc.explained)
		}
	}
}

// TestSuiteNoiseInSteps: an observation change the verdict data names
// noise counts as noise between columns run before the suite's fix, and is
// an untied change between columns run after it.
func TestSuiteNoiseInSteps(t *testing.T) {
	root := t.TempDir()
	synced := func(s float64) report.Spec {
		return observedSpec("S12 relist storm cost every informer converges LIST+WATCH", report.Seconds("start to synced", time.Duration(s*float64(time.Second))).Of("informer-002"))
	}
	cols := []column{
		{ClientGo: "v0.31.0", Commit: "old", Dir: writeRun(t, root, "a", "v0.31.0", synced(2.57))},
		{ClientGo: "v0.31.14", Commit: "old", Dir: writeRun(t, root, "b", "v0.31.14", synced(0.5))},
	}
	for _, c := range []struct {
		fixed         bool
		suite, untied int
	}{{false, 1, 0}, {true, 0, 1}} {
		n := noise{Seconds: 2, Ratio: 0.5, fixed: func(commit, fix string) bool { return c.fixed }}
		j := judgeSteps(cols, verdicts, n)[0]
		if j.suiteNoise != c.suite || len(j.untied) != c.untied {
			t.Errorf("columns with the fix %t: suite noise %d, untied %v; want %d, %d", c.fixed, j.suiteNoise, j.untied, c.suite, c.untied)
		}
	}
}
