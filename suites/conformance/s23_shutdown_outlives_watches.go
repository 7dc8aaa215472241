package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S23: the scenario, and what it expects of client-go, is
// scenarios.ShutdownOutlivesWatches.
var _ = Describe("S23 kube-apiserver shutdown outliving its watches", Label("apiserver-shutdown", "ha"), Disruptive, NeedsHA, NeedsAPIServerRestart, func() {
	for _, end := range []scenarios.ShutdownEnd{scenarios.ShutdownTimesOut, scenarios.ShutdownKilled} {
		var sample []any
		if end == scenarios.ShutdownKilled {
			sample = append(sample, Sample)
		}
		e2e.DescribeSyncModes("drain ended by "+string(end)+": the watch open through GOAWAY is resumed on the other apiserver, no relist",
			func(ctx SpecContext, m e2e.SyncMode) {
				scenarios.ShutdownOutlivesWatches(ctx, m.Setup(), scenarios.ShutdownInput{End: end})
			}, sample...)
	}

	It("fails when the client takes the end of a watch for an error", NegativeControl, e2e.StreamingList.Decorations(), func(ctx SpecContext) {
		// The watch ends cleanly at the shutdown timeout: a client that
		// relists on every watch end must be caught.
		err := InterceptGomegaFailure(func() {
			scenarios.ShutdownOutlivesWatches(ctx, e2e.StreamingList.WithClient(scenarios.EndOfWatchAsError), scenarios.ShutdownInput{End: scenarios.ShutdownTimesOut})
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.ShutdownResumes)), "the S23 assertion catches a client that relists when the watch ends")
	})

	It("fails when the client takes the GOAWAY close for a watch error", NegativeControl, e2e.StreamingList.Decorations(), func(ctx SpecContext) {
		// apimachinery before kubernetes PR #73277: the stream watcher
		// sends an ERROR event for the GOAWAY close and the reflector
		// relists: the no-re-initialisation assertion must catch it.
		err := InterceptGomegaFailure(func() {
			scenarios.ShutdownOutlivesWatches(ctx, e2e.StreamingList.WithClient(scenarios.GoawayCloseAsError), scenarios.ShutdownInput{End: scenarios.ShutdownKilled})
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.ShutdownResumes)), "the S23 assertion catches a client that relists after a GOAWAY close")
	})
})
