package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S21: the scenario, and what it expects of client-go, is
// scenarios.StreamCutInsideInitialEvents. Streaming-list mode only: a
// LIST+WATCH informer's streams carry no initial events.
var _ = Describe("S21 a streaming list cut inside its initial events", Label("stream-cut"), func() {
	m := e2e.StreamingList
	It("resumes from a resourceVersion it synced to and misses nothing", m.Decorations(), Sample, func(ctx SpecContext) {
		scenarios.StreamCutInsideInitialEvents(ctx, m.Setup(), probe.Options{})
	})

	It("fails when the client lists from a resourceVersion it never synced to", NegativeControl, m.Decorations(), func(ctx SpecContext) {
		// Every streaming list asks for resourceVersion "1" (not older
		// than), which the server serves: a client that starts over from
		// somewhere it never was.
		fromRV1 := func(o *metav1.ListOptions) {
			if o.SendInitialEvents != nil && *o.SendInitialEvents {
				o.ResourceVersion = "1"
			}
		}
		err := InterceptGomegaFailure(func() {
			scenarios.StreamCutInsideInitialEvents(ctx, m.Setup(), probe.Options{TweakListOptions: fromRV1})
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.ResumesFromSynced)), "the S21 assertion catches a request from an RV the informer never synced to")
	})
})
