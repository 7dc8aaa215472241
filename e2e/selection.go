package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/informer-conformance/informer-conformance/report"
)

// EnvAllowEmpty=true lets a suite whose selection is empty pass: for a run
// of several suites with one label filter (make e2e), which a filter may
// select from one suite only, judged as a whole by its caller (hack/runcheck
// fails it when no spec passed in any suite).
const EnvAllowEmpty = "INFORMER_CONFORMANCE_ALLOW_EMPTY"

// emptySelection fails a suite's run in which the selection (the label
// filter, focus, skip, the sem-ver filter) left no spec to run: a run that
// tests nothing would otherwise say "Test Suite Passed". RunSpecs checks it
// in a ReportAfterSuite, which Ginkgo runs on process 1 with every
// process's specs, those left out included, so the message names the
// labels the suite has. PreRunStats are the same on every process (each
// applies the same filters to the same specs). nil when some spec was
// selected, even if each then skipped (a missing capability says so in
// its own report).
func emptySelection(r types.Report) error {
	if r.PreRunStats.SpecsThatWillRun > 0 {
		return nil
	}
	if r.PreRunStats.TotalSpecs == 0 {
		return fmt.Errorf("informer-conformance: suite %q has no spec: the test package registers none (a downstream imports them: _ \"github.com/informer-conformance/informer-conformance/suites/conformance\")", r.SuiteDescription)
	}
	return fmt.Errorf("informer-conformance: %s selects none of the %d specs of suite %q, a run that would test nothing; labels that exist: %s",
		selection(r), r.PreRunStats.TotalSpecs, r.SuiteDescription, report.LabelList(suiteLabels(r)))
}

// selection names what selected the specs of r: its filters, focus and
// skip, each as given.
func selection(r types.Report) string {
	c := r.SuiteConfig
	var parts []string
	add := func(what string, values ...string) {
		var quoted []string
		for _, v := range values {
			if v != "" {
				quoted = append(quoted, strconv.Quote(v))
			}
		}
		if len(quoted) > 0 {
			parts = append(parts, what+" "+strings.Join(quoted, ", "))
		}
	}
	add("the label filter", c.LabelFilter)
	add("the sem-ver filter", c.SemVerFilter)
	add("the focus", c.FocusStrings...)
	add("the skip", c.SkipStrings...)
	add("the focus-file", c.FocusFiles...)
	add("the skip-file", c.SkipFiles...)
	if r.SuiteHasProgrammaticFocus {
		parts = append(parts, "the focused specs (FIt, FDescribe, Focus)")
	}
	switch len(parts) {
	case 0:
		return "the selection" // every spec pending, or skipped in the tree
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " with " + parts[len(parts)-1]
}

// suiteLabels are the labels of r's specs (It nodes: those left out by
// the selection too) and the suite's own, each once, sorted.
func suiteLabels(r types.Report) []string {
	labels := slices.Clone(r.SuiteLabels)
	for _, s := range r.SpecReports {
		if s.LeafNodeType == types.NodeTypeIt {
			labels = append(labels, s.Labels()...)
		}
	}
	slices.Sort(labels)
	return slices.Compact(labels)
}
