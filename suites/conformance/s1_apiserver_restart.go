package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S1: the scenario, and what it expects of client-go, is in
// scenarios/s1_apiserver_restart.go, shared with the e2e-framework features.
var _ = Describe("S1 kube-apiserver restart", Label("apiserver-restart"), Disruptive, NeedsAPIServerRestart, NeedsHA, func() {
	DescribeTable("the informer resumes, converges and relists only where the server says so",
		func(ctx SpecContext, stop cluster.StopMode, m e2e.SyncMode) {
			m.Use()
			scenarios.APIServerRestart(ctx, scenarios.RestartInput{Stop: stop})
		},
		Entry("graceful (SIGTERM), streaming list", Label(e2e.LabelStreamingList), cluster.Graceful, e2e.StreamingList),
		Entry("graceful (SIGTERM), LIST+WATCH", Label(e2e.LabelListWatch), cluster.Graceful, e2e.ListWatch),
		Entry("hard (SIGKILL), streaming list", Label(e2e.LabelStreamingList), cluster.Hard, e2e.StreamingList),
		Entry("hard (SIGKILL), LIST+WATCH", Label(e2e.LabelListWatch), cluster.Hard, e2e.ListWatch),
		s1OtherStacks(),
	)

	It("fails when the client relists whenever a watch ends", NegativeControl, func(ctx SpecContext) {
		// A transport that reports the end of every watch stream as an
		// error: the stream watcher turns it into an ERROR event and the
		// reflector relists instead of resuming. The resume and
		// re-initialisation assertions must catch it.
		e2e.StreamingList.Use()
		err := InterceptGomegaFailure(func() {
			scenarios.APIServerRestart(ctx, scenarios.RestartInput{Stop: cluster.Hard, Client: endOfWatchAsError})
		})
		Expect(err).To(MatchError(Or(ContainSubstring(scenarios.ResumesWatch), ContainSubstring(scenarios.NeedlessReinit))),
			"an S1 assertion catches a client that relists on every watch end")
	})
})

// s1OtherStacks are S1's entries on the informer stacks other than the
// typed one (e2e.ExtraStacks), both stop modes and sync modes.
func s1OtherStacks() []TableEntry {
	var entries []TableEntry
	for _, stack := range e2e.ExtraStacks() {
		for _, stop := range []struct {
			mode cluster.StopMode
			name string
		}{{cluster.Graceful, "graceful (SIGTERM)"}, {cluster.Hard, "hard (SIGKILL)"}} {
			for _, m := range []e2e.SyncMode{e2e.StreamingList, e2e.ListWatch} {
				m = m.OnStack(stack)
				args := append(append([]any{Offset(1)}, m.Decorations()...), stop.mode, m)
				entries = append(entries, Entry(stop.name+", "+m.Name, args...))
			}
		}
	}
	return entries
}
