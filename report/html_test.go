package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func synced(ms float64) *float64 { return &ms }

// sampleSummary is a small run: a failed S1 with a fault window, two
// requests and a re-initialisation; a passed S12 with 20 informers; a
// skipped S2; and a spec whose name needs escaping.
func sampleSummary() SuiteSummary {
	restart := &Timeline{Origin: time.Unix(0, 0), EndMs: 9000,
		Faults: []TimelineFault{{Kind: "kube-apiserver down", Detail: "kube-apiserver-0, hard stop", StartMs: 1000, EndMs: 3500}},
		Informers: []InformerTimeline{{Informer: "pods", SyncedMs: synced(400),
			Requests: []TimelineRequest{
				{ID: 1, Kind: "list", StartMs: 100, EndMs: 300, Status: 200},
				{ID: 2, Kind: "watch", StartMs: 310, EndMs: 1000, Status: 200, Ended: "unexpected EOF"},
				{ID: 3, Kind: "list", StartMs: 3600, EndMs: 3700, Status: 200},
				{ID: 4, Kind: "watch", StartMs: 3710, EndMs: -1, Status: 200, Ended: "open"}},
			DialsMs:   []float64{90, 3590},
			Events:    []TimelineEvent{{AtMs: 350, Kind: "Add"}, {AtMs: 3750, Kind: "Delete (tombstone)"}},
			Reinits:   []TimelineReinit{{AtMs: 3600, Request: 3, Cause: "transport error"}},
			Converged: []float64{3800}}},
		Bounds: []Bound{{What: "informer pods converged", FromMs: 3500, AtMs: 3800, BoundSeconds: 60, Within: true}}}
	var storm []InformerTimeline
	for i := range 20 {
		storm = append(storm, InformerTimeline{Informer: "cm-" + string(rune('a'+i)),
			Requests: []TimelineRequest{{ID: 1, Kind: "list", StartMs: float64(100 * i), EndMs: float64(100*i + 500), Status: 200}},
			Reinits:  []TimelineReinit{{AtMs: float64(100 * i), Request: 1, Cause: "initial"}}})
	}
	return SuiteSummary{Suite: "conformance", ClientGo: "v0.36.6", KubeAPIServer: "v1.36.3",
		ClientGoGates: map[string]Gate{"WatchListClient": {Enabled: false, Default: true}, "InformerResourceVersion": {Enabled: true, Default: true}},
		Specs: []Spec{
			{Spec: "S2 stale HTTP/2 connection recovers", Outcome: "skipped"},
			{Spec: "S12 relist storm cost", Outcome: "passed", Timeline: &Timeline{EndMs: 3000, Informers: storm}},
			{Spec: "S1 kube-apiserver restart <b>hard</b>", Outcome: "failed", Failure: "informer pods saw every delete <script>", Timeline: restart,
				Informers:          []Numbers{{Informer: "pods", Reinitialisations: map[Cause]int{"transport error": 1}, Requests: map[string]int{"list": 2}, Events: map[string]int{"Add": 1}}},
				UpstreamLimitation: "something", Notes: map[string]string{"S1 outcome": "restarted"}},
		}}
}

func TestHTMLReport(t *testing.T) {
	page, err := htmlReport(sampleSummary(), "conformance (test)")
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	for _, bad := range []string{"<script", "<b>hard</b>", "http://", "https://"} {
		if strings.Contains(strings.ReplaceAll(s, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("the page contains %q: text unescaped, or something fetched over the network", bad)
		}
	}
	for _, want := range []string{
		"1 failed</span> (1 unexplained, 0 maybe the client's settings, 0 known for this client-go), 1 passed, 1 skipped",
		"changed: WatchListClient=false",
		`data-kind="kube-apiserver down"`, // the fault window
		`class="reinit" data-cause="transport error"`,
		`class="converged"`,
		"20 informers: requests open", // the storm, aggregated
		"upstream limitation",
		"informer pods converged",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// The failing spec comes first (before the scenarios), and the
	// scenarios in their order: S1, S2, S12.
	failing := strings.Index(s, `id="failing"`)
	first := strings.Index(s, `data-spec="S1 kube-apiserver restart`)
	if failing < 0 || first < failing || first > strings.Index(s, `id="specs"`) {
		t.Errorf("the failing spec is not listed first (failing %d, spec %d)", failing, first)
	}
	order := regexp.MustCompile(`<h3 id="(S\d+|other)">`).FindAllStringSubmatch(s, -1)
	var got []string
	for _, m := range order {
		got = append(got, m[1])
	}
	if strings.Join(got, " ") != "S1 S2 S12" {
		t.Errorf("scenario order %v, want S1 S2 S12", got)
	}
	if n := strings.Count(s, "<svg"); n != 3 {
		t.Errorf("%d timelines, want 3 (the failed spec's twice, among the failing and in its scenario; none for the skipped spec)", n)
	}
}

func TestSummaryMarkdown(t *testing.T) {
	sum := sampleSummary()
	md := summaryMarkdown("conformance", "gates", summarize(sum.Specs)) + markdown(sum.Specs)
	for _, want := range []string{"**1 passed, 1 failed, 1 skipped**", "| S1 | 0 | **1** | 0 | 1 |", "transport error 1 (1 specs)", "| S1 kube-apiserver restart"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(md, "| S1 kube-apiserver restart") > strings.Index(md, "| S12 relist storm") {
		t.Errorf("markdown rows are not by scenario:\n%s", md)
	}
}

// TestControlBoundsStayInTheirTimelines: a negative control misses its
// bound on purpose; listed among the run's bounds it showed as the top
// "MISSED" row of a passing run (as S11's and S2's controls did).
func TestControlBoundsStayInTheirTimelines(t *testing.T) {
	sum := sampleSummary()
	missed := &Timeline{EndMs: 12000, Bounds: []Bound{{What: "converged through the failover", FromMs: 0, AtMs: 10000, BoundSeconds: 10, Within: false}}}
	sum.Specs = append(sum.Specs, Spec{Spec: "S11 HA apiservers: failover fails when the client does not go through the failover address",
		Labels: []string{"ha", LabelNegativeControl}, Outcome: "passed", Timeline: missed})
	r := summarize(sum.Specs)
	for _, b := range r.Bounds {
		if strings.HasPrefix(b.Spec, "S11") {
			t.Errorf("the control's missed bound is among the run's: %+v", b)
		}
	}
	if len(r.Bounds) != 1 || r.Bounds[0].What != "informer pods converged" {
		t.Errorf("bounds %+v, want S1's one", r.Bounds)
	}
}

// TestLimitationsCountEverySpecThatRan: the summary's upstream limitations
// are the specs that ran and document one, failed ones too (named so), as
// the badges below them say; a skipped one documented nothing.
func TestLimitationsCountEverySpecThatRan(t *testing.T) {
	specs := []Spec{
		{Spec: "S7 a passed upstream limitation", Outcome: "passed"},
		{Spec: "S7 a failed upstream limitation", Outcome: "failed"},
		{Spec: "S7 a skipped upstream limitation", Outcome: "skipped"},
		{Spec: "S7 a note", Outcome: "passed", UpstreamLimitation: "documented"},
		{Spec: "S7 no limitation", Outcome: "failed"},
	}
	r := summarize(specs)
	want := []string{"S7 a passed upstream limitation", "S7 a failed upstream limitation (failed)", "S7 a note"}
	if !slices.Equal(r.Limitations, want) {
		t.Errorf("Limitations = %q, want %q", r.Limitations, want)
	}
	if len(r.Scenarios) != 1 || r.Scenarios[0].Lim != 3 {
		t.Errorf("per scenario = %+v, want one scenario with 3 limitations", r.Scenarios)
	}
}

// TestInterruptedSpecsAreNotFailures: a run stopped by --fail-fast lists the
// spec that failed as failing, first; the specs the stop interrupted in
// other processes are counted and listed apart, after it, not as failures.
func TestInterruptedSpecsAreNotFailures(t *testing.T) {
	sum := SuiteSummary{Suite: "conformance", Specs: []Spec{
		{Spec: "S1 kube-apiserver restart graceful", Outcome: "interrupted"},
		{Spec: "S2 stale HTTP/2 connection recovers", Outcome: "interrupted"},
		{Spec: "S13 GOAWAY across HA kube-apiservers", Outcome: "failed", Failure: "boom"},
		{Spec: "S3 watch timeout", Outcome: "passed"},
	}}
	r := summarize(sum.Specs)
	if r.Failed != 1 || r.Interrupted != 2 || r.Passed != 1 {
		t.Errorf("failed %d, interrupted %d, passed %d: want 1, 2, 1", r.Failed, r.Interrupted, r.Passed)
	}
	md := summaryMarkdown("conformance", "", r)
	if !strings.Contains(md, "**1 passed, 1 failed, 0 skipped** (failed: **1 unexplained**, 0 maybe the client's settings, 0 known for this client-go: see Failures below), 2 interrupted by another spec's failure") {
		t.Errorf("summary does not set the interrupted specs apart:\n%s", md)
	}
	page, err := htmlReport(sum, "t")
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	failing, interrupted := strings.Index(html, `id="failing"`), strings.Index(html, `id="interrupted"`)
	if failing < 0 || interrupted < failing {
		t.Fatalf("want the failing specs, then the interrupted ones: failing at %d, interrupted at %d", failing, interrupted)
	}
	failingSection := html[failing:interrupted]
	if !strings.Contains(failingSection, "S13 GOAWAY") || strings.Contains(failingSection, "S1 kube-apiserver") {
		t.Errorf("the failing section lists other than the failed spec:\n%s", failingSection)
	}
}

// TestTitleNamesTheClientGoReplacement: a report of a module that replaces
// client-go names the replacement, and an unknown version as such.
func TestTitleNamesTheClientGoReplacement(t *testing.T) {
	for _, tc := range []struct {
		sum  SuiteSummary
		want string
	}{
		{SuiteSummary{Suite: "c", ClientGo: "v0.36.6", KubeAPIServer: "v1.36.3"}, "c (client-go v0.36.6, kube-apiserver v1.36.3)"},
		{SuiteSummary{Suite: "c", ClientGo: "v0.37.2", KubeAPIServer: "v1.37.2", Etcd: "v3.7.3"}, "c (client-go v0.37.2, kube-apiserver v1.37.2, etcd v3.7.3)"},
		{SuiteSummary{Suite: "c", ClientGo: "v0.36.6", ClientGoReplacement: "github.com/acme/client-go v0.36.6-acme.1", KubeAPIServer: "v1.36.3"},
			"c (client-go v0.36.6 replaced by github.com/acme/client-go v0.36.6-acme.1, kube-apiserver v1.36.3)"},
		{SuiteSummary{Suite: "c", ClientGo: "v0.36.6", ClientGoReplacement: "../client-go (a local directory)"}, "c (client-go v0.36.6 replaced by ../client-go (a local directory), kube-apiserver version unknown)"},
		{SuiteSummary{Suite: "c", ClientGoReplacement: "/src/client-go (a local directory)", ClientGoUnknown: "go.mod file not found"}, "c (client-go version unknown, replaced by /src/client-go (a local directory), kube-apiserver version unknown)"},
		{SuiteSummary{Suite: "c", ClientGo: "v0.36.6", ClientGoUnknown: "whether k8s.io/client-go is replaced: ..."}, "c (client-go v0.36.6, replacement unknown, kube-apiserver version unknown)"},
	} {
		if got := Title(tc.sum); got != tc.want {
			t.Errorf("Title = %q, want %q", got, tc.want)
		}
	}
}

// TestReportSaysWhyClientGoIsUnknown: what of client-go a run could not
// know, and why, is in the JSON (clientGoUnknown), under the title of the
// markdown reports and on the HTML page; a run that knew everything has no
// such line.
func TestReportSaysWhyClientGoIsUnknown(t *testing.T) {
	why := "the k8s.io/client-go version its replacement stands for: go.mod file not found"
	for _, unknown := range []string{why, ""} {
		dir := t.TempDir()
		f := FilesIn(dir, "c")
		sum := SuiteSummary{Suite: "c", ClientGoReplacement: "/src/client-go (a local directory)", ClientGoUnknown: unknown, KubeAPIServer: "v1.36.3"}
		if err := Write(f, sum); err != nil {
			t.Fatal(err)
		}
		for _, file := range []string{f.JSON, f.Summary, f.Markdown, f.HTML} {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			has := strings.Contains(string(data), why)
			if has != (unknown != "") {
				t.Errorf("%s (unknown %q): says why %t", filepath.Base(file), unknown, has)
			}
		}
		data, _ := os.ReadFile(f.JSON)
		var back SuiteSummary
		if err := json.Unmarshal(data, &back); err != nil || back.ClientGoUnknown != unknown || back.ClientGo != "" || back.ClientGoReplacement != sum.ClientGoReplacement {
			t.Errorf("JSON: %+v, %v", back, err)
		}
	}
}

// TestBoundFailedIsNotMissed: a wait that ended inside its bound without
// what it waited for (S20's requests failed at 4 s of 10) reads as that
// failure, not as a missed bound.
func TestBoundFailedIsNotMissed(t *testing.T) {
	sum := sampleSummary()
	failed := &Timeline{EndMs: 12000, Bounds: []Bound{{What: "the clientset's requests succeeded", FromMs: 0, AtMs: 4050, BoundSeconds: 10, Failed: "2 of 2 requests failed (GET: EOF)"}}}
	sum.Specs = append(sum.Specs, Spec{Spec: "S20 requests", Outcome: "failed", Timeline: failed})
	md := summaryMarkdown("t", "h", summarize(sum.Specs))
	if !strings.Contains(md, "| S20 requests | the clientset's requests succeeded | 4.05 s | 10 s | failed: 2 of 2 requests failed (GET: EOF) |") {
		t.Errorf("summary:\n%s", md)
	}
	if strings.Contains(md, "MISSED") {
		t.Errorf("a failed wait reads as a missed bound:\n%s", md)
	}
}
