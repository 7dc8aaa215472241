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
	name := strings.Join(append(slices.Clone(spec.ContainerHierarchyTexts), spec.LeafNodeText), " ")
	return message + "\n\n" + verdictLine(name, spec.Labels(), KubeAPIServerVersion(), heldLimiterWaits())
}

// verdictLine is the line that says what the failure of the running spec,
// name with labels on kube-apiserver server, its informers held by the
// client-side rate limiter as limiter says (nil: not recorded), is (VerdictPrefix and the verdict): known behaviour of
// the client-go in use (with the upstream change and the release that
// changed it) or unexplained, and why.
func verdictLine(name string, labels []string, server string, limiter *report.LimiterWaits) string {
	data, err := known.Load()
	if err != nil {
		return VerdictPrefix + "unexplained: " + err.Error()
	}
	cg := ClientGoInUse()
	gates, _ := ClientGoGates() // without them, every gate counts as at its default
	sum := report.SuiteSummary{ClientGo: cg.Version, ClientGoReplacement: cg.Replacement, ClientGoGates: gates, KubeAPIServer: server}
	s := report.Spec{Spec: name, Labels: labels, RateLimiter: limiter}
	settings := ClientSettingsInForce()
	sum.ClientSettings = &settings
	return VerdictPrefix + report.Verdict(sum, s, data).Line()
}
