package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S24: the scenario, and what it expects of client-go, is
// scenarios.LaggingAPIServer.
var _ = Describe("S24 a relist through a lagging kube-apiserver", Label("lagging-apiserver", "ha"), Disruptive, NeedsHA, func() {
	e2e.DescribeSyncModes("never goes back in time: no deleted object returns, no seen object vanishes or gets older",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.LaggingAPIServer(ctx, m.Setup(), nil)
		}, Sample)

	It("fails when the client relists at resourceVersion \"0\"", NegativeControl, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
		// What client-go did before kubernetes#59848 was fixed: the
		// lagging cache's state is served at once.
		err := InterceptGomegaFailure(func() { scenarios.LaggingAPIServer(ctx, e2e.ListWatch.Setup(), scenarios.ZeroRelists) })
		Expect(err).To(MatchError(ContainSubstring(scenarios.NeverBackInTime)), "the S24 assertion catches a relist that goes back in time")
	})
})
