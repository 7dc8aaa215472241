package scenarios

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S5Compaction is S5's value: a compaction under an open watch, under a
// fail-over with and without the watch cache, right after a delete, and a
// restart while the informer waits to resume; with negative controls.
var S5Compaction = Register(Scenario{
	ID: "S5", Title: "etcd compaction", Labels: []string{"compaction"},
	Needs: []cluster.Capability{cluster.CapabilityEtcdCompaction}, Disruptive: true,
	Specs: []Spec{
		{
			Context: "when etcd is compacted while the informer is watching", Speed: Slow,
			Text:    "keeps the same watch: no re-initialisation, no new dial, later changes arrive",
			Entries: []Entry{{Modes: AllStacks, Feature: "compacted while watching", Run: RunBody(CompactedWhileWatching)}},
		},
		{
			Context: s5FailOverWithout, Needs: []cluster.Capability{cluster.CapabilityAPIServerRestart, cluster.CapabilityHA},
			Text: "the resume is answered 410, the informer relists and observes every delete as a tombstone",
			Entries: []Entry{{Modes: AllStacks, Feature: "fail-over without the watch cache", Run: func(ctx context.Context, s e2e.Setup, in Input) {
				s5Relisted(ResumeAfterDrain(ctx, s, DrainInput{WatchCache: false, Compact: true, FailOver: true, Wrap: in.Handler}))
			}}},
		},
		{
			Context: s5FailOverWithout, Text: "fails when the handler drops tombstones",
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				ResumeAfterDrain(ctx, s, DrainInput{WatchCache: false, Compact: true, FailOver: true, Wrap: DropTombstones})
			},
			Fails: []string{e2e.SawEveryDelete}, Because: "the S5 delete assertion catches a handler that ignores tombstones",
		},
		// The same control on the custom resource: the spec on the CRD
		// stack relies on the same delete assertion, over another decoder
		// and watch cache.
		{
			Context: s5FailOverWithout, Text: "fails when the handler drops tombstones (" + s5CRD.Name + ")", Mode: s5CRD,
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				ResumeAfterDrain(ctx, s, DrainInput{WatchCache: false, Compact: true, FailOver: true, Wrap: DropTombstones})
			},
			Fails: []string{e2e.SawEveryDelete}, Because: "the S5 delete assertion catches a handler that ignores the custom resource's tombstones",
		},
		{
			Context: "when etcd is compacted while the informer fails over between kube-apiservers with watch cache", Speed: Slow,
			Needs: []cluster.Capability{cluster.CapabilityAPIServerRestart, cluster.CapabilityHA},
			Text:  "the resume is served from the watch cache's event buffer: no 410, no relist, real Deletes",
			Entries: []Entry{{Feature: "fail-over with the watch cache", Run: func(ctx context.Context, s e2e.Setup, in Input) {
				r := ResumeAfterDrain(ctx, s, DrainInput{WatchCache: true, Compact: true, FailOver: true, Wrap: in.Handler})
				s5Resumed(r)
				r.Env.Note("S5 outcome", "compaction does not reach a watch served by the watch cache: the resume at a compacted resourceVersion was accepted")
			}}},
		},
		{
			Context: "when the informer relists a collection past one page after a compaction",
			Text:    "every page is listed, at the sync and at the relist: the store holds every object, every delete is heard",
			Entries: []Entry{{Run: RunBody(PagedRelist)}},
		},
		{
			Context: "when the informer relists a collection past one page after a compaction",
			Text:    "fails when the client's lists lose their continue token", Mode: e2e.ListWatch,
			Client: TruncateAtFirstPage,
			Run:    RunBody(PagedRelist),
			Fails:  []string{HeldEveryPage}, Because: "the S5 pages assertion catches a pager stopped after the first page",
		},
		{
			Context: "when a delete is immediately followed by compaction (etcd#10681, PrevKV=nil)",
			Text:    "the deleted objects do not survive in the store",
			Entries: []Entry{
				{Name: "watch cache", Feature: "delete then compact", Modes: []e2e.SyncMode{e2e.StreamingList}, Sample: true, Run: s5DeleteThenCompact(true)},
				{Name: "watch cache", Feature: "delete then compact", Modes: []e2e.SyncMode{e2e.ListWatch}, Run: s5DeleteThenCompact(true)},
				{Name: "no watch cache", Feature: "delete then compact without the watch cache", Run: s5DeleteThenCompact(false)},
			},
		},
		{
			Context: s5Restart, Needs: []cluster.Capability{cluster.CapabilityAPIServerRestart, cluster.CapabilityHA},
			Text: "without the watch cache the watch resumes from etcd: no relist, real Deletes",
			Entries: []Entry{{Feature: "restart without the watch cache", Run: func(ctx context.Context, s e2e.Setup, in Input) {
				s5Resumed(ResumeAfterDrain(ctx, s, DrainInput{WatchCache: false, Compact: false, Wrap: in.Handler}))
			}}},
		},
		{
			Context: s5Restart, Text: "with the watch cache the restarted apiserver answers the old resourceVersion 410: one relist",
			Entries: []Entry{{Feature: "restart with the watch cache", Run: func(ctx context.Context, s e2e.Setup, in Input) {
				s5Relisted(ResumeAfterDrain(ctx, s, DrainInput{WatchCache: true, Compact: false, Wrap: in.Handler}))
			}}},
		},
	},
})

const (
	s5FailOverWithout = "when etcd is compacted while the informer fails over between kube-apiservers without watch cache"
	s5Restart         = "when kube-apiserver restarts while the informer waits to resume"
)

// s5CRD is the custom resource's stack in streaming-list mode.
var s5CRD = e2e.StreamingList.OnStack(probe.StackDynamicCRD)

// s5DeleteThenCompact is DeleteThenCompact with or without the watch cache.
func s5DeleteThenCompact(watchCache bool) func(context.Context, e2e.Setup, Input) {
	return func(ctx context.Context, s e2e.Setup, _ Input) { DeleteThenCompact(ctx, s, watchCache) }
}

// s5Relisted asserts a drain's outcome where the resume was answered 410.
func s5Relisted(r DrainResult) {
	Expect(r.Numbers.Reinitialisations).To(Equal(map[probe.Cause]int{probe.CauseGone: 1}), "one re-initialisation, caused by 410 Gone on the resume (%v)", r.Numbers.ReinitDetails)
	Expect(r.Tombstones).To(Equal(len(r.Deleted)), "every delete arrived as a DeletedFinalStateUnknown tombstone (the relist never saw the final state)")
}

// s5Resumed asserts a drain's outcome where the watch resumed.
func s5Resumed(r DrainResult) {
	Expect(r.Numbers.Reinitialisations).To(BeEmpty(), "no re-initialisation (%v)", r.Numbers.ReinitDetails)
	Expect(r.Tombstones).To(BeZero(), "the resumed watch delivered each delete with its final state")
}

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

// cacherNoticeTimeout bounds the watch cache noticing a compaction: the
// etcd3 compactor learns of it through its watch on compact_rev_key
// (apiserver storage/etcd3/compact.go), and the cacher's compactor polls
// that every 15 s (storage/cacher/compactor.go compactorPollPeriod). Seen
// here: 11-12.6 s alone. The compaction must be past the resourceVersion
// asked for: etcd and the watch cache both serve the compacted revision
// itself (a CI run waited 45 s in vain when no write fell between the
// informer's sync and the compaction). The specs that wait are labelled slow.
const cacherNoticeTimeout = 45 * time.Second

// drainTimeout bounds the drained informer's watch ending (the
// fast-graceful-shutdown profile ends watches within 2 s of SIGTERM).
const drainTimeout = 15 * time.Second

// resumableWatchAge: a watch older than this that ends cleanly is resumed,
// not relisted (reflector.go handleAnyWatch: a watch closed within 1 s with
// no event is a VeryShortWatchError).
const resumableWatchAge = 1500 * time.Millisecond

// CompactedWhileWatching: compaction, noticed by the watch cache, does not
// touch an open watch.
func CompactedWhileWatching(ctx context.Context, s e2e.Setup) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	etcd := e2e.Require[cluster.EtcdCompactor](ctx, env.Backend, "compact etcd")
	writer, subjects := env.Writer, env.Subjects
	first, err := subjects.Create(ctx, "first")
	Expect(err).NotTo(HaveOccurred())
	for i := range 3 {
		_, err = subjects.SetLabels(ctx, "first", map[string]string{"round": fmt.Sprint(i)})
		Expect(err).NotTo(HaveOccurred())
	}
	pods := env.StartProbe(ctx, subjects.Name(), env.User, probe.Options{Namespace: env.Namespace})
	pods.EventuallyConverged(ctx, subjects.Quorum())
	before := pods.Recorder.Snapshot()
	oldRV := pods.Informer.LastSyncResourceVersion()

	e2e.By(ctx, "compacting etcd past the informer's resourceVersion and waiting until kube-apiserver's watch cache has noticed")
	// etcd serves reads at the compacted revision itself (only older ones
	// are gone), and so does the watch cache (watchCache.Compact drops the
	// snapshots below it): a compaction at exactly oldRV would never be
	// answered 410. One write the informer does not watch (a ConfigMap)
	// moves etcd's revision past oldRV first.
	_, err = writer.CoreV1().ConfigMaps(env.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bump-revision"}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	compacted, err := etcd.CompactEtcd(ctx, 0)
	Expect(err).NotTo(HaveOccurred())
	Expect(strconv.ParseInt(oldRV, 10, 64)).To(BeNumerically("<", compacted), "etcd is compacted past the informer's resourceVersion")
	start := time.Now()
	EventuallyExpired(ctx, subjects, oldRV)
	env.Note("watch cache noticed the compaction after", time.Since(start).Round(time.Millisecond).String())

	e2e.By(ctx, "changing "+subjects.Name()+" after the compaction")
	_, err = subjects.Create(ctx, "second")
	Expect(err).NotTo(HaveOccurred())
	Expect(subjects.Delete(ctx, "first")).To(Succeed())
	recovery := pods.EventuallyConverged(ctx, subjects.Quorum())
	n := pods.Report(recovery)

	after := pods.Recorder.Snapshot()
	Expect(n.Reinitialisations).To(BeEmpty(), "no re-initialisation after a compaction (%v)", n.ReinitDetails)
	Expect(after.Dials).To(HaveLen(len(before.Dials)), "no new dial after a compaction")
	Expect(after.Requests).To(HaveLen(len(before.Requests)), "no new request: the watch open before the compaction delivered the later changes")
	Expect(after.ConsistencyChecks).To(HaveLen(len(before.ConsistencyChecks)), "no new consistency detector LIST (no streaming list)")
	pods.ExpectDeletesObserved(probe.Object{Key: first.Key, UID: first.UID})
}

// EventuallyExpired waits until an exact list of s's resource at rv
// answers 410: its watch cache (one per resource, each with its own
// compactor poll) has dropped its snapshots below the compacted revision.
func EventuallyExpired(ctx context.Context, s *e2e.Subjects, rv string) {
	ginkgo.GinkgoHelper()
	Eventually(ctx, func() error {
		_, err := s.List(ctx, metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return nil
		}
		return fmt.Errorf("exact list at %s: want 410, got %v", rv, err)
	}).WithTimeout(cacherNoticeTimeout).WithPolling(250*time.Millisecond).Should(Succeed(), "kube-apiserver answers a list at the compacted resourceVersion %s with 410 within %s", rv, cacherNoticeTimeout)
}

// DrainInput configures one run of ResumeAfterDrain.
type DrainInput struct {
	// WatchCache kube-apiservers with the watch cache (the default).
	WatchCache bool
	// compact etcd while the informer is cut off.
	Compact bool
	// FailOver resume on apiserver 1 (running all along) instead of
	// restarting apiserver 0.
	FailOver bool
	Wrap     func(cache.ResourceEventHandler) cache.ResourceEventHandler
}

// DrainResult is what ResumeAfterDrain measured, for its callers' assertions.
type DrainResult struct {
	Numbers    e2e.Numbers
	Deleted    []probe.Object
	Tombstones int
	// Env is the spec's (for its notes).
	Env *e2e.Env
}

// ResumeAfterDrain: two apiservers over one etcd; the informer goes through
// the proxy to apiserver 0. The proxy refuses new connections and apiserver
// 0 drains (its watches end cleanly), so the reflector waits to resume at its
// last resourceVersion; meanwhile pods change through apiserver 1 and etcd
// may be compacted. Then the informer resumes, either on apiserver 0
// restarted or on apiserver 1. The universal invariant is checked here;
// callers assert the re-initialisations.
func ResumeAfterDrain(ctx context.Context, s e2e.Setup, in DrainInput) DrainResult {
	profile := "fast-graceful-shutdown"
	if !in.WatchCache {
		profile += "+no-watch-cache"
	}
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{APIServers: 2, Profile: profile})
	c := e2e.Require[apiServers](ctx, env.Backend, "stop and start one of several kube-apiservers")
	etcd := e2e.Require[cluster.EtcdCompactor](ctx, env.Backend, "compact etcd")
	writer1 := env.SubjectsFor(env.ConfigThrough(cluster.Admin, 1))
	server := writer1.Quorum()

	created := createDrainObjects(ctx, env.Subjects)
	pods, refusals := startDrainProbe(ctx, env, writer1.Name(), in.Wrap)
	pods.EventuallyConverged(ctx, server)
	lastRV := pods.Informer.LastSyncResourceVersion()
	awaitResumableWatch(ctx, pods)

	reconnect, letIn := cutOffWhileDraining(ctx, env, c, refusals, pods)
	deleted := changeThroughAPIServer1(ctx, writer1, created)
	if in.Compact {
		e2e.By(ctx, "compacting etcd past the informer's resourceVersion")
		_, err := etcd.CompactEtcd(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		if in.WatchCache {
			EventuallyExpired(ctx, writer1, lastRV)
		}
	}
	letBackIn(ctx, env, c, in.FailOver, reconnect, letIn)
	r := convergedAfterDrain(ctx, pods, server, deleted)
	r.Env = env
	return r
}

// createDrainObjects creates the objects ResumeAfterDrain deletes, updates
// and keeps, and returns their UIDs by name.
func createDrainObjects(ctx context.Context, subjects *e2e.Subjects) map[string]string {
	var created = map[string]string{}
	for _, name := range []string{"deleted-1", "deleted-2", "updated", "kept"} {
		o, err := subjects.Create(ctx, name)
		Expect(err).NotTo(HaveOccurred())
		created[name] = o.UID
	}
	return created
}

// startDrainProbe starts the informer on the resource named resource,
// through a transport that can refuse its requests, and returns both.
func startDrainProbe(ctx context.Context, env *e2e.Env, resource string, wrap func(cache.ResourceEventHandler) cache.ResourceEventHandler) (*e2e.Observed, *httpfault.Injector) {
	// The proxy refuses new connections while the informer is cut off, but
	// HTTP/2 may still send the re-watch on the connection the draining
	// apiserver has not closed yet; measured: that apiserver then accepts
	// the watch and ends it at once, a "very short watch", which the
	// reflector answers with a relist (1 run in 8). Refusing the informer's
	// requests in its transport too takes that race out; the drain, the 410
	// and the resume stay the server's.
	refusals := &httpfault.Injector{Faults: env.Faults}
	pods := env.StartProbe(ctx, resource, refusals.Instrument(env.User), probe.Options{Namespace: env.Namespace, WrapHandler: wrap,
		// A wrapped handler here is the delete assertion's negative control:
		// leave it to that assertion, not the handler check.
		NoHandlerCheck: wrap != nil})
	return pods, refusals
}

// awaitResumableWatch waits until the informer's watch is old enough to be
// resumed when it ends.
func awaitResumableWatch(ctx context.Context, pods *e2e.Observed) {
	// A watch that ends within a second with no event is a "very short
	// watch" (reflector.go handleAnyWatch), an error, hence a relist.
	Eventually(func() time.Duration {
		rs := pods.Recorder.Snapshot().Requests
		if last := rs[len(rs)-1]; last.OpenWatch() {
			return last.Duration()
		}
		return 0
	}).WithContext(ctx).WithTimeout(e2e.EventTimeout).WithPolling(50*time.Millisecond).Should(BeNumerically(">", resumableWatchAge),
		"the informer's watch has been open for more than %s", resumableWatchAge)
}

// cutOffWhileDraining refuses the informer's new connections and requests,
// drains apiserver 0, and waits until the informer's watch has ended
// cleanly and a re-watch was refused; it returns what lets the informer in
// again (also registered as clean-ups).
func cutOffWhileDraining(ctx context.Context, env *e2e.Env, c apiServers, refusals *httpfault.Injector, pods *e2e.Observed) (reconnect func() error, letIn func()) {
	e2e.By(ctx, "cutting the informer off: the proxy refuses new connections, apiserver 0 drains")
	reconnect = env.Proxy.RefuseNew()
	e2e.DeferCleanup(ctx, 0, func(context.Context) error { return reconnect() })
	letIn, _ = refusals.RefuseRequests(httpfault.Every)
	e2e.Defer(ctx, letIn)
	endStop := env.TimePhase("server: kube-apiserver stop (graceful)")
	Expect(c.StopAPIServer(ctx, 0, cluster.Graceful)).To(Succeed())
	endStop()
	Eventually(func(g Gomega) {
		rec := pods.Recorder.Snapshot()
		var ended, refused bool
		for _, r := range rec.Requests {
			ended = ended || r.Watch && r.CleanEOF
			refused = refused || ended && strings.Contains(r.Err, "connection refused")
		}
		g.Expect(ended).To(BeTrue(), "the informer's watch ended cleanly")
		g.Expect(refused).To(BeTrue(), "a re-watch was refused")
	}).WithContext(ctx).WithTimeout(drainTimeout).WithPolling(50*time.Millisecond).Should(Succeed(), "the drained informer waits to resume")
	Expect(probe.Reinitialisations(pods.Recorder.Snapshot())).To(BeEmpty(), "no re-initialisation while waiting to resume")
	return reconnect, letIn
}

// changeThroughAPIServer1 deletes, updates and creates objects through apiserver
// 1 and returns the deleted ones.
func changeThroughAPIServer1(ctx context.Context, writer1 *e2e.Subjects, created map[string]string) []probe.Object {
	e2e.By(ctx, "deleting, updating and creating "+writer1.Name()+" through apiserver 1")
	var deleted []probe.Object
	for _, name := range []string{"deleted-1", "deleted-2"} {
		Expect(writer1.Delete(ctx, name)).To(Succeed())
		deleted = append(deleted, probe.Object{Key: writer1.Key(name), UID: created[name]})
	}
	_, err := writer1.SetLabels(ctx, "updated", map[string]string{"changed": "while-cut-off"})
	Expect(err).NotTo(HaveOccurred())
	_, err = writer1.Create(ctx, "created")
	Expect(err).NotTo(HaveOccurred())
	return deleted
}

// letBackIn lets the informer in again: to apiserver 1 (failOver), or to
// apiserver 0 started again.
func letBackIn(ctx context.Context, env *e2e.Env, c apiServers, failOver bool, reconnect func() error, letIn func()) {
	if failOver {
		e2e.By(ctx, "letting the informer in to apiserver 1")
		restorePin, err := env.Proxy.Pin(1)
		Expect(err).NotTo(HaveOccurred())
		e2e.Defer(ctx, restorePin)
	} else {
		e2e.By(ctx, "starting apiserver 0 again and letting the informer in")
		Expect(c.StartAPIServer(ctx, 0)).To(Succeed())
	}
	Expect(reconnect()).To(Succeed())
	letIn()
}

// convergedAfterDrain waits for the universal invariant, reports how many
// deletes arrived as tombstones, and returns what the callers assert.
func convergedAfterDrain(ctx context.Context, pods *e2e.Observed, server probe.Lister, deleted []probe.Object) DrainResult {
	recovery := pods.EventuallyConverged(ctx, server)
	n := pods.Report(recovery)
	e2e.Logf(ctx, "S5 numbers: %s\n  %s", n, strings.Join(n.ReinitDetails, "\n  "))
	rec := pods.Recorder.Snapshot()
	tombstones := 0
	for _, e := range rec.Events {
		if e.Kind == probe.Delete && e.Tombstone {
			tombstones++
		}
	}
	pods.Note("S5 tombstones", fmt.Sprintf("%d of %d deletes arrived as DeletedFinalStateUnknown", tombstones, len(deleted)))
	pods.ExpectDeletesObserved(deleted...)
	return DrainResult{Numbers: n, Deleted: deleted, Tombstones: tombstones}
}

// DeleteThenCompact: each delete is followed at once by a compaction to the
// delete's revision, racing the watchers' fetch of the previous value.
func DeleteThenCompact(ctx context.Context, s e2e.Setup, watchCache bool) {
	spec := cluster.Spec{}
	if !watchCache {
		spec.Profile = "no-watch-cache"
	}
	env, ctx := e2e.StartEnv(ctx, s, spec)
	etcd := e2e.Require[cluster.EtcdCompactor](ctx, env.Backend, "compact etcd")
	const n = 5
	subjects := env.Subjects
	var uids []string
	for i := range n {
		o, err := subjects.Create(ctx, fmt.Sprintf("doomed-%d", i))
		Expect(err).NotTo(HaveOccurred())
		uids = append(uids, o.UID)
	}
	pods := env.StartProbe(ctx, subjects.Name(), env.User, probe.Options{Namespace: env.Namespace})
	pods.EventuallyConverged(ctx, subjects.Quorum())

	e2e.By(ctx, "deleting each of them and compacting etcd right after each delete")
	var deleted []probe.Object
	start := time.Now()
	for i := range n {
		Expect(subjects.Delete(ctx, fmt.Sprintf("doomed-%d", i))).To(Succeed())
		_, err := etcd.CompactEtcd(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		deleted = append(deleted, probe.Object{Key: subjects.Key(fmt.Sprintf("doomed-%d", i)), UID: uids[i]})
	}
	pods.EventuallyConverged(ctx, subjects.Quorum())
	num := pods.Report(time.Since(start))
	e2e.Logf(ctx, "S5 numbers: %s\n  %s", num, strings.Join(num.ReinitDetails, "\n  "))
	prevKVNil := 0
	for _, r := range pods.Recorder.Snapshot().Requests {
		if strings.Contains(r.ErrorMessage, "PrevKv=nil") {
			prevKVNil++
		}
	}
	env.Note("S5 outcome", fmt.Sprintf("%d ERROR events 'PrevKv=nil' reached the informer; re-initialisations %v", prevKVNil, num.Reinitialisations))
	pods.ExpectDeletesObserved(deleted...)
}
