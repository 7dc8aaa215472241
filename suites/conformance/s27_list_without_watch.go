package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S27: the scenario, and what it expects of client-go, is
// scenarios.ListWithoutWatch.
var _ = Describe("S27 an informer allowed to list but not to watch", Label("list-without-watch"), func() {
	e2e.DescribeSyncModes("syncs, reports each refused watch as Forbidden and backs off",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.ListWithoutWatch(ctx, m.Setup(), probe.Options{})
		}, Sample)

	It("fails when the client hides the refusal's status", NegativeControl, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
		// Every non-2xx answer turned into a transport error: the watch
		// error handler gets an error without a reason.
		err := InterceptGomegaFailure(func() {
			scenarios.ListWithoutWatch(ctx, e2e.ListWatch.WithClient(httpfault.StatusesAsErrors), probe.Options{})
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.ForbiddenReported)), "the S27 assertion catches a refusal reported without its reason")
	})

	It("fails when the client retries every refusal at once", NegativeControl, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.ListWithoutWatch(ctx, e2e.ListWatch.WithClient(scenarios.RetryForbidden), probe.Options{})
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.BacksOffRefusals)), "the S27 bound catches refusals retried in a loop")
	})
})
