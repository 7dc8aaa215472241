package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S11: the scenario, and what it expects of client-go, is
// scenarios.HAFailover.
var _ = Describe("S11 HA apiservers: failover", Label("ha"), Disruptive, NeedsHA, NeedsAPIServerRestart, func() {
	e2e.DescribeSyncModes("to a warm apiserver: the resume is accepted, no re-initialisation",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.HAFailover(ctx, m.Setup(), scenarios.FailoverInput{})
		}, Sample)

	e2e.DescribeSyncModes("to a freshly restarted apiserver: 410, one relist",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.HAFailover(ctx, m.Setup(), scenarios.FailoverInput{FreshTarget: true})
		})

	It("fails when the client does not go through the failover address", NegativeControl, e2e.StreamingList.Decorations(), func(ctx SpecContext) {
		// A client that pinned itself to the apiserver it first reached
		// (here: configured with apiserver 0's own URL, as after resolving
		// a load balancer name once) never reaches the survivor: the
		// failover bound must catch it.
		err := InterceptGomegaFailure(func() {
			scenarios.HAFailover(ctx, e2e.StreamingList.Setup(), scenarios.FailoverInput{PinnedToAPIServer0: true})
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.FailoverConverged)), "the S11 bound catches a client that cannot fail over")
	})
})
