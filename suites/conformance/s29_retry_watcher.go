package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S29: the scenario, and what it expects of client-go, is
// scenarios.RetryWatcher.
var _ = Describe("S29 a RetryWatcher through the informers' faults", Label("retry-watcher"), func() {
	DescribeTable("resumes what it can, reports and stops on what it cannot",
		func(ctx SpecContext, fault scenarios.S29Fault) {
			scenarios.RetryWatcher(ctx, e2e.Setup{}, fault)
		},
		Entry("a watch the server ended: resumed, every object once", scenarios.WatchEndedCleanly, Sample),
		Entry("an ERROR event 410: reported, stopped", scenarios.WatchExpired),
		Entry("new watches refused (403): reported, stopped", scenarios.WatchRefused, Label("release-sensitive")),
	)

	It("fails when the client resumes its watches without their resourceVersion", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.RetryWatcher(ctx, e2e.Setup{Client: scenarios.DropWatchResourceVersion}, scenarios.WatchEndedCleanly)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.RetryWatcherResumes)), "the S29 assertion catches a resume that starts over")
	})

	It("fails when the client hides the refusal's status", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.RetryWatcher(ctx, e2e.Setup{Client: httpfault.StatusesAsErrors}, scenarios.WatchRefused)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.RetryWatcherReports)), "the S29 assertion catches a refusal the RetryWatcher never reports")
	})
})
