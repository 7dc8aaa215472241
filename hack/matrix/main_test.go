package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/informer-conformance/informer-conformance/report"
)

func TestMarkdownTableAndDifferences(t *testing.T) {
	cols := []column{
		{ClientGo: "v0.32.13", Kube: "v1.36.3", Cells: map[string]cell{
			"S3 mid-frame": {Outcome: "failed", Reinits: 1, ByCause: map[string]int{"500 InternalError": 1}, Failure: "re-initialisations by cause"},
			"S8 resync":    {Outcome: "passed"},
			"S1 restart":   {Outcome: "skipped"},
			"S9 sync":      {Outcome: "passed", Reinits: 1, ByCause: map[string]int{"transport error": 1}},
		}},
		{ClientGo: "v0.36.6", Kube: "v1.36.3", Cells: map[string]cell{
			"S3 mid-frame": {Outcome: "passed", ByCause: map[string]int{}},
			"S8 resync":    {Outcome: "passed"},
			"S1 restart":   {Outcome: "skipped"},
			"S9 sync":      {Outcome: "passed", Reinits: 2, ByCause: map[string]int{"transport error": 2}},
		}},
		{ClientGo: "v0.99.0", Error: "no report"},
	}
	md := markdown(cols)
	for _, want := range []string{
		"| S3 mid-frame | **FAIL** r=1 | pass r=0 | did not run |",
		"| S8 resync | pass r=0 | pass r=0 | did not run |",
		"- client-go v0.99.0 did not run: no report",
		"## Outcomes that differ between versions\n\n- S3 mid-frame: v0.32.13: failed, re-initialisations 500 InternalError: 1 (re-initialisations by cause); v0.36.6: passed, re-initialisations none;",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "S1 restart") {
		t.Errorf("a spec skipped in every column (filtered out) has a row:\n%s", md)
	}
	if !strings.Contains(md, "## Same outcome, other re-initialisations") || !strings.Contains(md, "- S9 sync: v0.32.13: passed, re-initialisations transport error: 1;") {
		t.Errorf("S9's other count of re-initialisations is not listed apart:\n%s", md)
	}
	if strings.Contains(md, "- S8 resync:") {
		t.Errorf("S8 is the same everywhere, yet listed as a difference:\n%s", md)
	}
}

func TestDifferencesNameTheKubeAPIServerWhenItVaries(t *testing.T) {
	cols := []column{
		{ClientGo: "v0.36.6", Kube: "v1.35.4", Cells: map[string]cell{"S1 restart": {Outcome: "passed", Reinits: 1, ByCause: map[string]int{"410 Gone": 1}}}},
		{ClientGo: "v0.36.6", Kube: "v1.36.3", Cells: map[string]cell{"S1 restart": {Outcome: "passed", Reinits: 1, ByCause: map[string]int{"other status": 1}}}},
	}
	md := markdown(cols)
	want := "- S1 restart: v0.36.6 / kube-apiserver v1.35.4: passed, re-initialisations 410 Gone: 1; v0.36.6 / kube-apiserver v1.36.3: passed, re-initialisations other status: 1;"
	if !strings.Contains(md, want) {
		t.Errorf("differences lack %q:\n%s", want, md)
	}
}

func TestGateSets(t *testing.T) {
	sets, err := parseGateSets("default; AtomicFIFO=false, InOrderInformersBatchProcess=false ;UnlockWhileProcessingFIFO=false")
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 3 || sets[0] != nil || sets[1].String() != "AtomicFIFO=false,InOrderInformersBatchProcess=false" {
		t.Fatalf("sets %v", sets)
	}
	if got := strings.Join(sets[2].env(), " "); got != "KUBE_FEATURE_UnlockWhileProcessingFIFO=false" {
		t.Errorf("env %q", got)
	}
	for _, bad := range []string{"AtomicFIFO", "AtomicFIFO=off", "atomicFIFO=false", "AtomicFIFO=false,AtomicFIFO=true"} {
		if _, err := parseGateSets(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	reported := map[string]report.Gate{"AtomicFIFO": {Enabled: false, Default: true}, "InOrderInformersBatchProcess": {Enabled: true, Default: true}}
	if err := sets[1].check(reported); err == nil || !strings.Contains(err.Error(), "stayed true") {
		t.Errorf("a gate that kept its default: %v", err)
	}
	if err := sets[2].check(reported); err == nil || !strings.Contains(err.Error(), "has no feature gate UnlockWhileProcessingFIFO") {
		t.Errorf("a gate the client-go lacks: %v", err)
	}
	cols := []column{
		{ClientGo: "v0.37.2", Cells: map[string]cell{"S1": {Outcome: "passed"}}},
		{ClientGo: "v0.37.2", Gates: sets[1], Cells: map[string]cell{"S1": {Outcome: "failed", Failure: "boom"}}},
	}
	md := markdown(cols)
	for _, want := range []string{"| client-go v0.37.2 | client-go v0.37.2 / AtomicFIFO=false,InOrderInformersBatchProcess=false |",
		"v0.37.2 / default: passed", "v0.37.2 / AtomicFIFO=false,InOrderInformersBatchProcess=false: failed"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestHTMLMatrix(t *testing.T) {
	cols := []column{
		{ClientGo: "v0.32.13", Seconds: 301, Cells: map[string]cell{
			"S3 mid-frame <b>": {Outcome: "failed", Reinits: 1, ByCause: map[string]int{"500 InternalError": 1}, Failure: `expected <script>alert(1)</script>`},
			"S8 resync":        {Outcome: "passed"},
			"S1 restart":       {Outcome: "skipped"},
		}},
		{ClientGo: "v0.36.6", Seconds: 280, Cells: map[string]cell{
			"S3 mid-frame <b>": {Outcome: "passed"},
			"S8 resync":        {Outcome: "passed"},
			"S1 restart":       {Outcome: "skipped"},
		}},
		{ClientGo: "v0.99.0", Error: "no report"},
	}
	page, err := htmlMatrix(cols)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, want := range []string{
		"<td class=\"cell fail\" title=\"v0.32.13: re-initialisations 500 InternalError: 1\nexpected &lt;script&gt;alert(1)&lt;/script&gt;\">FAIL r=1</td>",
		`<td class="cell pass" title="v0.36.6: re-initialisations none">pass r=0</td>`,
		`<td class="cell did-not-run" title="">did not run</td>`,
		`<tr class="differs"><td class="spec">S3 mid-frame &lt;b&gt;</td>`,
		`<tr><td class="spec">S8 resync</td>`,
		`<td colspan="4" class="bad">did not run: no report</td>`,
		`<td>client-go v0.32.13</td><td>1</td><td class="bad">1</td><td>1</td><td>301</td>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(html, "<script") || strings.Contains(html, "mid-frame <b>") {
		t.Errorf("a spec name or failure is not escaped")
	}
	if strings.Contains(html, "S1 restart") {
		t.Errorf("a spec skipped in every column has a row")
	}
	diff, grid := strings.Index(html, "<h2>"+outcomeDiffersTitle), strings.Index(html, `<table class="grid">`)
	if diff < 0 || grid < 0 || diff > grid {
		t.Errorf("the differences are not listed before the grid (at %d, grid at %d)", diff, grid)
	}
}

// TestReadsReportsWithoutTheHarness: the matrix reads the suite's reports
// through package report, not the Ginkgo harness (e2e), which it used to
// import for three types and re-derived file names.
func TestReadsReportsWithoutTheHarness(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/informer-conformance/informer-conformance/e2e" || strings.HasPrefix(dep, "github.com/onsi/ginkgo") {
			t.Errorf("hack/matrix depends on %s", dep)
		}
	}
}

func TestCheckTested(t *testing.T) {
	skipped := map[string]cell{"S1": {Outcome: "skipped"}}
	for _, tc := range []struct {
		name string
		cols []column
		fail bool
	}{
		{"a spec ran", []column{{ClientGo: "v0.31.14", Cells: skipped}, {ClientGo: "v0.36.6", Cells: map[string]cell{"S1": {Outcome: "failed"}}}}, false},
		{"nothing selected", []column{{ClientGo: "v0.31.14", Passed: true, Cells: map[string]cell{}}}, true},
		{"every spec skipped", []column{{ClientGo: "v0.31.14", Passed: true, Cells: skipped}}, true},
		{"no column ran", []column{{ClientGo: "v0.31.14", Error: "does not compile"}, {ClientGo: "v0.37.2", NotApplicable: "locked"}}, false},
	} {
		if err := checkTested(tc.cols); (err != nil) != tc.fail {
			t.Errorf("%s: checkTested = %v, want an error: %v", tc.name, err, tc.fail)
		}
	}
}

func TestNotServed(t *testing.T) {
	out := "go: github.com/informer-conformance/informer-conformance/cluster/existing imports\n\tk8s.io/kube-openapi/pkg/util/proto: k8s.io/kube-openapi@v0.0.0-20260929181212-2cfbdf149b9a: reading https://proxy.golang.org/k8s.io/kube-openapi/@v/v0.0.0-20260929181212-2cfbdf149b9a.zip: 403 Forbidden\n\tserver response: This module version is not available."
	m := notServed.FindStringSubmatch(out)
	if m == nil || m[1] != "k8s.io/kube-openapi" || m[2] != "v0.0.0-20260929181212-2cfbdf149b9a" {
		t.Errorf("notServed = %q", m)
	}
}

// TestHasInformerMetrics: the suite's informers' metrics provider is built
// for the client-go versions with the hook (v0.36+, pre-releases of later
// minors included) and the workspace's pin, not before.
func TestHasInformerMetrics(t *testing.T) {
	for v, want := range map[string]bool{"": true, "v0.36.0": true, "v0.36.6": true, "v0.38.0-alpha.2": true, "v0.35.10": false, "v0.31.14": false, "next": false} {
		if got := hasInformerMetrics(v); got != want {
			t.Errorf("hasInformerMetrics(%q) = %t, want %t", v, got, want)
		}
	}
}
