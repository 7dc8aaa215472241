package conformance

import (
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S16: the scenario, and what it expects of each client-go version, is
// scenarios.HandlerOrder.
var _ = Describe("S16 handler order across objects", Label("handler-order", "release-sensitive"), func() {
	DescribeTable("the handler hears a burst of changes to several objects in the server's order",
		func(ctx SpecContext, m e2e.SyncMode, slow scenarios.Slowness) {
			scenarios.HandlerOrder(ctx, m.Setup(), probe.Options{}, slow)
		},
		s16Entries(),
	)

	It("fails when the handler hears an object's creation after a later change", NegativeControl, func(ctx SpecContext) {
		// Each Add reaches the handler only after the call that follows
		// it: the queue's order broken the way a per-object queue breaks it.
		wrap := func(h cache.ResourceEventHandler) cache.ResourceEventHandler { return &addsLate{next: h} }
		err := InterceptGomegaFailure(func() {
			scenarios.HandlerOrder(ctx, e2e.Setup{}, probe.Options{WrapHandler: wrap, NoHandlerCheck: true}, scenarios.NotSlowed)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.InServerOrder)), "the S16 assertion catches calls out of the server's order")
	})
})

// s16Entries: the consumer not slowed and a slow handler on the typed
// stack, a slow index function (what reorders a per-object queue) on every
// stack, each in both sync modes.
func s16Entries() []TableEntry {
	var entries []TableEntry
	for _, slow := range []scenarios.Slowness{scenarios.NotSlowed, scenarios.SlowHandler} {
		for _, m := range []e2e.SyncMode{e2e.StreamingList, e2e.ListWatch} {
			params := []any{slow}
			if slow == scenarios.NotSlowed {
				params = append(params, Sample)
			}
			entries = append(entries, m.Entry(slow.Name, params...))
		}
	}
	for _, stack := range probe.Stacks {
		for _, m := range []e2e.SyncMode{e2e.StreamingList, e2e.ListWatch} {
			entries = append(entries, m.OnStack(stack).Entry(scenarios.SlowIndex.Name, scenarios.SlowIndex))
		}
	}
	return entries
}

// addsLate holds an Add back until the next call arrives, then delivers
// that call first: the creation is heard after a later change.
type addsLate struct {
	next cache.ResourceEventHandler
	mu   sync.Mutex
	held func()
}

func (h *addsLate) deliver(call func(), hold bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	held := h.held
	h.held = nil
	if hold && held == nil {
		h.held = call
		return
	}
	call()
	if held != nil {
		held()
	}
}

func (h *addsLate) OnAdd(obj any, initial bool) {
	h.deliver(func() { h.next.OnAdd(obj, initial) }, !initial)
}
func (h *addsLate) OnUpdate(old, obj any) { h.deliver(func() { h.next.OnUpdate(old, obj) }, false) }
func (h *addsLate) OnDelete(obj any)      { h.deliver(func() { h.next.OnDelete(obj) }, false) }
