package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S18: the scenario, and what it expects of each client-go version, is
// scenarios.SlowConsumer. On the typed stack only: what it measures is the
// informer's queue, which every stack shares, and protobuf's
// length-delimited frames are read one event at a time, so the probe sees
// when each event left the stream.
var _ = Describe("S18 a consumer slower than the events", Label("slow-consumer", "release-sensitive"), func() {
	e2e.DescribeSyncModes("the watch keeps being read, stays open, and nothing is lost or relisted",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.SlowConsumer(ctx, m.Setup(), probe.Options{})
		}, Sample)

	m := e2e.StreamingList
	It("fails when the queue stays locked while the consumer works (UnlockWhileProcessingFIFO=false)", NegativeControl, m.Decorations(), e2e.ClientGo(">= 0.36.0"), func(ctx SpecContext) {
		// client-go's own queue before v0.36: Pop and PopBatch hold the
		// queue's lock while the consumer processes (the_real_fifo.go
		// whileProcessing_locked), so the reflector cannot append.
		e2e.UseClientGoGate("UnlockWhileProcessingFIFO", false)
		err := InterceptGomegaFailure(func() { scenarios.SlowConsumer(ctx, m.Setup(), probe.Options{}) })
		Expect(err).To(MatchError(ContainSubstring(scenarios.KeepsReading)), "the S18 assertion catches a watch left unread behind a locked queue")
	})
})
