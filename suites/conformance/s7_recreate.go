package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S7: the scenario, and what it expects of client-go, is
// scenarios.RecreatedWhileDisconnected.
var _ = Describe("S7 same-name pod recreated while disconnected", Label("recreate", "compaction"), Disruptive, NeedsEtcdCompaction, func() {
	e2e.DescribeStacksAndSyncModes("converges and tells the handler the old object ended (Delete or UID-changing Update)",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.RecreatedWhileDisconnected(ctx, m.Setup(), probe.Options{})
		}, Sample)

	It("fails when the handler drops updates and deletes", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.RecreatedWhileDisconnected(ctx, e2e.Setup{}, probe.Options{WrapHandler: scenarios.DeafHandler, NoHandlerCheck: true})
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.OldObjectEnded)), "the S7 assertion catches a handler that never hears of it")
	})

	crd := e2e.StreamingList.OnStack(probe.StackDynamicCRD)
	It("fails when the handler drops updates and deletes ("+crd.Name+")", NegativeControl, crd.Decorations(), func(ctx SpecContext) {
		// The same broken handler on the custom resource: unstructured
		// objects, another decoder, the same assertion.
		err := InterceptGomegaFailure(func() {
			scenarios.RecreatedWhileDisconnected(ctx, crd.Setup(), probe.Options{WrapHandler: scenarios.DeafHandler, NoHandlerCheck: true})
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.OldObjectEnded)), "the S7 assertion catches a handler that never hears of the custom resource's end")
	})

	It("fails when the relist fixes the store but tells no handler", NegativeControl, func(ctx SpecContext) {
		// The handler hears the initial list and nothing after: the store
		// still converges (the relist's Replace), the handler calls do not.
		wrap := scenarios.InitialListOnly
		err := InterceptGomegaFailure(func() { scenarios.RecreatedWhileDisconnected(ctx, e2e.Setup{}, probe.Options{WrapHandler: wrap}) })
		Expect(err).To(MatchError(ContainSubstring(e2e.HandlersAddUp)), "the handler check catches a relist no handler heard of")
	})
})
