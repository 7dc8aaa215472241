package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S19: the scenario, and what it expects of client-go, is
// scenarios.Transformed.
var _ = Describe("S19 an informer with a transform", Label("transform", "compaction", "release-sensitive"), Disruptive, NeedsEtcdCompaction, func() {
	e2e.DescribeStacksAndSyncModes("transforms every object of the store and of every handler call once (lists, watch events, resyncs, tombstones; from client-go v0.34.3 a streaming list's objects twice)",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.Transformed(ctx, m.Setup(), probe.Options{})
		}, Sample)

	It("fails when the objects reaching the handlers are transformed again", NegativeControl, func(ctx SpecContext) {
		// A broken setup that runs the transform a second time on what it
		// hands the handlers (as a wrapper re-applying it would): the
		// recording handler sees objects transformed twice.
		wrap := func(h cache.ResourceEventHandler) cache.ResourceEventHandler { return retransforming{h} }
		err := InterceptGomegaFailure(func() { scenarios.Transformed(ctx, e2e.Setup{}, probe.Options{WrapHandler: wrap}) })
		Expect(err).To(MatchError(ContainSubstring(scenarios.TransformedOnce)), "the S19 assertion catches objects transformed twice")
	})
})

// retransforming applies S19's count once more to every object it passes
// on (in place: the store's objects too, as a second client-go transform
// would).
type retransforming struct{ next cache.ResourceEventHandler }

func (r retransforming) OnAdd(obj any, initial bool) {
	r.next.OnAdd(scenarios.TransformAgain(obj), initial)
}
func (r retransforming) OnUpdate(old, obj any) {
	r.next.OnUpdate(old, scenarios.TransformAgain(obj))
}
func (r retransforming) OnDelete(obj any) { r.next.OnDelete(obj) }
