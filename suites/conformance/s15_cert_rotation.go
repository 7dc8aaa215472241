package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S15: the scenario, and what it expects of client-go, is
// scenarios.ClientCARotation and scenarios.ServingCARotation.
var _ = Describe("S15 certificate rotation", Label("cert-rotation"), Disruptive, NeedsCertRotation, func() {
	// Short texts: the artifacts directory takes the first 100 characters
	// of the spec's full name, which must still tell the sync modes apart.
	e2e.DescribeSyncModes("client CA rotated, reconnects without a new client",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.ClientCARotation(ctx, m.Setup())
		}, Sample)

	It("fails when the client holds its certificate in memory", NegativeControl, e2e.StreamingList.Decorations(), func(ctx SpecContext) {
		// The same credentials as data (what a flattened kubeconfig or a
		// rest.Config filled in code gives): TLSConfigFor makes them a
		// static certificate, so the informer keeps presenting the old
		// one and is refused (401) forever.
		err := InterceptGomegaFailure(func() { scenarios.ClientCARotation(ctx, e2e.StreamingList.WithClient(scenarios.InlineCredentials)) })
		Expect(err).To(MatchError(ContainSubstring(scenarios.RotationRecovers)), "the S15 recovery bound catches a client that cannot reload its certificate")
	})

	Context("serving and client CA rotated", Slow, Long, e2e.ClientGo(">= 0.36.0"), func() {
		e2e.DescribeSyncModes("5-minute reload with ClientsAllowCARotation, never without",
			func(ctx SpecContext, m e2e.SyncMode) {
				scenarios.ServingCARotation(ctx, m.Setup())
			})
	})
})
