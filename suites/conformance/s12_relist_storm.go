package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S12: the scenario, and what it expects of client-go, is
// scenarios.RelistStorm.
var _ = Describe("S12 relist storm cost", Label("relist-storm"), Disruptive, NeedsAPIServerRestart, func() {
	e2e.DescribeSyncModes("every informer converges after an apiserver restart, each re-initialising a bounded number of times",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.RelistStorm(ctx, m.Setup(), scenarios.StormSize(ctx))
		}, Slow)

	It("fails when every informer needs many LISTs to get through", NegativeControl, Slow, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
		// A client whose next LISTs after the restart fail (500) relists
		// over and over before it gets through: maxReinitsPerInformer+1
		// failures make every informer exceed the bound however the
		// backoff's jitter falls, and still converge well within
		// stormConvergeBound (the backoff doubles from 800 ms: at most
		// 1.6+3.2+6.4+12.8+25.6 s). A small storm proves the bound; LIST+WATCH
		// mode, where a relist is a LIST.
		err := InterceptGomegaFailure(func() {
			scenarios.RelistStorm(ctx, e2e.ListWatch.WithClient(scenarios.ListsFailAfterTheFirst), scenarios.StormParams{Informers: 3, Objects: 20})
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.StormReinits)), "the S12 bound catches a client that relists on every watch end")
	})
})
