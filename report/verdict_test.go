package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/informer-conformance/informer-conformance/report/known"
)

// A downstream's report on client-go v0.33.0: each failure is known (with
// its upstream change) or unexplained (with why), in the JSON, the summary
// and the HTML page; a negative control is never client-go's.
func TestWriteClassifiesFailures(t *testing.T) {
	const (
		s18     = "S18 a consumer slower than the events the watch keeps being read, stays open, and nothing is lost or relisted LIST+WATCH"
		s13     = "S13 GOAWAY across HA kube-apiservers informers move with their connections LIST+WATCH"
		control = "S18 a consumer slower than the events fails when the queue stays locked while the consumer works"
	)
	sum := SuiteSummary{Suite: "conformance", ClientGo: "v0.33.0", KubeAPIServer: "v1.37.2",
		ClientGoGates: map[string]Gate{"InOrderInformers": {Enabled: true, Default: true}},
		Specs: []Spec{
			{Spec: s18, Outcome: "failed", Failure: "the watch was not read\nmore"},
			{Spec: s13, Outcome: "failed", Failure: "relisted"},
			{Spec: control, Outcome: "failed", Labels: []string{LabelNegativeControl}, Failure: "not caught"},
			{Spec: "S1 restart", Outcome: "passed"},
		}}
	dir := t.TempDir()
	f := FilesIn(dir, "conformance")
	if err := Write(f, sum); err != nil {
		t.Fatal(err)
	}
	read, err := ReadSummary(f.JSON)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]bool{}
	for _, s := range read.Specs {
		if s.Verdict != nil {
			verdicts[s.Spec] = s.Verdict.Known
		}
	}
	if len(verdicts) != 3 || !verdicts[s18] || verdicts[s13] || verdicts[control] {
		t.Errorf("verdicts (known by spec) %v: want S18 known, S13 and the control unexplained, the passed spec none", verdicts)
	}
	md, err := os.ReadFile(f.Summary)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"(failed: **2 unexplained**, 0 maybe the client's settings, 1 known for this client-go",
		"## Failures: 2 unexplained, 0 maybe the client's settings, 1 known",
		"- **unexplained**: " + s13 + ": relisted (no known behaviour of client-go v0.33.0 explains it",
		"- **unexplained**: " + control + ": not caught (a negative control",
		"- " + s18 + ": known for client-go v0.33.0: documented change: kubernetes PR #136008",
		"changed in client-go v0.36.0 (gates UnlockWhileProcessingFIFO, AtomicFIFO)",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, filepath.Base(f.HTML)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<span class="badge known">known for client-go v0.33.0</span>`, `<span class="badge unexplained">unexplained</span>`, `<a href="https://github.com/kubernetes/kubernetes/pull/136008">`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("HTML page lacks %q", want)
		}
	}
}

// The gates of the run decide: S18 on v0.37.2 is known only with the
// queue's lock switched back on.
func TestClassifyReadsTheRunsGates(t *testing.T) {
	const s18 = "S18 a consumer slower than the events the watch keeps being read LIST+WATCH"
	for _, c := range []struct {
		gates map[string]Gate
		known bool
	}{
		{nil, false},
		{map[string]Gate{"UnlockWhileProcessingFIFO": {Enabled: false, Default: true}}, true},
		{map[string]Gate{"UnlockWhileProcessingFIFO": {Enabled: true, Default: true}}, false},
	} {
		sum := SuiteSummary{ClientGo: "v0.37.2", ClientGoGates: c.gates, Specs: []Spec{{Spec: s18, Outcome: "failed"}}}
		if err := Classify(&sum); err != nil {
			t.Fatal(err)
		}
		if got := sum.Specs[0].Verdict.Known; got != c.known {
			t.Errorf("gates %v: known %t, want %t (%s)", c.gates, got, c.known, sum.Specs[0].Verdict.Line())
		}
	}
}

// An unexplained failure whose informers the client-side rate limiter held
// a second or more names the setting and the hold, apart from client-go's
// behaviour; a known failure stays known; a short hold changes nothing.
func TestClassifyNamesTheClientSettings(t *testing.T) {
	const s13 = "S13 GOAWAY across HA kube-apiservers informers move LIST+WATCH"
	const s18 = "S18 a consumer slower than the events the watch keeps being read LIST+WATCH"
	held := &LimiterWaits{Requests: 40, Waited: 12, LongestSeconds: 1.9, TotalSeconds: 6.3}
	sum := SuiteSummary{ClientGo: "v0.33.0", ClientSettings: &ClientSettings{Hooked: true, UserAgent: "controller/v1", FactoryOptions: 1},
		Specs: []Spec{
			{Spec: s13, Outcome: "failed", RateLimiter: held},
			{Spec: s18, Outcome: "failed", RateLimiter: held},
			{Spec: s13 + " streaming list", Outcome: "failed", RateLimiter: &LimiterWaits{Requests: 40, Waited: 1, LongestSeconds: 0.2, TotalSeconds: 0.2}},
		}}
	if err := Classify(&sum); err != nil {
		t.Fatal(err)
	}
	want := "the client's settings may cause it: client-go's client-side rate limiter (QPS 5, burst 10 (client-go's defaults: QPS and Burst left 0), as the downstream's hooks left it) held the informers' requests: 12 of 40 requests held 50 ms or more, 6.3 s in all, the longest 1.9 s (no known behaviour of client-go v0.33.0"
	if got := sum.Specs[0].Verdict.Line(); !strings.HasPrefix(got, want) {
		t.Errorf("S13 held:\n%s\nwant\n%s", got, want)
	}
	if v := sum.Specs[1].Verdict; !v.Known || v.Settings != "" {
		t.Errorf("S18 known: %s", v.Line())
	}
	if v := sum.Specs[2].Verdict; v.Settings != "" || !strings.HasPrefix(v.Line(), "unexplained: ") {
		t.Errorf("S13 barely held: %s", v.Line())
	}
	if line := sum.ClientSettings.Line(); line != "client settings (set by the downstream's hooks): QPS 5, burst 10 (client-go's defaults: QPS and Burst left 0); user agent controller/v1; 1 informer factory option(s) (a transform, a resync, list tweaks)" {
		t.Errorf("settings line %q", line)
	}
}

func TestFailuresListTheSettingsApart(t *testing.T) {
	specs := []Spec{{Spec: "S13 x", Outcome: "failed", Failure: "timed out\nmore", Verdict: &known.Verdict{Why: "w", Settings: "the limiter held 86 s"}}}
	md := failuresMarkdown(specs)
	if !strings.Contains(md, "## Failures: 0 unexplained, 1 maybe the client's settings, 0 known") || !strings.Contains(md, "- **the client's settings?** S13 x: timed out (the limiter held 86 s)") {
		t.Errorf("%s", md)
	}
}
