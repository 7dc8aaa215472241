package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S13: the scenario, and what it expects of client-go, is
// scenarios.GoawayRebalancing.
var _ = Describe("S13 GOAWAY across HA kube-apiservers", Label("goaway"), NeedsHA, func() {
	e2e.DescribeSyncModes("informers move with their connections and resume their watches on the other apiserver: no failed request, no re-initialisation",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.GoawayRebalancing(ctx, m.Setup())
		}, Sample)

	It("fails when the client relists whenever a watch ends", NegativeControl, e2e.StreamingList.Decorations(), func(ctx SpecContext) {
		// A client that takes the end of each watch for an error relists
		// on every move: the no-re-initialisation assertion must catch it.
		err := InterceptGomegaFailure(func() { scenarios.GoawayRebalancing(ctx, e2e.StreamingList.WithClient(scenarios.EndOfWatchAsError)) })
		Expect(err).To(MatchError(ContainSubstring(scenarios.GoawayNoReinit)), "the S13 assertion catches a client that relists after a GOAWAY")
	})
})
