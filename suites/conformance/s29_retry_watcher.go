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

	DescribeTable("UntilWithSync on the same faults: every new object reaches its condition, once",
		func(ctx SpecContext, fault scenarios.S29Fault) {
			scenarios.UntilWithSync(ctx, e2e.Setup{}, fault)
		},
		Entry("a watch the server ended", scenarios.WatchEndedCleanly),
		Entry("an ERROR event 410: listed again", scenarios.WatchExpired),
		Entry("new watches refused (403): listed again", scenarios.WatchRefused),
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

	It("fails when closing an open watch waits for its end", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.RetryWatcher(ctx, e2e.Setup{Client: scenarios.DrainWatchOnClose}, scenarios.WatchEndedCleanly)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.RetryWatcherStops)), "the S29 assertion catches a Stop that never completes")
	})

	It("fails when no event of a re-watch reaches UntilWithSync", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.UntilWithSync(ctx, e2e.Setup{Client: scenarios.SilentRewatches}, scenarios.WatchEndedCleanly)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.UntilWithSyncDelivers)), "the S29 assertion catches objects UntilWithSync never sees")
	})
})
