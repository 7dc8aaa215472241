package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S34: the scenario, and what it expects of client-go, is
// scenarios.InitialSyncMemory. Slow: each spec fills its namespace with
// 32 MiB of ConfigMaps.
var _ = Describe("S34 memory of the initial sync", Label("memory"), Slow, func() {
	e2e.DescribeSyncModes("an informer over many large objects, with and without a transform stripping them: the heap its sync needs and the heap it keeps",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.InitialSyncMemory(ctx, m.Setup(), probe.Options{}, scenarios.StripData)
		})

	It("fails when the transform keeps the objects' data", NegativeControl, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.InitialSyncMemory(ctx, e2e.ListWatch.Setup(), probe.Options{}, scenarios.KeepData)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.TransformShrinksCache)), "the S34 assertion catches a transform that keeps the bulk")
	})

	It("fails when the client buffers a streaming list's initial events", NegativeControl, e2e.StreamingList.Decorations(), func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.InitialSyncMemory(ctx, e2e.StreamingList.WithClient(scenarios.BufferInitialEvents), probe.Options{}, scenarios.StripData)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.StreamingPeakBounded)), "the S34 assertion catches a streaming list held whole in memory")
	})

	It("fails when the objects are stripped in a handler instead of the transform", NegativeControl, e2e.StreamingList.Decorations(), e2e.ClientGo(">= "+scenarios.StreamingTransformFrom), func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.InitialSyncMemory(ctx, e2e.StreamingList.Setup(), probe.Options{}, scenarios.StripInHandler)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.StreamingStripPeak)), "the S34 assertion catches a streaming list's objects arriving whole")
	})
})
