package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S5: the scenario, and what it expects of client-go, is in
// scenarios/s5_compaction.go, shared with the e2e-framework features.
var _ = Describe("S5 etcd compaction", Label("compaction"), Disruptive, NeedsEtcdCompaction, func() {
	Context("when etcd is compacted while the informer is watching", Slow, func() {
		e2e.DescribeStacksAndSyncModes("keeps the same watch: no re-initialisation, no new dial, later changes arrive",
			func(ctx SpecContext, m e2e.SyncMode) { scenarios.CompactedWhileWatching(ctx, m.Setup()) })
	})

	Context("when etcd is compacted while the informer fails over between kube-apiservers without watch cache", NeedsAPIServerRestart, NeedsHA, func() {
		e2e.DescribeStacksAndSyncModes("the resume is answered 410, the informer relists and observes every delete as a tombstone",
			func(ctx SpecContext, m e2e.SyncMode) {
				r := scenarios.ResumeAfterDrain(ctx, m.Setup(), scenarios.DrainInput{WatchCache: false, Compact: true, FailOver: true})
				Expect(r.Numbers.Reinitialisations).To(Equal(map[probe.Cause]int{probe.CauseGone: 1}), "one re-initialisation, caused by 410 Gone on the resume (%v)", r.Numbers.ReinitDetails)
				Expect(r.Tombstones).To(Equal(len(r.Deleted)), "every delete arrived as a DeletedFinalStateUnknown tombstone (the relist never saw the final state)")
			})

		It("fails when the handler drops tombstones", NegativeControl, func(ctx SpecContext) {
			err := InterceptGomegaFailure(func() {
				scenarios.ResumeAfterDrain(ctx, e2e.Setup{}, scenarios.DrainInput{WatchCache: false, Compact: true, FailOver: true, Wrap: scenarios.DropTombstones})
			})
			Expect(err).To(MatchError(ContainSubstring(e2e.SawEveryDelete)), "the S5 delete assertion catches a handler that ignores tombstones")
		})

		// The same control on the custom resource: the spec on the CRD
		// stack relies on the same delete assertion, over another decoder
		// and watch cache.
		crd := e2e.StreamingList.OnStack(probe.StackDynamicCRD)
		It("fails when the handler drops tombstones ("+crd.Name+")", NegativeControl, crd.Decorations(), func(ctx SpecContext) {
			err := InterceptGomegaFailure(func() {
				scenarios.ResumeAfterDrain(ctx, crd.Setup(), scenarios.DrainInput{WatchCache: false, Compact: true, FailOver: true, Wrap: scenarios.DropTombstones})
			})
			Expect(err).To(MatchError(ContainSubstring(e2e.SawEveryDelete)), "the S5 delete assertion catches a handler that ignores the custom resource's tombstones")
		})
	})

	Context("when etcd is compacted while the informer fails over between kube-apiservers with watch cache", Slow, NeedsAPIServerRestart, NeedsHA, func() {
		e2e.DescribeSyncModes("the resume is served from the watch cache's event buffer: no 410, no relist, real Deletes",
			func(ctx SpecContext, m e2e.SyncMode) {
				r := scenarios.ResumeAfterDrain(ctx, m.Setup(), scenarios.DrainInput{WatchCache: true, Compact: true, FailOver: true})
				Expect(r.Numbers.Reinitialisations).To(BeEmpty(), "no re-initialisation (%v)", r.Numbers.ReinitDetails)
				Expect(r.Tombstones).To(BeZero(), "the resumed watch delivered each delete with its final state")
				AddReportEntry("S5 outcome", "compaction does not reach a watch served by the watch cache: the resume at a compacted resourceVersion was accepted")
			})
	})

	Context("when a delete is immediately followed by compaction (etcd#10681, PrevKV=nil)", func() {
		DescribeTable("the deleted objects do not survive in the store",
			func(ctx SpecContext, m e2e.SyncMode, watchCache bool) {
				scenarios.DeleteThenCompact(ctx, m.Setup(), watchCache)
			},
			e2e.StreamingList.Entry("watch cache", true, Sample),
			e2e.ListWatch.Entry("watch cache", true),
			e2e.StreamingList.Entry("no watch cache", false),
			e2e.ListWatch.Entry("no watch cache", false),
		)
	})

	Context("when kube-apiserver restarts while the informer waits to resume", NeedsAPIServerRestart, NeedsHA, func() {
		e2e.DescribeSyncModes("without the watch cache the watch resumes from etcd: no relist, real Deletes",
			func(ctx SpecContext, m e2e.SyncMode) {
				r := scenarios.ResumeAfterDrain(ctx, m.Setup(), scenarios.DrainInput{WatchCache: false, Compact: false})
				Expect(r.Numbers.Reinitialisations).To(BeEmpty(), "no re-initialisation (%v)", r.Numbers.ReinitDetails)
				Expect(r.Tombstones).To(BeZero(), "the resumed watch delivered each delete with its final state")
			})

		e2e.DescribeSyncModes("with the watch cache the restarted apiserver answers the old resourceVersion 410: one relist",
			func(ctx SpecContext, m e2e.SyncMode) {
				r := scenarios.ResumeAfterDrain(ctx, m.Setup(), scenarios.DrainInput{WatchCache: true, Compact: false})
				Expect(r.Numbers.Reinitialisations).To(Equal(map[probe.Cause]int{probe.CauseGone: 1}), "one re-initialisation, caused by 410 Gone on the resume (%v)", r.Numbers.ReinitDetails)
				Expect(r.Tombstones).To(Equal(len(r.Deleted)), "every delete arrived as a DeletedFinalStateUnknown tombstone")
			})
	})
})
