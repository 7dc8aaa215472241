package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S5 (seeds 002, 000): etcd compaction, and what it does to an informer's
// resourceVersion.
//
// Where compaction can reach a watch, in kube-apiserver 1.36
// (k8s.io/apiserver pkg/storage/cacher): with the watch cache on, a watch is
// served from the cache's event buffer (watch_cache.go
// getAllEventsSinceLocked answers 410 only below the buffer's oldest event)
// and compaction only drops the cache's list snapshots (watchCache.Compact ->
// snapshots.RemoveLess, polled every 15 s by compactor.go), so compaction
// neither ends a cached watch nor refuses a resume the buffer still covers;
// a restarted apiserver's buffer starts at etcd's current revision, so it
// answers any older resume 410. Without the watch cache a watch is an etcd
// watch and a resume below the compacted revision is answered 410 at once.
// A delete whose previous value is compacted before the etcd watcher fetched
// it arrives with PrevKv=nil; since k8s 1.15 (PR #76675) the apiserver ends
// that watch with an error (etcd3/event.go parseEvent: "etcd event received
// with PrevKv=nil") instead of emitting a broken delete.
//
// Where an informer resumes at all, in client-go v0.36
// (tools/cache/reflector.go): a watch that ends with an error event, or
// within 1 s with no event (handleAnyWatch: VeryShortWatchError), returns
// from watch() with an error and ListAndWatch starts over: a relist at the
// last resourceVersion, "not older than", which compaction does not affect.
// A watch that ends cleanly, or a re-watch refused with "connection refused"
// or 429 (isWatchErrorRetriable), is resumed with a plain watch at the last
// resourceVersion. A 410 on that resume (isExpiredError) ends watch() and
// the reflector relists; the relist replaces the store, and every object
// that vanished meanwhile reaches OnDelete as a DeletedFinalStateUnknown
// tombstone (the_real_fifo.go Replace -> reconcileReplacement; RealFIFO is
// the informers' queue since InOrderInformers went GA in 1.36).
//
// So the disconnected specs cut the informer off the way a rolling
// apiserver replacement does: apiserver 0 drains (fast-graceful-shutdown
// profile: its watches end cleanly within 2 s) while new connections and
// requests are refused; the writes go through apiserver 1; the informer
// resumes on apiserver 0 restarted, or fails over to apiserver 1.
// S5: the scenario, and what it expects of client-go, is in
// scenarios/s5_compaction.go, shared with the e2e-framework features.
var _ = Describe("S5 etcd compaction", Label("compaction"), Disruptive, NeedsEtcdCompaction, func() {
	Context("when etcd is compacted while the informer is watching", Slow, func() {
		DescribeTable("keeps the same watch: no re-initialisation, no new dial, later changes arrive", append([]any{
			func(ctx SpecContext, m e2e.SyncMode) { m.Use(); scenarios.CompactedWhileWatching(ctx) }},
			e2e.BothSyncModes()...)...)
	})

	Context("when etcd is compacted while the informer fails over between kube-apiservers without watch cache", NeedsAPIServerRestart, NeedsHA, func() {
		DescribeTable("the resume is answered 410, the informer relists and observes every delete as a tombstone", append([]any{
			func(ctx SpecContext, m e2e.SyncMode) {
				m.Use()
				r := scenarios.ResumeAfterDrain(ctx, scenarios.DrainInput{WatchCache: false, Compact: true, FailOver: true})
				Expect(r.Numbers.Reinitialisations).To(Equal(map[probe.Cause]int{probe.CauseGone: 1}), "one re-initialisation, caused by 410 Gone on the resume (%v)", r.Numbers.ReinitDetails)
				Expect(r.Tombstones).To(Equal(len(r.Deleted)), "every delete arrived as a DeletedFinalStateUnknown tombstone (the relist never saw the final state)")
			}},
			e2e.BothSyncModes()...)...)

		It("fails when the handler drops tombstones", NegativeControl, func(ctx SpecContext) {
			err := InterceptGomegaFailure(func() {
				scenarios.ResumeAfterDrain(ctx, scenarios.DrainInput{WatchCache: false, Compact: true, FailOver: true, Wrap: dropTombstones})
			})
			Expect(err).To(MatchError(ContainSubstring("saw every delete")), "the S5 delete assertion catches a handler that ignores tombstones")
		})
	})

	Context("when etcd is compacted while the informer fails over between kube-apiservers with watch cache", Slow, NeedsAPIServerRestart, NeedsHA, func() {
		DescribeTable("the resume is served from the watch cache's event buffer: no 410, no relist, real Deletes", append([]any{
			func(ctx SpecContext, m e2e.SyncMode) {
				m.Use()
				r := scenarios.ResumeAfterDrain(ctx, scenarios.DrainInput{WatchCache: true, Compact: true, FailOver: true})
				Expect(r.Numbers.Reinitialisations).To(BeEmpty(), "no re-initialisation (%v)", r.Numbers.ReinitDetails)
				Expect(r.Tombstones).To(BeZero(), "the resumed watch delivered each delete with its final state")
				AddReportEntry("S5 outcome", "compaction does not reach a watch served by the watch cache: the resume at a compacted resourceVersion was accepted")
			}},
			e2e.BothSyncModes()...)...)
	})

	Context("when a delete is immediately followed by compaction (etcd#10681, PrevKV=nil)", func() {
		DescribeTable("the deleted objects do not survive in the store",
			func(ctx SpecContext, m e2e.SyncMode, watchCache bool) {
				m.Use()
				scenarios.DeleteThenCompact(ctx, watchCache)
			},
			Entry("streaming list, watch cache", Label(e2e.LabelStreamingList), e2e.StreamingList, true),
			Entry("LIST+WATCH, watch cache", Label(e2e.LabelListWatch), e2e.ListWatch, true),
			Entry("streaming list, no watch cache", Label(e2e.LabelStreamingList), e2e.StreamingList, false),
			Entry("LIST+WATCH, no watch cache", Label(e2e.LabelListWatch), e2e.ListWatch, false),
		)
	})

	Context("when kube-apiserver restarts while the informer waits to resume", NeedsAPIServerRestart, NeedsHA, func() {
		DescribeTable("without the watch cache the watch resumes from etcd: no relist, real Deletes", append([]any{
			func(ctx SpecContext, m e2e.SyncMode) {
				m.Use()
				r := scenarios.ResumeAfterDrain(ctx, scenarios.DrainInput{WatchCache: false, Compact: false})
				Expect(r.Numbers.Reinitialisations).To(BeEmpty(), "no re-initialisation (%v)", r.Numbers.ReinitDetails)
				Expect(r.Tombstones).To(BeZero(), "the resumed watch delivered each delete with its final state")
			}},
			e2e.BothSyncModes()...)...)

		DescribeTable("with the watch cache the restarted apiserver answers the old resourceVersion 410: one relist", append([]any{
			func(ctx SpecContext, m e2e.SyncMode) {
				m.Use()
				r := scenarios.ResumeAfterDrain(ctx, scenarios.DrainInput{WatchCache: true, Compact: false})
				Expect(r.Numbers.Reinitialisations).To(Equal(map[probe.Cause]int{probe.CauseGone: 1}), "one re-initialisation, caused by 410 Gone on the resume (%v)", r.Numbers.ReinitDetails)
				Expect(r.Tombstones).To(Equal(len(r.Deleted)), "every delete arrived as a DeletedFinalStateUnknown tombstone")
			}},
			e2e.BothSyncModes()...)...)
	})
})
