package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
	"github.com/informer-conformance/informer-conformance/report/timing"
)

func TestWriteReports(t *testing.T) {
	dir := t.TempDir()
	setenv(t, "INFORMER_CONFORMANCE_ARTIFACTS", dir)
	n := Numbers{Informer: "pods", Reinitialisations: map[probe.Cause]int{probe.CauseGone: 2}, Dials: 3,
		Requests: map[string]int{"watch": 4}, Events: map[string]int{"Add": 1}, RecoverySeconds: 1.5}
	d := report.Spec{Informers: []Numbers{n}, Time: map[string]float64{timing.ClusterStart: 2}, Timeline: &Timeline{EndMs: 7}, ClusterFrom: "started"}
	raw, _ := json.Marshal(d)
	r := types.Report{SuiteDescription: "s", SpecReports: types.SpecReports{
		{LeafNodeType: types.NodeTypeIt, LeafNodeText: "in process", State: types.SpecStatePassed,
			ReportEntries: types.ReportEntries{{Name: report.SpecEntry, Value: types.WrapEntryValue(d)},
				{Name: "S7 outcome", Value: types.WrapEntryValue("Update with a UID change")},
				{Name: "process logs", Value: types.WrapEntryValue("/some/dir")}}},
		{LeafNodeType: types.NodeTypeIt, LeafNodeText: "from another process", State: types.SpecStateFailed,
			Failure:       types.Failure{Message: "boom"},
			ReportEntries: types.ReportEntries{{Name: report.SpecEntry, Value: types.ReportEntryValue{AsJSON: string(raw)}}}},
		{LeafNodeType: types.NodeTypeBeforeSuite},
	}}
	if err := WriteReports(r); err != nil {
		t.Fatal(err)
	}
	f := reportFiles("s")
	jsonPath, mdPath := f.JSON, f.Markdown
	if filepath.Dir(mdPath) != dir || filepath.Base(mdPath) != "informer-report-s.md" {
		t.Errorf("report path %s, want %s/informer-report-s.md", mdPath, dir)
	}
	md, err := os.ReadFile(mdPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| in process | passed | pods | 410 Gone: 2 | 3 | watch: 4 | Add: 1 | 1.50 s | S7 outcome: Update with a UID change |",
		"| from another process | failed | pods | 410 Gone: 2 |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	var got struct{ Specs []report.Spec }
	data, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(data, &got); err != nil || len(got.Specs) != 2 || got.Specs[1].Failure != "boom" {
		t.Fatalf("json report %s: %v", data, err)
	}
	for _, s := range got.Specs {
		// The one entry carries it all, in process and from another one.
		if s.Time[timing.ClusterStart] != 2 || s.Timeline == nil || s.Timeline.EndMs != 7 || len(s.Informers) != 1 {
			t.Errorf("spec %q: time %v, timeline %v, informers %v: want the report.SpecEntry's", s.Spec, s.Time, s.Timeline, s.Informers)
		}
		if _, ok := s.Notes[report.SpecEntry]; ok {
			t.Errorf("spec %q: the data entry is not a note: %v", s.Spec, s.Notes)
		}
	}
}

// A note's text names a struct's fields, as Ginkgo's report entry does (the
// console and the informer report say the same), and is a Stringer's String.
func TestNoteText(t *testing.T) {
	type numbers struct{ Dials, Relists int }
	if got := noteText(numbers{Dials: 1, Relists: 2}); got != "{Dials:1 Relists:2}" {
		t.Errorf("struct: %q", got)
	}
	if got := noteText(types.NodeTypeIt); got != types.NodeTypeIt.String() {
		t.Errorf("Stringer: %q", got)
	}
	if got := noteText("plain"); got != "plain" {
		t.Errorf("string: %q", got)
	}
}
