package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S6, continued: the scenario, and what it expects of client-go, is
// scenarios.RelistAfterPlainRestore.
var _ = Describe("S6 etcd restored from an earlier snapshot, then a relist", Label("etcd-restore"), Disruptive, NeedsEtcdSnapshot, NeedsAPIServerRestart, func() {
	// LIST+WATCH takes a minute by design (the REST client's 11 tries of
	// the LIST, expectedRelist in scenarios/s6_relist_unavailable_rv.go):
	// slow; the streaming list seconds.
	DescribeTable("plain restore, then a relist: the LIST at the informer's resourceVersion is answered too large and the reflector falls back to a consistent list",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.RelistAfterPlainRestore(ctx, m.Setup())
		},
		e2e.StreamingList.Entry(""),
		e2e.ListWatch.Entry("", Slow))

	It("fails when the client retries the same resourceVersion forever", NegativeControl, e2e.StreamingList.Decorations(), func(ctx SpecContext) {
		// A client stack that sends its consistent relist (resourceVersion
		// "") at the last resourceVersion it listed at never gets off R, as
		// client-go before k8s#107133's fix: the bound must catch it. In
		// streaming-list mode, whose bound (8 s) fails in a third of the time
		// LIST+WATCH's 48 s would take.
		err := InterceptGomegaFailure(func() {
			scenarios.RelistAfterPlainRestore(ctx, e2e.StreamingList.WithClient(scenarios.PinListResourceVersion))
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.RelistConverged)), "the S6 relist bound catches a client that never falls back to a consistent list")
	})
})
