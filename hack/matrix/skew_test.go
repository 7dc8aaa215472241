package main

import (
	"strings"
	"testing"
	"time"

	"github.com/informer-conformance/informer-conformance/report"
)

// TestSkew: a run over several kube-apiserver versions gets a table of
// client-go rows and server columns, each cell with its counts, failing
// scenarios and skew; a run over one server gets none.
func TestSkew(t *testing.T) {
	cols := []column{
		{ClientGo: "v0.37.2", Kube: "v1.36.3", Cells: map[string]cell{"S1 a": {Outcome: "passed"}, "S18 b": {Outcome: "failed"}, "S18 c": {Outcome: "failed"}}},
		{ClientGo: "v0.37.2", Kube: "v1.37.2", Cells: map[string]cell{"S1 a": {Outcome: "passed"}, "S18 b": {Outcome: "passed"}}},
		{ClientGo: "v0.35.10", Kube: "v1.37.2", Error: "resolve modules"},
		{ClientGo: "v0.37.2", Kube: "v1.37.2", Gates: gateSet{{Name: "AtomicFIFO"}}, Cells: map[string]cell{"S1 a": {Outcome: "failed"}}},
	}
	var b strings.Builder
	writeSkew(&b, cols)
	doc := b.String()
	for _, want := range []string{
		"| client-go | kube-apiserver v1.36.3 | kube-apiserver v1.37.2 |\n",
		"| v0.35.10 | - | did not run (-2) |\n",
		"| v0.37.2 | 1 / 2: S18 (+1) | 2 / 0 (0) |\n",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("skew table lacks %q:\n%s", want, doc)
		}
	}
	// Two etcd versions under one kube-apiserver: a column each.
	b.Reset()
	writeSkew(&b, []column{
		{ClientGo: "v0.37.2", Kube: "v1.37.2", Etcd: "v3.6.16", Cells: map[string]cell{"S1 a": {Outcome: "passed"}}},
		{ClientGo: "v0.37.2", Kube: "v1.37.2", Etcd: "v3.5.21", Cells: map[string]cell{"S1 a": {Outcome: "failed"}}},
	})
	if want := "| client-go | kube-apiserver v1.37.2, etcd v3.5.21 | kube-apiserver v1.37.2, etcd v3.6.16 |\n|---|---|---|\n| v0.37.2 | 0 / 1: S1 (0) | 1 / 0 (0) |\n"; !strings.Contains(b.String(), want) {
		t.Errorf("etcd versions: skew table lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	writeSkew(&b, cols[1:2])
	if b.Len() != 0 {
		t.Errorf("one server version, yet a skew table:\n%s", b.String())
	}
}

// TestSkewDoc: the document names its run and lists each column's failures.
func TestSkewDoc(t *testing.T) {
	cols := []column{
		{ClientGo: "v0.37.2", Kube: "v1.36.3", Commit: "0123456789abcdef", Cells: map[string]cell{"S3 x": {Outcome: "failed", Failure: "timed out | waiting"}}},
		{ClientGo: "v0.37.2", Kube: "v1.37.2", Commit: "0123456789abcdef", Cells: map[string]cell{"S3 x": {Outcome: "passed"}}},
		{ClientGo: "v0.35.10", Kube: "v1.37.2", Cells: map[string]cell{"S18 a consumer slower than the events the watch keeps being read LIST+WATCH": {Outcome: "failed"}}},
	}
	var b strings.Builder
	writeSkewDoc(&b, cols, verdicts, "make matrix KUBE_VERSIONS='v1.36.3 v1.37.2'", time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC), 2)
	doc := b.String()
	for _, want := range []string{
		"Produced 2026-11-27 18:00 UTC from the suite at commit 0123456 on a machine with 2 cores, by\n\n```\nmake matrix KUBE_VERSIONS='v1.36.3 v1.37.2'\n```\n",
		"| v0.37.2 | 0 / 1: S3 (+1) | 1 / 0 (0) |\n",
		"- client-go v0.37.2 / kube-apiserver v1.36.3:\n  - S3 x: **no entry of the verdict data explains it on this client-go: the server's doing, or unknown**; failure: timed out \\| waiting\n",
		"- client-go v0.37.2 / kube-apiserver v1.37.2: none\n",
		"  - S18 a consumer slower than the events the watch keeps being read LIST+WATCH: the client-go's (documented change: kubernetes PR #136008",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q:\n%s", want, doc)
		}
	}
}

// TestServerSteps: per client-go, each kube-apiserver version with the next
// on the same etcd and each etcd version with the next under the same
// kube-apiserver; gate columns, errored columns and columns without reports
// are left out.
func TestServerSteps(t *testing.T) {
	col := func(cg, kube, etcd string) column {
		return column{ClientGo: cg, Kube: kube, Etcd: etcd, Dir: "/r/" + cg + kube + etcd}
	}
	cols := []column{
		col("v0.37.2", "v1.37.2", "v3.6.16"),
		col("v0.37.2", "v1.36.3", "v3.6.16"),
		col("v0.37.2", "v1.36.3", "v3.5.35"),
		col("v0.37.2", "v1.37.2", "v3.5.35"),
		col("v0.36.6", "v1.36.3", "v3.6.16"),
		{ClientGo: "v0.36.6", Kube: "v1.37.2", Etcd: "v3.6.16", Error: "resolve modules"},
		{ClientGo: "v0.37.2", Kube: "v1.37.2", Etcd: "v3.7.3"},
		{ClientGo: "v0.37.2", Kube: "v1.37.2", Etcd: "v3.7.3", Gates: gateSet{{Name: "AtomicFIFO"}}, Dir: "/r/g"},
	}
	var got []string
	for _, s := range serverSteps(cols) {
		got = append(got, s.heading())
	}
	want := []string{
		"kube-apiserver v1.36.3 → v1.37.2 (client-go v0.37.2, etcd v3.5.35)",
		"kube-apiserver v1.36.3 → v1.37.2 (client-go v0.37.2, etcd v3.6.16)",
		"etcd v3.5.35 → v3.6.16 (client-go v0.37.2, kube-apiserver v1.36.3)",
		"etcd v3.5.35 → v3.6.16 (client-go v0.37.2, kube-apiserver v1.37.2)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("server steps\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if steps := serverSteps(cols[:1]); len(steps) != 0 {
		t.Errorf("one server, yet steps: %v", steps)
	}
}

// TestExplainServerChange: 1.37's gzip of streaming lists explains the
// Content-Encoding change of a kube-apiserver step to 1.37, not an etcd
// step, not a step within 1.36.
func TestExplainServerChange(t *testing.T) {
	sentence := `pods: GET streaming list /api/v1/namespaces/NS/pods: Content-Encoding of 2xx answers changed from "identity" to "gzip"`
	if got := explainServerChange(sentence, "kube-apiserver", "v1.36.3", "v1.37.2"); len(got) != 1 {
		t.Errorf("kube-apiserver v1.36.3 → v1.37.2: %d entries, want 1", len(got))
	}
	if got := explainServerChange(sentence, "etcd", "v3.5.35", "v3.6.16"); len(got) != 0 {
		t.Errorf("an etcd step explained by a kube-apiserver change: %v", got)
	}
	if got := explainServerChange(sentence, "kube-apiserver", "v1.35.4", "v1.36.3"); len(got) != 0 {
		t.Errorf("a step before 1.37 explained by 1.37's change: %v", got)
	}
}

// TestServerSection: a verdict plan's server steps are its newest release
// (not the next minor's pre-release) against each step server; on the page
// each step between them and the default server is judged as an upgrade
// step is (a line each, tied upstream), the client-go steps name no server,
// the header names the section's servers, and the skew table has the
// stepped release's row only.
func TestServerSection(t *testing.T) {
	plan := withServerSteps([]column{{ClientGo: "v0.36.6"}, {ClientGo: "v0.37.2"}, {ClientGo: "v0.37.2", Gates: gateSet{{Name: "AtomicFIFO"}}}, {ClientGo: "v0.38.0-beta.0"}},
		stepServers([]string{"v1.36.3"}, []string{"v3.6.16"}))
	var planned []string
	for _, c := range plan[4:] {
		planned = append(planned, c.name())
	}
	if got, want := strings.Join(planned, "; "), "client-go v0.37.2 / kube-apiserver v1.36.3; client-go v0.37.2 / etcd v3.6.16"; got != want || !plan[4].ServerStep || len(plan) != 6 {
		t.Errorf("server steps planned: %s (%d columns), want %s", got, len(plan), want)
	}

	root := t.TempDir()
	encoding := func(v string) report.Observation {
		return report.Value("GET streaming list /api/v1/namespaces/<ns>/pods: Content-Encoding of 2xx answers", v).Of("pods")
	}
	col := func(name, cg, kube, etcd string, step bool, s ...report.Spec) column {
		return column{ClientGo: cg, Kube: kube, Etcd: etcd, ServerStep: step, Dir: writeRun(t, root, name, cg, s...)}
	}
	cols := []column{
		col("a", "v0.36.6", "v1.37.2", "v3.7.3", false, observedSpec("S1 restart", encoding("gzip"))),
		col("b", "v0.37.2", "v1.37.2", "v3.7.3", false, observedSpec("S1 restart", encoding("gzip"))),
		col("c", "v0.37.2", "v1.36.3", "v3.7.3", true, observedSpec("S1 restart", encoding("identity"))),
		col("d", "v0.37.2", "v1.37.2", "v3.6.16", true, observedSpec("S1 restart", encoding("gzip"))),
	}
	var b strings.Builder
	writeStepVerdicts(&b, judgeSteps(cols, verdicts, noise{Seconds: 2, Ratio: 0.5}))
	writeServerSteps(&b, cols, verdicts, noise{Seconds: 2, Ratio: 0.5})
	writeSkew(&b, cols)
	doc := b.String() + serverStepsSentence(cols)
	for _, want := range []string{
		"| v0.36.6 → v0.37.2 (v0.36 to v0.37) | safe",
		"| kube-apiserver v1.36.3 → v1.37.2 (client-go v0.37.2, etcd v3.7.3) | 1 behaviour change(s): kubernetes PRs #139308 and #140140 (watchlist-gzip) |",
		"| etcd v3.6.16 → v3.7.3 (client-go v0.37.2, kube-apiserver v1.37.2) | safe",
		"### kube-apiserver v1.36.3 → v1.37.2 (client-go v0.37.2, etcd v3.7.3)\n\n1 behaviour change(s)",
		"| v0.37.2 | 0 / 0 (+1) | 0 / 0 (0) | 0 / 0 (0) |",
		"**Server section**: client-go v0.37.2 with its default gates also against kube-apiserver v1.36.3 on etcd v3.7.3, kube-apiserver v1.37.2 on etcd v3.6.16",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("page lacks %q:\n%s", want, doc)
		}
	}
	for _, unwanted := range []string{"against kube-apiserver v1.37.2 on etcd", "| v0.36.6 |"} {
		if strings.Contains(doc, unwanted) {
			t.Errorf("page has %q:\n%s", unwanted, doc)
		}
	}
	if got := kubeVersions(cols); strings.Join(got, " ") != "v1.37.2" {
		t.Errorf("the run's kube-apiserver: %v, want the client-go columns' v1.37.2 only", got)
	}
}
