package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S25: the scenario, and what it expects of client-go, is
// scenarios.RollingUpgrade.
var _ = Describe("S25 rolling control-plane upgrade", Label("apiserver-upgrade"), Disruptive, Slow, NeedsAPIServerUpgrade, func() {
	e2e.DescribeSyncModes("each kube-apiserver upgraded in turn: the watch resumes on the other version, nothing missed, no needless relist",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.RollingUpgrade(ctx, m.Setup(), scenarios.UpgradeInput{})
		}, Sample)

	It("fails when the client relists whenever a watch ends", NegativeControl, e2e.StreamingList.Decorations(), func(ctx SpecContext) {
		// S1's broken transport: each upgrade step's end of the watch
		// becomes an error, and the informer relists instead of resuming.
		err := InterceptGomegaFailure(func() {
			scenarios.RollingUpgrade(ctx, e2e.StreamingList.WithClient(scenarios.EndOfWatchAsError), scenarios.UpgradeInput{})
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.NeedlessUpgradeReinit)), "the S25 relist assertion catches a client that relists on every watch end")
	})

	It("fails when the handler drops updates and deletes", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.RollingUpgrade(ctx, e2e.Setup{}, scenarios.UpgradeInput{Probe: probe.Options{WrapHandler: scenarios.DeafHandler, NoHandlerCheck: true}})
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.HeardEveryEnd)), "the S25 delete assertion catches a handler that never hears of a delete")
	})
})
