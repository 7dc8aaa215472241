package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S28: the scenario, and what it expects of client-go, is
// scenarios.WaitForCacheSync.
var _ = Describe("S28 waiting for the cache sync", Label("sync-wait"), func() {
	e2e.DescribeSyncModes("the factory's WaitForCacheSync and cache.WaitForCacheSync return promptly once the informer synced",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.WaitForCacheSync(ctx, m.Setup(), probe.Options{}, nil)
		}, Sample)

	It("fails when the wait looks only every second", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.WaitForCacheSync(ctx, e2e.Setup{}, probe.Options{}, scenarios.SlowSyncWaiter)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.SyncWaitReturns)), "the S28 bound catches a wait that polls every second")
	})
})
