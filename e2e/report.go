package e2e

import (
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
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
	var specs []report.Spec
	for _, s := range r.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt {
			continue
		}
		sum := report.Spec{
			Spec:    strings.Join(append(slices.Clone(s.ContainerHierarchyTexts), s.LeafNodeText), " "),
			Labels:  s.Labels(),
			Outcome: s.State.String(),
			Seconds: s.RunTime.Seconds(),
		}
		switch {
		case s.Failed():
			sum.Failure = s.Failure.Message
		case s.State == types.SpecStateSkipped:
			sum.Skipped = s.Failure.Message
		}
		for _, e := range s.ReportEntries {
			addEntry(&sum, e.Name, e.Value.GetRawValue(), e.Value.AsJSON, e.StringRepresentation())
		}
		specs = append(specs, sum)
	}
	cg := ClientGoInUse()
	settings := ClientSettingsInForce()
	return writeSummary(SuiteSummary{Suite: r.SuiteDescription, ClientGo: cg.Version, ClientGoReplacement: cg.Replacement, ClientGoUnknown: cg.Unknown, KubeAPIServer: KubeAPIServerVersion(), Etcd: EtcdVersion(), ClientSettings: &settings, Specs: specs})
}

// addEntry adds a report entry to the spec's record: what its Env filled
// (report.SpecEntry: raw in-process; from parallel processes only its
// JSON), or a note in words.
func addEntry(sum *report.Spec, name string, raw any, asJSON, asString string) {
	if name == report.SpecEntry {
		if d, ok := report.DecodeSpec(raw, asJSON); ok {
			sum.Merge(d)
		}
		return
	}
	if asString != "" && name != "process logs" && name != "probe record" {
		if sum.Notes == nil {
			sum.Notes = map[string]string{}
		}
		sum.Notes[name] = asString
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
