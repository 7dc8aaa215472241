package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/informer-conformance/informer-conformance/e2e/probe"
	"github.com/informer-conformance/informer-conformance/report"
	"github.com/informer-conformance/informer-conformance/report/timing"
)

// ReportFiles names a suite's report files in ArtifactsRoot:
// informer-report-<suite>.json and .md (several suites share one run).
// The HTML report and the summary are HTMLReportFile and SummaryFile.
func ReportFiles(suite string) (jsonPath, markdownPath string) {
	base := reportBase(suite)
	return base + ".json", base + ".md"
}

// HTMLReportFile names a suite's HTML report in ArtifactsRoot:
// informer-report-<suite>.html, one self-contained page (no script, no
// network) with the summary and a timeline per spec.
func HTMLReportFile(suite string) string { return reportBase(suite) + ".html" }

// SummaryFile names a suite's summary in ArtifactsRoot:
// informer-report-<suite>.summary.md, the top of the markdown report alone
// (the GitHub workflows append it to the job summary).
func SummaryFile(suite string) string { return reportBase(suite) + ".summary.md" }

func reportBase(suite string) string {
	f := report.FilesIn(ArtifactsRoot(), suite)
	return strings.TrimSuffix(f.JSON, ".json")
}

// WriteReports writes the suite's informer report into ArtifactsRoot, next
// to Ginkgo's JUnit and JSON reports: the JSON and the markdown table
// (ReportFiles), the summary (SummaryFile) and the HTML page
// (HTMLReportFile). Suites call it from ReportAfterSuite. A dry run, which
// runs nothing, writes none.
func WriteReports(r ginkgo.Report) error {
	if r.SuiteConfig.DryRun {
		return nil
	}
	var specs []SpecSummary
	for _, s := range r.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt {
			continue
		}
		sum := SpecSummary{
			Spec:    strings.Join(append(slices.Clone(s.ContainerHierarchyTexts), s.LeafNodeText), " "),
			Labels:  s.Labels(),
			Outcome: s.State.String(),
			Seconds: s.RunTime.Seconds(),
		}
		if s.Failed() {
			sum.Failure = s.Failure.Message
		}
		for _, e := range s.ReportEntries {
			addEntry(&sum, e.Name, e.Value.GetRawValue(), e.Value.AsJSON, e.StringRepresentation())
		}
		specs = append(specs, sum)
	}
	return writeSummary(SuiteSummary{Suite: r.SuiteDescription, ClientGo: ClientGoVersion(), KubeAPIServer: KubeAPIServerVersion(), Specs: specs})
}

// addEntry adds a report entry to the spec's summary: a probe's numbers
// (raw in-process; from parallel processes only their JSON), or a note.
func addEntry(sum *SpecSummary, name string, raw any, asJSON, asString string) {
	if name == timing.Entry {
		p, ok := raw.(timing.Phase)
		if !ok {
			p, ok = timing.Decode(asJSON)
		}
		if ok {
			if sum.Time == nil {
				sum.Time = map[string]float64{}
			}
			sum.Time[p.Name] += p.Seconds
		}
		return
	}
	if name == TimelineEntry {
		if t, ok := raw.(Timeline); ok {
			sum.Timeline = &t
			return
		}
		var t Timeline
		if err := json.Unmarshal([]byte(asJSON), &t); err == nil {
			sum.Timeline = &t
		}
		return
	}
	if !strings.HasPrefix(name, ReportEntryPrefix) {
		if asString != "" && name != "process logs" && name != "probe record" {
			if sum.Notes == nil {
				sum.Notes = map[string]string{}
			}
			sum.Notes[name] = asString
		}
		return
	}
	if n, ok := raw.(Numbers); ok {
		sum.Informers = append(sum.Informers, n)
		return
	}
	var n Numbers
	if err := json.Unmarshal([]byte(asJSON), &n); err == nil {
		sum.Informers = append(sum.Informers, n)
	}
}

// writeSummary writes the report files of sum: ReportFiles, SummaryFile
// and HTMLReportFile.
func writeSummary(sum SuiteSummary) error {
	if sum.ClientGoGates == nil {
		gates, err := ClientGoGates()
		if err != nil {
			return err
		}
		sum.ClientGoGates = gates
	}
	if sum.WatchListConsistencyDetector == "" {
		sum.WatchListConsistencyDetector = probe.DetectorState()
	}
	if err := os.MkdirAll(ArtifactsRoot(), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	jsonPath, mdPath := ReportFiles(sum.Suite)
	if err := os.WriteFile(jsonPath, data, 0o644); err != nil {
		return err
	}
	title := fmt.Sprintf("%s (client-go %s, kube-apiserver %s)", sum.Suite, sum.ClientGo, sum.KubeAPIServer)
	header := gatesLine(sum.ClientGoGates) + "\n\n" + DetectorNote + ": " + sum.WatchListConsistencyDetector
	top := summaryMarkdown(title, header, summarize(sum.Specs))
	if err := os.WriteFile(SummaryFile(sum.Suite), []byte(top), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(mdPath, []byte(top+"\n"+markdown(sum.Specs)), 0o644); err != nil {
		return err
	}
	page, err := htmlReport(sum, title)
	if err != nil {
		return fmt.Errorf("HTML report: %w", err)
	}
	return os.WriteFile(HTMLReportFile(sum.Suite), page, 0o644)
}

// markdown is the table of the markdown report: a row per spec and
// informer, by scenario (byScenario).
func markdown(specs []SpecSummary) string {
	var b strings.Builder
	b.WriteString("## Specs by scenario\n\n")
	b.WriteString("| spec | outcome | informer | re-initialisations by cause | dials | requests | events | recovery | notes |\n")
	b.WriteString("|---|---|---|---|---:|---|---|---:|---|\n")
	for _, s := range byScenario(specs) {
		notes := notesCell(s.Notes)
		if len(s.Informers) == 0 {
			fmt.Fprintf(&b, "| %s | %s | | | | | | | %s |\n", s.Spec, s.Outcome, notes)
			continue
		}
		for _, n := range s.Informers {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s | %s | %.2f s | %s |\n",
				s.Spec, s.Outcome, n.Informer, Counts(n.Reinitialisations), n.Dials, Counts(n.Requests), Counts(n.Events), n.RecoverySeconds, notes)
		}
	}
	return b.String()
}

func notesCell(notes map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(notes)) {
		parts = append(parts, k+": "+strings.ReplaceAll(notes[k], "|", "\\|"))
	}
	return strings.ReplaceAll(strings.Join(parts, "; "), "\n", " ")
}
