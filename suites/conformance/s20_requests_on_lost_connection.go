package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S20: the scenario, and what it expects of client-go, is
// scenarios.RequestsOnLostConnection. On the typed stack: its clientset
// shares the informers' connection (the dynamic and metadata informers
// have clients of their own).
var _ = Describe("S20 the clientset's own requests when the informers' connection is lost", Label("lost-connection-requests"), func() {
	e2e.DescribeSyncModes("a GET in flight and a LIST issued meanwhile are retried on a new connection and succeed",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.RequestsOnLostConnection(ctx, m.Setup(), probe.Options{}, scenarios.DefaultRetries)
		}, Sample)

	It("fails when the requests may not be retried (MaxRetries(0))", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() { scenarios.RequestsOnLostConnection(ctx, e2e.Setup{}, probe.Options{}, 0) })
		Expect(err).To(MatchError(ContainSubstring(scenarios.RequestsRetried)), "the S20 assertion catches requests that fail with the lost connection")
	})
})
