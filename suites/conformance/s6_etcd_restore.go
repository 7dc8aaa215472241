package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S6: the scenario, and what it expects of client-go, is
// scenarios.EtcdRestored.
var _ = Describe("S6 etcd restored from an earlier snapshot", Label("etcd-restore"), Disruptive, NeedsEtcdSnapshot, NeedsAPIServerRestart, func() {
	Context("when the restore is plain: resourceVersions go backwards", func() {
		e2e.DescribeSyncModes("the informer resumes a silent watch at its newer resourceVersion and stays stale (upstream limitation)",
			func(ctx SpecContext, m e2e.SyncMode) {
				scenarios.EtcdRestored(ctx, m.Setup(), scenarios.EtcdRestoreInput{})
			}, Sample)
	})

	Context("when the restore bumps revisions and marks them compacted", func() {
		e2e.DescribeSyncModes("the resume is answered 410, the informer relists, converges and observes the vanished pod's delete",
			func(ctx SpecContext, m e2e.SyncMode) {
				scenarios.EtcdRestored(ctx, m.Setup(), scenarios.EtcdRestoreInput{Bumped: true})
			})
	})

	It("fails when the handler drops tombstones", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.EtcdRestored(ctx, e2e.Setup{}, scenarios.EtcdRestoreInput{Bumped: true, Wrap: scenarios.DropTombstones})
		})
		Expect(err).To(MatchError(ContainSubstring(e2e.SawEveryDelete)), "the S6 delete assertion catches a handler that ignores tombstones")
	})
})
