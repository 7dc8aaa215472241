package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/informers"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S8: the scenario, and what it expects of client-go, is
// scenarios.ResyncSendsNoRequests.
var _ = Describe("S8 resync", Label("resync"), func() {
	e2e.DescribeSyncModes("re-delivers every object from the indexer and sends no request to the apiserver",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.ResyncSendsNoRequests(ctx, m.Setup(), probe.Options{})
		}, Sample)

	It("fails when the client re-watches every second", NegativeControl, func(ctx SpecContext) {
		// A client whose watches time out after 1 s (a tweak of
		// timeoutSeconds) sends a new watch every second: the assertion of
		// zero requests during the resync window must catch it.
		tweak := informers.WithTweakListOptions(scenarios.RewatchEverySecond)
		err := InterceptGomegaFailure(func() {
			scenarios.ResyncSendsNoRequests(ctx, e2e.Setup{}, probe.Options{FactoryOptions: []informers.SharedInformerOption{tweak}})
		})
		// Either S8 assertion may be the one that trips: the new watches
		// show up as requests, and when they end in relists (clean close
		// within a second) the relists can also keep every pod from
		// reaching its resyncs in the window. Both are this spec failing.
		Expect(err).To(MatchError(Or(ContainSubstring(scenarios.RequestsDuringResyncs), ContainSubstring(scenarios.ResyncsOf))), "an S8 assertion catches a client that keeps requesting")
	})
})
