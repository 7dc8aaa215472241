package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S32: the scenario, and what it expects of client-go, is
// scenarios.InformerMetrics.
var _ = Describe("S32 informer metrics through client-go's metrics provider hooks", Label("metrics"), func() {
	e2e.DescribeSyncModes("the workqueue's and the rest client's metrics are emitted and move with the informer's work",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.InformerMetrics(ctx, m.Setup(), probe.Options{}, scenarios.S32Breaks{})
		}, Sample)

	It("fails when the workqueue has no name", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.InformerMetrics(ctx, e2e.Setup{}, probe.Options{}, scenarios.S32Breaks{UnnamedQueue: true})
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.QueueMetricsMove)), "the S32 queue assertion catches a queue that emits nothing")
	})

	It("fails when the metrics adapter drops calls", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.InformerMetrics(ctx, e2e.Setup{}, probe.Options{}, scenarios.S32Breaks{Adapter: scenarios.DropEveryOtherResult()})
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.ClientMetricsCount)), "the S32 client assertion catches an adapter that drops every other request result")
	})
})
