package e2e

import (
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/informer-conformance/informer-conformance/report"
	"github.com/informer-conformance/informer-conformance/report/known"
)

// VerdictPrefix starts the line a failure message ends with: what the
// failure is (report/known), so that the JUnit message a CI shows says it
// too, not only the informer report.
const VerdictPrefix = "informer-conformance verdict: "

// failWithVerdict is the Ginkgo suites' Gomega fail handler (RunSpecs):
// ginkgo.Fail with the failure's verdict appended.
func failWithVerdict(message string, callerSkip ...int) {
	skip := 1
	if len(callerSkip) > 0 {
		skip += callerSkip[0]
	}
	ginkgo.Fail(withVerdict(message, ginkgo.CurrentSpecReport()), skip)
}

// withVerdict is message with a last line saying what the failure of spec
// is: known behaviour of the client-go in use (with the upstream change
// and the release that changed it) or unexplained, and why.
func withVerdict(message string, spec ginkgo.SpecReport) string {
	if spec.LeafNodeType != types.NodeTypeIt || strings.Contains(message, VerdictPrefix) {
		return message
	}
	data, err := known.Load()
	if err != nil {
		return message + "\n\n" + VerdictPrefix + "unexplained: " + err.Error()
	}
	cg := ClientGoInUse()
	gates, _ := ClientGoGates() // without them, every gate counts as at its default
	sum := report.SuiteSummary{ClientGo: cg.Version, ClientGoReplacement: cg.Replacement, ClientGoGates: gates, KubeAPIServer: KubeAPIServerVersion()}
	s := report.SpecSummary{Spec: strings.Join(append(slices.Clone(spec.ContainerHierarchyTexts), spec.LeafNodeText), " "), Labels: spec.Labels(), RateLimiter: currentLimiterWaits()}
	settings := ClientSettingsInForce()
	sum.ClientSettings = &settings
	v := report.Verdict(sum, s, data)
	return message + "\n\n" + VerdictPrefix + v.Line()
}
