package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/informer-conformance/informer-conformance/report/known"
)

func TestVerdictPlan(t *testing.T) {
	listed := strings.Fields("v0.31.0 v0.31.1 v0.31.14 v0.36.0-alpha.0 v0.36.0-rc.1 v0.36.0 v0.36.5 v0.36.6 v0.37.0-rc.0 v0.37.0")
	cols, err := verdictPlan(listed, []string{"v0.31", "0.36", "v0.37"}, verdictGateSets[2:3], nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cols {
		got = append(got, c.ClientGo+" "+c.Gates.String())
	}
	want := []string{
		"v0.31.0 default", "v0.31.14 default", "v0.31.14 AtomicFIFO=false",
		"v0.36.0 default", "v0.36.6 default", "v0.36.6 AtomicFIFO=false",
		// Only v0.37.0 released: the first patch is the newest, once.
		"v0.37.0 default", "v0.37.0 AtomicFIFO=false",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("plan\n%s\nwant\n%s", strings.Join(got, "; "), strings.Join(want, "; "))
	}

	cols, err = verdictPlan(listed, []string{"v0.36.5"}, nil, servers([]string{"v1.35.4", "v1.36.3"}, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, c := range cols {
		got = append(got, c.ClientGo+" "+c.Kube)
	}
	if want := "v0.36.0 v1.35.4; v0.36.0 v1.36.3; v0.36.5 v1.35.4; v0.36.5 v1.36.3"; strings.Join(got, "; ") != want {
		t.Errorf("a patch given, two kube-apiservers: %s, want %s", strings.Join(got, "; "), want)
	}

	// Two etcd versions: each kube-apiserver on each, named in the column.
	cols, err = verdictPlan(listed, []string{"v0.36.5"}, nil, servers([]string{"v1.36.3"}, []string{"v3.5.21", "v3.6.16"}), func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, c := range cols {
		got = append(got, c.name())
	}
	if want := "client-go v0.36.5 / kube-apiserver v1.36.3 / etcd v3.5.21; client-go v0.36.5 / kube-apiserver v1.36.3 / etcd v3.6.16"; strings.Join(got, "; ") != want {
		t.Errorf("two etcd versions: %s, want %s", strings.Join(got, "; "), want)
	}

	// First patches named (VERDICT_GATES=none: no gate sets): one column each.
	cols, err = verdictPlan(listed, []string{"v0.31.0", "v0.36.0"}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, c := range cols {
		got = append(got, c.ClientGo+" "+c.Gates.String())
	}
	if want := "v0.31.0 default; v0.36.0 default"; strings.Join(got, "; ") != want {
		t.Errorf("first patches named, no gate sets: %s, want %s", strings.Join(got, "; "), want)
	}

	if _, err := verdictPlan(listed, []string{"v0.38"}, nil, nil, nil); err == nil || !strings.Contains(err.Error(), "no release of k8s.io/client-go v0.38") {
		t.Errorf("a minor with no release: %v", err)
	}
	if _, err := verdictPlan(listed, []string{"latest"}, nil, nil, nil); err == nil {
		t.Errorf("a version that is not one planned")
	}
}

func TestVerdictsTable(t *testing.T) {
	gates := func(s string) gateSet {
		sets, err := parseGateSets(s)
		if err != nil {
			t.Fatal(err)
		}
		return sets[0]
	}
	for _, tc := range []struct {
		spec, clientGo string
		gates          gateSet
		want           bool
	}{
		{"S16 handler order across objects keeps the server's order", "v0.32.13", nil, true},
		{"S16 handler order across objects keeps the server's order", "v0.33.0", nil, false},
		{"S16 handler order across objects keeps the server's order", "v0.35.10", gates("InOrderInformers=false"), true},
		{"S16 handler order across objects keeps the server's order", "v0.35.10", gates("InOrderInformers=true"), false},
		{"S17 what a handler sees of the store during a relist", "v0.34.13", nil, true},
		{"S17 what a handler sees of the store during a relist", "v0.35.10", nil, false},
		{"S17 what a handler sees of the store during a relist", "v0.35.10", gates("InOrderInformersBatchProcess=false"), true},
		{"S17 what a handler sees of the store during a relist", "v0.36.0", nil, false},
		{"S17 what a handler sees of the store during a relist", "v0.37.2", gates("AtomicFIFO=false"), false},
		{"S17 what a handler sees of the store during a relist", "v0.37.2", gates("AtomicFIFO=false,InOrderInformersBatchProcess=false"), true},
		{"S17 what a handler sees of the store during a relist", "v0.37.2", gates("UnlockWhileProcessingFIFO=false"), false},
		{"S18 a consumer slower than the events", "v0.35.10", nil, true},
		{"S18 a consumer slower than the events", "v0.36.6", nil, false},
		{"S18 a consumer slower than the events", "v0.36.6", gates("UnlockWhileProcessingFIFO=false"), true},
		{"S1 restart", "v0.31.0", nil, false},
		{"S33 content negotiation a list answered as a Table is reported, not taken for a list a dynamic informer whose transport asks for Table, LIST+WATCH", "v0.35.10", nil, true},
		{"S33 content negotiation a list answered as a Table is reported, not taken for a list a dynamic informer whose transport asks for Table, LIST+WATCH", "v0.36.0", nil, false},
		{"S33 content negotiation a list answered as a Table is reported, not taken for a list a dynamic informer whose transport asks for Table, streaming list", "v0.31.14", nil, false},
	} {
		got := len(explain(verdicts, tc.spec, column{ClientGo: tc.clientGo, Gates: tc.gates})) > 0
		if got != tc.want {
			t.Errorf("%q on %s %s explained: %t, want %t", tc.spec, tc.clientGo, tc.gates, got, tc.want)
		}
	}
	for _, v := range verdicts {
		if v.SpecContains == "" || v.Applies == nil || v.Upstream == "" || v.Why == "" || (v.Kind != "documented change" && v.Kind != "regression") {
			t.Errorf("incomplete entry %+v", v)
		}
	}
}

func TestVerdictDoc(t *testing.T) {
	const (
		s16 = "S16 handler order across objects keeps the server's order"
		s17 = "S17 what a handler sees of the store during a relist sees the whole relist"
		s3  = "S3 mid-frame cut recovers"
	)
	cols := []column{
		// Passes: S16 and S17 as v0.37 should.
		{ClientGo: "v0.37.2", Kube: "v1.36.3", Passed: true, Seconds: 61, Cells: map[string]cell{
			s16: {Outcome: "passed"}, s17: {Outcome: "passed"}, "S1 restart": {Outcome: "skipped"},
		}},
		// An explained failure (S16 before v0.33), an unexplained one (S3), and
		// an entry that applies to a spec that passed (S17 before v0.36).
		{ClientGo: "v0.32.13", Kube: "v1.36.3", Seconds: 75, Cells: map[string]cell{
			s16: {Outcome: "failed", Failure: "b heard before a\nmore"},
			s17: {Outcome: "passed"},
			s3:  {Outcome: "failed", Failure: "timed out | waiting"},
		}},
		{ClientGo: "v0.31.14", Gates: gateSet{{Name: "AtomicFIFO"}}, NotApplicable: "client-go v0.31.14 has no AtomicFIFO gate"},
		{ClientGo: "v0.99.0", Error: "resolve modules for client-go v0.99.0: exit status 1"},
	}
	run := verdictRun{Date: time.Date(2026, 5, 1, 12, 30, 0, 0, time.UTC), Cores: 2, Labels: "release-sensitive", Command: "go run ./hack/matrix -verdicts -client-go 'v0.32 v0.37'", Catalogue: []string{"S1", "S2", "S3", "S16", "S17", "S18"}}
	doc, problems := verdictDoc(run, cols, verdicts)
	for _, want := range []string{
		"Produced 2026-05-01 12:30 UTC on a machine with 2 cores by\n\n```\ngo run ./hack/matrix -verdicts -client-go 'v0.32 v0.37'\n```",
		"**Run**: the suite at commit -, against kube-apiserver v1.36.3, label filter `release-sensitive`. Scenarios run: S3, S16-S17. **Scenarios not run: S1-S2, S18**",
		"the run exits non-zero only if a column errored or a failing spec is unexplained",
		"4 columns: 2 ran, 1 not applicable, 1 errored. 2 failing (spec, column): 1 explained, 1 unexplained.",
		"| client-go | kube-apiserver | etcd | gates | passed | failed | skipped | seconds | failing specs |",
		"| v0.37.2 | v1.36.3 | - | default | 2 | 0 | 1 | 61 |  |\n",
		"| v0.32.13 | v1.36.3 | - | default | 1 | 2 | 0 | 75 | S3, S16 |\n",
		"| v0.31.14 | - | - | AtomicFIFO=false | - | - | - | - | not applicable: client-go v0.31.14 has no AtomicFIFO gate |\n",
		"| v0.99.0 | - | - | default | - | - | - | - | error: resolve modules for client-go v0.99.0: exit status 1 |\n",
		"### S16 handler order across objects\n\n**documented change**. Upstream: kubernetes PR #129568 (RealFIFO), gate InOrderInformers",
		"\n\nThe informer's queue is a DeltaFIFO",
		"\n\n- client-go v0.32.13 / kube-apiserver v1.36.3: keeps the server's order\n",
		"### Unexplained\n\n- " + s3 + " on client-go v0.32.13 / kube-apiserver v1.36.3: no entry of the verdict data explains it; a person must look (failure: timed out \\| waiting).\n",
		"## Explained but not seen",
		"### S17 what a handler sees of the store during a relist\n\n- client-go v0.32.13 / kube-apiserver v1.36.3: sees the whole relist\n",
		"## Not applicable\n\n",
		"- client-go v0.31.14 / AtomicFIFO=false: not applicable: client-go v0.31.14 has no AtomicFIFO gate\n",
		"## Errored\n\n",
		"- client-go v0.99.0: resolve modules for client-go v0.99.0: exit status 1\n",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(doc, "S1 restart") {
		t.Errorf("a skipped spec is listed:\n%s", doc)
	}
	if strings.Index(doc, "## Findings") > strings.Index(doc, "## Not applicable") {
		t.Errorf("findings come after the columns not run:\n%s", doc)
	}
	if all := strings.Join(problems, "\n"); len(problems) != 2 || !strings.Contains(all, "client-go v0.99.0 errored: resolve modules") || !strings.Contains(all, s3+" failed, and no entry of the verdict data explains it") {
		t.Errorf("problems %q, want the errored column and the unexplained failure", problems)
	}

	// Explained failures alone are no problem; a suite that failed with no
	// failing spec is.
	_, problems = verdictDoc(run, cols[1:2], verdicts[:0])
	if len(problems) != 2 {
		t.Errorf("with no entries both failures are unexplained: %q", problems)
	}
	cols[1].Cells = map[string]cell{s16: {Outcome: "failed"}}
	if _, problems = verdictDoc(run, cols[:3], verdicts); len(problems) != 0 {
		t.Errorf("an explained failure and a column not applicable are problems: %q", problems)
	}
	doc, problems = verdictDoc(run, []column{{ClientGo: "v0.37.2", Cells: map[string]cell{s16: {Outcome: "passed"}}}}, verdicts)
	if len(problems) != 1 || !strings.Contains(problems[0], "the suite failed, yet no spec failed") || !strings.Contains(doc, "## Errored") {
		t.Errorf("a suite that failed outside its specs: %q\n%s", problems, doc)
	}
}

func TestVerdictCommand(t *testing.T) {
	cfg := config{clientGo: []string{"v0.31", "v0.37"}, kube: []string{""}, labels: "release-sensitive && !slow", procs: 4, suites: "./suites/conformance",
		stepKube: fields(defaultVerdictKubeSteps), stepEtcd: fields(defaultVerdictEtcdSteps)}
	want := `go run ./hack/matrix -verdicts -client-go 'v0.31 v0.37' -label-filter 'release-sensitive && !slow' -procs 4`
	if got := verdictCommand(cfg); got != want {
		t.Errorf("command %s, want %s", got, want)
	}
	cfg.kube, cfg.etcd = []string{"v1.36.3"}, []string{"v3.5.21"}
	if got := verdictCommand(cfg); !strings.Contains(got, "-kube 'v1.36.3' -etcd 'v3.5.21'") {
		t.Errorf("command %s lacks the kube-apiserver or etcd", got)
	}
	cfg.defaultGatesOnly, cfg.firstPatches = true, "v0.31 v0.32"
	if got := verdictCommand(cfg); !strings.HasPrefix(got, "VERDICT_GATES=none VERDICT_FIRST_PATCHES='v0.31 v0.32' go run ./hack/matrix -verdicts ") {
		t.Errorf("command %s does not name the environment that planned its columns", got)
	}
	cfg.stepKube, cfg.stepEtcd = nil, []string{"v3.6.16"}
	if got := verdictCommand(cfg); !strings.Contains(got, "VERDICT_KUBE_STEPS='none' VERDICT_ETCD_STEPS='v3.6.16' go run") {
		t.Errorf("command %s does not name the server steps that differ from the defaults", got)
	}
	t.Setenv("VERDICT_KUBE_STEPS", "none")
	t.Setenv("VERDICT_ETCD_STEPS", "v3.6.16")
	if k, e := verdictSteps("VERDICT_KUBE_STEPS", defaultVerdictKubeSteps), verdictSteps("VERDICT_ETCD_STEPS", defaultVerdictEtcdSteps); len(k) != 0 || strings.Join(e, " ") != "v3.6.16" {
		t.Errorf("server steps from the environment: %v, %v", k, e)
	}
	t.Setenv("VERDICT_KUBE_STEPS", "")
	if k := verdictSteps("VERDICT_KUBE_STEPS", defaultVerdictKubeSteps); len(k) != 0 {
		t.Errorf("VERDICT_KUBE_STEPS empty: %v, want none", k)
	}
	os.Unsetenv("VERDICT_KUBE_STEPS")
	if k := verdictSteps("VERDICT_KUBE_STEPS", defaultVerdictKubeSteps); strings.Join(k, " ") != defaultVerdictKubeSteps {
		t.Errorf("VERDICT_KUBE_STEPS unset: %v, want the defaults", k)
	}
}

// TestRenderVerdicts: -render writes the document from a run's matrix.json,
// dated by the file, with the explanation table as it is now.
func TestRenderVerdicts(t *testing.T) {
	dir := t.TempDir()
	s16 := "S16 handler order across objects the handler hears a burst of changes, LIST+WATCH"
	cols := []column{{ClientGo: "v0.32.13", Kube: "v1.36.3", Cells: map[string]cell{s16: {Outcome: "failed", Failure: "out of order"}}}}
	data, err := json.Marshal(cols)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "matrix.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC)
	if err := os.Chtimes(path, when, when); err != nil {
		t.Fatal(err)
	}
	docPath := filepath.Join(dir, "verdicts.md")
	if err := renderVerdicts(config{labels: "release-sensitive", doc: docPath}, path, "", ""); err != nil {
		t.Fatalf("render: %v", err)
	}
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2026-11-25", "**documented change**", "PR #129568"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("document lacks %q:\n%s", want, doc)
		}
	}
}

// TestFirstPatchesOf: VERDICT_FIRST_PATCHES picks the minors whose first
// patch the plan runs.
func TestFirstPatchesOf(t *testing.T) {
	listed := []string{"v0.31.0", "v0.31.14", "v0.33.0", "v0.33.13"}
	for _, tc := range []struct {
		spec string
		want []string
	}{
		{"", []string{"v0.31.0", "v0.31.14", "v0.33.0", "v0.33.13"}},
		{"none", []string{"v0.31.14", "v0.33.13"}},
		{"v0.31", []string{"v0.31.0", "v0.31.14", "v0.33.13"}},
		{"0.33", []string{"v0.31.14", "v0.33.0", "v0.33.13"}},
	} {
		cols, err := verdictPlan(listed, []string{"v0.31", "v0.33"}, nil, nil, firstPatchesOf(tc.spec))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range cols {
			got = append(got, c.ClientGo)
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("VERDICT_FIRST_PATCHES=%q: columns %v, want %v", tc.spec, got, tc.want)
		}
	}
}

// TestVerdictPlanNext: "next" is the newest pre-release of the minor after
// the newest release, with its defaults.
func TestVerdictPlanNext(t *testing.T) {
	listed := strings.Fields("v0.37.0-rc.0 v0.37.0 v0.37.2 v0.38.0-alpha.0 v0.38.0-alpha.2")
	if got := newestPrerelease(listed); got != "v0.38.0-alpha.2" {
		t.Errorf("newestPrerelease = %q", got)
	}
	cols, err := verdictPlan(listed, []string{"v0.37", nextMinor}, verdictGateSets[2:3], nil, func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cols {
		got = append(got, c.ClientGo+" "+c.Gates.String())
	}
	if want := "v0.37.2 default; v0.37.2 AtomicFIFO=false; v0.38.0-alpha.2 default"; strings.Join(got, "; ") != want {
		t.Errorf("plan %s, want %s", strings.Join(got, "; "), want)
	}
	if newestPrerelease(strings.Fields("v0.37.0-rc.0 v0.37.0")) != "" {
		t.Error("the released minor's pre-releases are not the next minor's")
	}
	if _, err := verdictPlan(strings.Fields("v0.37.0"), []string{nextMinor}, nil, nil, nil); err == nil {
		t.Error("no next pre-release: no error")
	}
}

// TestNextSkipsUnresolvable: "next" is the newest pre-release whose modules
// resolve; the ones skipped are named, with why, on its column.
func TestNextSkipsUnresolvable(t *testing.T) {
	listed := strings.Fields("v0.37.2 v0.38.0-alpha.0 v0.38.0-alpha.2 v0.38.0-beta.0")
	refused := &notServedError{Module: "sigs.k8s.io/structured-merge-diff/v7", Version: "v7.0.1", Newest: "v7.0.0"}
	var tried []string
	left, skipped, err := dropPrereleases(listed, func(v string) error {
		tried = append(tried, v)
		if v == "v0.38.0-beta.0" {
			return refused
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := newestPrerelease(left); got != "v0.38.0-alpha.2" {
		t.Errorf("next = %q, want v0.38.0-alpha.2", got)
	}
	if want := "v0.38.0-beta.0 v0.38.0-alpha.2"; strings.Join(tried, " ") != want {
		t.Errorf("tried %v, want %s", tried, want)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "v0.38.0-beta.0: it requires sigs.k8s.io/structured-merge-diff/v7@v7.0.1") {
		t.Errorf("skipped = %q", skipped)
	}
	doc := markdown([]column{{ClientGo: "v0.38.0-alpha.2", Skipped: skipped, Passed: true}})
	if !strings.Contains(doc, "newer ones skipped: v0.38.0-beta.0") {
		t.Errorf("the matrix does not say what its next column stands in for:\n%s", doc)
	}
	// Another error (no toolchain for the pre-release) is not skipped over.
	if _, _, err := dropPrereleases(listed, func(string) error { return errors.New("needs go1.27") }); err == nil {
		t.Error("a toolchain error was skipped over")
	}
	// None resolves: no next.
	left, skipped, err = dropPrereleases(listed, func(string) error { return refused })
	if err != nil || newestPrerelease(left) != "" || len(skipped) != 3 {
		t.Errorf("none resolves: next %q, skipped %d, err %v", newestPrerelease(left), len(skipped), err)
	}
}

// TestFindingsGroupByExplanation: an explanation is written once, with every
// column it was seen on and the specs that failed there.
func TestFindingsGroupByExplanation(t *testing.T) {
	v := verdict{SpecContains: "S18 a slow consumer", Kind: "documented change", Upstream: "PR #1", Why: "the queue blocks the reflector"}
	a, b := column{ClientGo: "v0.31.14"}, column{ClientGo: "v0.33.13", Gates: gateSet{{Name: "AtomicFIFO"}}}
	var sb strings.Builder
	writeFindings(&sb, map[string][]finding{
		"S18 a slow consumer LIST+WATCH":     {{col: b, verdicts: []verdict{v}}, {col: a, verdicts: []verdict{v}}},
		"S18 a slow consumer streaming list": {{col: a, verdicts: []verdict{v}}},
	})
	doc := sb.String()
	if n := strings.Count(doc, "The queue blocks the reflector"); n != 1 {
		t.Errorf("the explanation is written %d times, want once:\n%s", n, doc)
	}
	want := "- client-go v0.31.14: LIST+WATCH; streaming list\n- client-go v0.33.13 / AtomicFIFO=false: LIST+WATCH\n"
	if !strings.Contains(doc, want) {
		t.Errorf("document lacks %q:\n%s", want, doc)
	}
}

// TestSuiteDefects: a suite defect explains a failure only on a column run
// at a commit its fix does not reach; recorded nowhere, it explains nothing;
// where the spec passed it is no "explained but not seen" claim.
func TestSuiteDefects(t *testing.T) {
	var defect known.Entry
	for _, e := range knownData().Entries {
		if e.Kind == suiteDefectKind {
			defect = e
			break
		}
	}
	spec := defect.Spec
	fixed := func(commit, fix string) bool { return commit == "after" }
	table := withSuiteDefects(nil, fixed)
	run := verdictRun{Date: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), Cores: 2}
	for _, tc := range []struct {
		commit        string
		wantExplained bool
	}{{"before", true}, {"after", false}, {"", false}} {
		col := column{ClientGo: "v0.31.14", Commit: tc.commit, Cells: map[string]cell{spec: {Outcome: "failed"}}}
		doc, problems := verdictDoc(run, []column{col}, table)
		if got := len(problems) == 0; got != tc.wantExplained {
			t.Errorf("commit %q: explained %v, want %v (problems %q)", tc.commit, got, tc.wantExplained, problems)
		}
		if tc.wantExplained && (!strings.Contains(doc, "**"+suiteDefectKind+"**. Upstream: none: this suite, fixed by its commit "+defect.FixedBySuite) ||
			!strings.Contains(doc, "Of the explained, 1 by a defect of this suite")) {
			t.Errorf("commit %q: the document does not name the suite defect:\n%s", tc.commit, doc)
		}
	}
	col := column{ClientGo: "v0.31.14", Commit: "before", Cells: map[string]cell{spec: {Outcome: "passed"}}}
	if doc, _ := verdictDoc(run, []column{col}, table); strings.Contains(doc, "Explained but not seen") {
		t.Errorf("a suite defect that did not show is listed as explained but not seen:\n%s", doc)
	}
}

// TestControlsAreNotClientGos: a negative control tests the suite against a
// broken client, so no client-go entry explains it failing or claims it
// passing, whether the cell records it or only its text says so.
func TestControlsAreNotClientGos(t *testing.T) {
	v := verdict{SpecContains: "S18 a consumer", Applies: func(string, gateSet) bool { return true }, Kind: "documented change"}
	run := verdictRun{Date: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), Cores: 2}
	for _, tc := range []struct {
		spec    string
		control bool
	}{{"S18 a consumer fails when the queue stays locked", false}, {"S18 a consumer fails, naming the queue", true}} {
		failed := column{ClientGo: "v0.34.13", Cells: map[string]cell{tc.spec: {Outcome: "failed", Control: tc.control}}}
		if _, problems := verdictDoc(run, []column{failed}, []verdict{v}); len(problems) != 1 {
			t.Errorf("%s failing: problems %q, want it unexplained", tc.spec, problems)
		}
		passed := column{ClientGo: "v0.34.13", Cells: map[string]cell{tc.spec: {Outcome: "passed", Control: tc.control}}}
		if doc, _ := verdictDoc(run, []column{passed}, []verdict{v}); strings.Contains(doc, "Explained but not seen") {
			t.Errorf("%s passing is listed as explained but not seen:\n%s", tc.spec, doc)
		}
	}
	// The spec itself is still explained.
	spec := "S18 a consumer keeps the watch read"
	col := column{ClientGo: "v0.34.13", Cells: map[string]cell{spec: {Outcome: "failed"}}}
	if _, problems := verdictDoc(run, []column{col}, []verdict{v}); len(problems) != 0 {
		t.Errorf("the spec is not explained: %q", problems)
	}
}

// TestServerEntriesByColumnServer: an entry of a kube-apiserver range
// explains failures on columns of those servers only, controls included
// (the server takes away what the broken client needs to break).
func TestServerEntriesByColumnServer(t *testing.T) {
	e := known.Entry{Spec: "S21 a stream", Kind: known.KindChange, Upstream: "u", Why: "w", KubeAPIServer: &known.Range{From: "v1.33.0", Before: "v1.34.0"}}
	v := verdict{SpecContains: e.Spec, Applies: func(string, gateSet) bool { return true }, Kind: e.Kind, Upstream: e.Upstream, entry: e}
	run := verdictRun{Date: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), Cores: 2}
	for _, tc := range []struct {
		kube      string
		explained bool
	}{{"v1.33.13", true}, {"v1.34.4", false}} {
		col := column{ClientGo: "v0.37.2", Kube: tc.kube, Cells: map[string]cell{
			"S21 a stream cut resumes":            {Outcome: "failed"},
			"S21 a stream cut fails when it lies": {Outcome: "failed", Control: true},
		}}
		_, problems := verdictDoc(run, []column{col}, []verdict{v})
		if want := map[bool]int{true: 0, false: 2}[tc.explained]; len(problems) != want {
			t.Errorf("on %s: problems %q, want %d", tc.kube, problems, want)
		}
	}
}
