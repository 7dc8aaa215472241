package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S1: the scenario, and what it expects of client-go, is in
// scenarios/s1_apiserver_restart.go, shared with the e2e-framework features.
var _ = Describe("S1 kube-apiserver restart", Label("apiserver-restart"), Disruptive, NeedsAPIServerRestart, NeedsHA, func() {
	DescribeTable("the informer resumes, converges and relists only where the server says so",
		func(ctx SpecContext, m e2e.SyncMode, stop cluster.StopMode) {
			scenarios.APIServerRestart(ctx, m.Setup(), scenarios.RestartInput{Stop: stop})
		},
		s1Entries(),
	)

	// A second attempt where the first's fault was masked: a restarted
	// apiserver can answer a re-watch 403 while its authorizer starts (seen
	// on client-go v0.31.14: the watch that ended was that 403, after which
	// S1 allows the relist), and then no watch end tells the broken client
	// from a sound one. The control passes when an attempt is caught.
	It("fails when the client relists whenever a watch ends", NegativeControl, e2e.StreamingList.Decorations(), FlakeAttempts(2), func(ctx SpecContext) {
		// A transport that reports the end of every watch stream as an
		// error: the stream watcher turns it into an ERROR event and the
		// reflector relists instead of resuming. The resume and
		// re-initialisation assertions must catch it.
		err := InterceptGomegaFailure(func() {
			scenarios.APIServerRestart(ctx, e2e.StreamingList.WithClient(scenarios.EndOfWatchAsError), scenarios.RestartInput{Stop: cluster.Hard})
		})
		Expect(err).To(MatchError(Or(ContainSubstring(scenarios.ResumesWatch), ContainSubstring(scenarios.NeedlessReinit))),
			"an S1 assertion catches a client that relists on every watch end")
	})
})

// s1Entries are S1's entries: both stop modes, both sync modes, on every
// informer stack.
func s1Entries() []TableEntry {
	GinkgoHelper()
	var entries []TableEntry
	for _, stack := range probe.Stacks {
		for _, stop := range []struct {
			mode cluster.StopMode
			name string
		}{{cluster.Graceful, "graceful (SIGTERM)"}, {cluster.Hard, "hard (SIGKILL)"}} {
			for _, m := range []e2e.SyncMode{e2e.StreamingList, e2e.ListWatch} {
				var sample []any
				if stop.mode == cluster.Hard && stack == probe.StackTyped {
					sample = append(sample, Sample)
				}
				entries = append(entries, m.OnStack(stack).Entry(stop.name, append([]any{stop.mode}, sample...)...))
			}
		}
	}
	return entries
}
