package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S22: the scenario, and what it expects of client-go, is
// scenarios.ResyncWithWrites.
var _ = Describe("S22 resyncs among writes", Label("resync"), func() {
	e2e.DescribeSyncModes("every change reaches the handler as a change and resyncs re-deliver only what it heard",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.ResyncWithWrites(ctx, m.Setup(), probe.Options{})
		}, Sample)

	e2e.DescribeSyncModes("three more handlers, resyncing every 1 s, every 3 s and never, each hear every change as a change, and the one that asked for none no resync",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.ResyncWithWritesHandlers(ctx, m.Setup(), probe.Options{}, scenarios.S22MixedHandlers)
		})

	It("fails when one of several handlers is handed the old object for a change", NegativeControl, func(ctx SpecContext) {
		broken := append([]scenarios.S22Handler(nil), scenarios.S22MixedHandlers...)
		broken[2].Wrap = func(h cache.ResourceEventHandler) cache.ResourceEventHandler { return &oldForNew{next: h} }
		err := InterceptGomegaFailure(func() {
			scenarios.ResyncWithWritesHandlers(ctx, e2e.Setup{}, probe.Options{}, broken)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.ResyncHidesNothing)), "the S22 assertion catches a change handed over as a resync to one handler of several")
	})

	It("fails when the handler is handed the old object for a change", NegativeControl, func(ctx SpecContext) {
		// Every other real change reaches the handler as Update(old, old):
		// it looks like a resync, and the change is hidden.
		wrap := func(h cache.ResourceEventHandler) cache.ResourceEventHandler { return &oldForNew{next: h} }
		err := InterceptGomegaFailure(func() {
			scenarios.ResyncWithWrites(ctx, e2e.Setup{}, probe.Options{WrapHandler: wrap, NoHandlerCheck: true})
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.ResyncHidesNothing)), "the S22 assertion catches a change handed over as a resync")
	})

	It("fails when a handler that asked for no resync is handed resyncs", NegativeControl, func(ctx SpecContext) {
		broken := append([]scenarios.S22Handler(nil), scenarios.S22MixedHandlers...)
		broken[0].Wrap = func(h cache.ResourceEventHandler) cache.ResourceEventHandler { return echoUpdates{next: h} }
		err := InterceptGomegaFailure(func() {
			scenarios.ResyncWithWritesHandlers(ctx, e2e.Setup{}, probe.Options{}, broken)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.NoResyncUnasked)), "the S22 assertion catches resyncs handed to a handler that asked for none")
	})
})

// echoUpdates hands every update over twice, the second time as a resync
// (the new object on both sides).
type echoUpdates struct{ next cache.ResourceEventHandler }

func (h echoUpdates) OnAdd(obj any, initial bool) { h.next.OnAdd(obj, initial) }
func (h echoUpdates) OnUpdate(old, obj any) {
	h.next.OnUpdate(old, obj)
	h.next.OnUpdate(obj, obj)
}
func (h echoUpdates) OnDelete(obj any) { h.next.OnDelete(obj) }

// oldForNew hands every other update over with its old object on both sides.
type oldForNew struct {
	next  cache.ResourceEventHandler
	calls int
}

func (h *oldForNew) OnAdd(obj any, initial bool) { h.next.OnAdd(obj, initial) }
func (h *oldForNew) OnUpdate(old, obj any) {
	// One goroutine per handler calls this (shared_informer.go
	// processorListener.run): no lock needed.
	if h.calls++; h.calls%2 == 0 {
		obj = old
	}
	h.next.OnUpdate(old, obj)
}
func (h *oldForNew) OnDelete(obj any) { h.next.OnDelete(obj) }
