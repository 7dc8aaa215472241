package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S10: the scenario, and what it expects of client-go, is
// scenarios.ShutdownLeavesNothing.
var _ = Describe("S10 factory shutdown", Label("shutdown"), func() {
	e2e.DescribeStacksAndSyncModes("leaves no goroutine, sends nothing more, and leaves the clientset working",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.ShutdownLeavesNothing(ctx, m.Setup(), probe.Options{}, false)
		}, Sample)

	e2e.DescribeStacksAndSyncModes("returns promptly when the connection died before the shutdown",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.ShutdownLeavesNothing(ctx, m.Setup(), probe.Options{}, true)
		})

	It("fails when a handler leaves a goroutine behind", NegativeControl, func(ctx SpecContext) {
		// A controller whose handler starts a goroutine that outlives the
		// informer: the leak check must name it.
		release := make(chan struct{})
		DeferCleanup(func() { close(release) })
		leaky := scenarios.LeakyHandler(release)
		err := InterceptGomegaFailure(func() { scenarios.ShutdownLeavesNothing(ctx, e2e.Setup{}, probe.Options{WrapHandler: leaky}, false) })
		Expect(err).To(MatchError(ContainSubstring(scenarios.LeftAfterShutdown)), "the S10 leak check catches a leaked goroutine")
	})

	It("fails within its bound, naming the handler, when a handler blocks for ever", NegativeControl, func(ctx SpecContext) {
		scenarios.ShutdownHeldByHandler(ctx, e2e.Setup{})
	})
})
