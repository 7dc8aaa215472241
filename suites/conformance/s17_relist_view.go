package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S17: the scenario, and what it expects of each client-go version, is
// scenarios.RelistView.
var _ = Describe("S17 what a handler sees of the store during a relist", Label("relist-view", "compaction", "release-sensitive"), Disruptive, NeedsEtcdCompaction, func() {
	e2e.DescribeStacksAndSyncModes("every handler call of a relist after a 410 sees a store the server once had",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.RelistView(ctx, m.Setup(), probe.Options{})
		}, Sample)

	m := e2e.StreamingList
	It("fails when the relist is applied item by item (AtomicFIFO=false, InOrderInformersBatchProcess=false)", NegativeControl, m.Decorations(), e2e.ClientGo(">= 0.36.0"), func(ctx SpecContext) {
		// client-go's own queue of v0.33/v0.34: the relist queued as one
		// delta per object, each applied just before its handler call
		// (tools/cache/controller.go newQueueFIFO, the_real_fifo.go
		// Replace). Both gates: batches alone (PopBatch, up to 1000
		// distinct objects in one store transaction) already apply a
		// relist this small at once.
		e2e.UseClientGoGate("AtomicFIFO", false)
		e2e.UseClientGoGate("InOrderInformersBatchProcess", false)
		err := InterceptGomegaFailure(func() { scenarios.RelistView(ctx, m.Setup(), probe.Options{}) })
		Expect(err).To(MatchError(ContainSubstring(scenarios.ServerHadView)), "the S17 assertion catches a relist applied item by item")
	})
})
