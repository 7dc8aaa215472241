package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S30: the scenario, and what it expects of client-go, is
// scenarios.HandlersDuringResync. Adding a handler does not involve the
// reflector: one sync mode.
var _ = Describe("S30 handlers added and removed while resyncs fire", Label("handlers-during-resync"), func() {
	It("every add and remove returns within its bound; added handlers hear every object, then every change; removed ones nothing after",
		Sample, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
			scenarios.HandlersDuringResync(ctx, e2e.ListWatch.Setup(), probe.Options{}, scenarios.S30Controller{})
		})

	It("fails when a handler stuck in a resync holds the lock its controller adds handlers under", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.HandlersDuringResync(ctx, e2e.Setup{}, probe.Options{}, scenarios.S30StuckInResync())
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.HandlerCallsReturn)), "the S30 watchdog catches an AddEventHandler that does not return")
	})

	It("fails when an added handler loses a delete", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.HandlersDuringResync(ctx, e2e.Setup{}, probe.Options{}, scenarios.S30LosesADelete())
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.HandlersHearAll)), "the S30 assertion catches a handler that missed a change")
	})

	It("fails when a registration reports the informer's sync instead of its handler's", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.HandlersDuringResync(ctx, e2e.Setup{}, probe.Options{}, scenarios.S30InformerSynced())
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.HandlersHearAll)), "the S30 assertion catches a handler taken for synced before it heard its initial Adds")
	})

	It("fails when the controller never removes the handler", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.HandlersDuringResync(ctx, e2e.Setup{}, probe.Options{}, scenarios.S30NeverRemoves())
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.RemovedHandlersHearNothing)), "the S30 assertion catches a handler still told of changes after its removal")
	})
})
