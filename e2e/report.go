package e2e

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
	"github.com/informer-conformance/informer-conformance/report/timing"
)

// WriteReports writes the suite's informer report into
// report.ArtifactsRoot, next to Ginkgo's JUnit and JSON reports:
// report.FilesIn(report.ArtifactsRoot(), suite), the JSON, the markdown
// table, the summary and the HTML page. Suites call it from
// ReportAfterSuite. A dry run, which runs nothing, writes none.
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
	return writeSummary(SuiteSummary{Suite: r.SuiteDescription, ClientGo: ClientGoVersion(), ClientGoReplacement: ClientGoReplacement(), KubeAPIServer: KubeAPIServerVersion(), Specs: specs})
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

// writeSummary writes the report files of sum in report.ArtifactsRoot
// (report.Write), with the client-go gates and the consistency detector's
// state of this process where sum lacks them.
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
	return report.Write(reportFiles(sum.Suite), sum)
}

// reportFiles are the suite's report files in report.ArtifactsRoot.
func reportFiles(suite string) report.Files { return report.FilesIn(report.ArtifactsRoot(), suite) }
