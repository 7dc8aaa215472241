package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S9: the scenario, and what it expects of client-go, is
// scenarios.SyncWithUnreachableAPIServer.
var _ = Describe("S9 sync with an unreachable apiserver", Label("sync-timeout"), func() {
	e2e.DescribeSyncModes("gives up at the caller's bound, backs off meanwhile, and syncs once the apiserver is reachable",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.SyncWithUnreachableAPIServer(ctx, m.Setup())
		}, Sample)

	It("fails when the client retries in a hot loop", NegativeControl, func(ctx SpecContext) {
		// A transport that retries every failed request at once, 50 times:
		// the dial bound must catch it.
		err := InterceptGomegaFailure(func() { scenarios.SyncWithUnreachableAPIServer(ctx, e2e.Setup{Client: scenarios.EagerRetry}) })
		Expect(err).To(MatchError(ContainSubstring(scenarios.DialsWhileUnreachable)), "the S9 bound catches a hot loop")
	})
})
