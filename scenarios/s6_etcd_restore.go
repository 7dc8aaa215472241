package scenarios

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// staleWindow is how long the plain-restore spec watches the informer stay
// stale after its watch is open again (etcd's revision stays below the
// informer's meanwhile: only the apiserver's own lease renewals write).
const staleWindow = 5 * time.Second

// restoreBump is what careful operators add to etcd's revision on restore:
// more than the writes lost since the snapshot.
const restoreBump = 1_000_000

// postSnapshotWrites keeps etcd's revision after a plain restore (the
// snapshot's, plus what the cluster writes on its own once kube-apiserver
// is back) below the informer's resourceVersion for the whole of the
// longest plain-restore spec: the relist spec runs up to about 2.5 min
// after the restore (s6_relist_unavailable_rv.go: resume, backoff ceiling,
// bound). Measured background writes: a local cluster (kube-apiserver
// alone) about 10 revisions a minute (9 in the 55 s after a restore,
// 2026-11-23); a kind cluster about 100 a minute (kube-controller-manager's
// and kube-scheduler's leader leases renewed every 2 s, the kubelet's node
// lease, events: 94 in the relist spec's 60 s after a restore, 2026-11-26,
// which left 4 of the 100 writes this was then; the withdrawn S6 flake on
// kind, a relist at R answered 200, was the store reaching R). 1000 leaves
// four times the longest spec's writes on kind.
const postSnapshotWrites = 1000

// padWriters write postSnapshotWrites in parallel, each to a ConfigMap of
// its own (the pod informer does not watch them; the restore removes them).
const padWriters = 8

// restorableEtcd is what S6 needs of the cluster: snapshot and restore
// etcd, and read its revision after the restore.
type restorableEtcd interface {
	cluster.EtcdSnapshotter
	cluster.EtcdCompactor
}

// EtcdRestoreInput configures one run of EtcdRestored: the kind of
// restore, and an optional change to the informer's handler (negative
// controls break it).
type EtcdRestoreInput struct {
	// Bumped restores with --bump-revision and --mark-compacted; otherwise
	// the restore is plain: resourceVersions go backwards.
	Bumped bool
	// Wrap, when set, wraps the informer's event handler.
	Wrap func(cache.ResourceEventHandler) cache.ResourceEventHandler
}

// S6Restore is S6's first value: a plain and a bumped restore, both sync
// modes, and the negative control.
var S6Restore = Register(Scenario{
	ID: "S6", Title: "etcd restored from an earlier snapshot", Labels: []string{"etcd-restore"},
	Needs: []cluster.Capability{cluster.CapabilityEtcdSnapshot, cluster.CapabilityAPIServerRestart}, Disruptive: true,
	Specs: []Spec{
		{
			Context: "when the restore is plain: resourceVersions go backwards", Sample: true,
			Text: "the informer resumes a silent watch at its newer resourceVersion and stays stale (upstream limitation)",
			Entries: []Entry{{Feature: "plain restore", Run: func(ctx context.Context, s e2e.Setup, in Input) {
				EtcdRestored(ctx, s, EtcdRestoreInput{Wrap: in.Handler})
			}}},
		},
		{
			Context: "when the restore bumps revisions and marks them compacted",
			Text:    "the resume is answered 410, the informer relists, converges and observes the vanished pod's delete",
			Entries: []Entry{{Feature: "bumped restore", Run: func(ctx context.Context, s e2e.Setup, in Input) {
				EtcdRestored(ctx, s, EtcdRestoreInput{Bumped: true, Wrap: in.Handler})
			}}},
		},
		{
			Text:  "fails when the handler drops tombstones",
			Run:   RunWith(EtcdRestored, EtcdRestoreInput{Bumped: true, Wrap: DropTombstones}),
			Fails: []string{e2e.SawEveryDelete}, Because: "the S6 delete assertion catches a handler that ignores tombstones",
		},
	},
})

// EtcdRestored runs S6:
//
// S6 (seed 000): etcd is restored from a snapshot taken earlier, under a
// running informer. A pod created after the snapshot no longer exists, a pod
// deleted after it exists again, a pod updated after it is back at its old
// version. The informer must not keep what no longer exists. The informer is
// cut off (the proxy refuses connections) for the restore and let in once
// kube-apiserver is ready again, as clients come back after an operator's
// restore.
//
// Measured of client-go v0.36 against kube-apiserver 1.36 (watch cache on):
//   - The open watch ends when the apiserver is killed. The decoder takes
//     the reset (or unexpected EOF) for the end of the stream
//     (apimachinery pkg/watch/streamwatcher.go receive: io.ErrUnexpectedEOF
//     and net.IsProbableEOF, which matches "connection reset by peer", close
//     the result channel without an error event), so the reflector
//     re-watches at its last resourceVersion R (tools/cache/reflector.go
//     watch(): a watch older than 1 s that ends without error is resumed,
//     not relisted), backing off while refused (isWatchErrorRetriable).
//   - Plain restore: etcd's revision is now below R. kube-apiserver accepts a
//     plain watch at R anyway (k8s.io/apiserver cacher.go Watch:
//     waitUntilWatchCacheFreshAndForceAllEvents blocks, and answers "too
//     large resource version", only for sendInitialEvents watches) and its
//     cacheWatcher drops every event at or below R. The reflector sees a
//     healthy, silent watch: no error, so isTooLargeResourceVersionError and
//     the RV="" fallback of list()/watchList() never run. The informer keeps
//     the vanished pod, the newer version of the changed pod, and never sees
//     the resurrected one: it does not converge (until the watch times out
//     after 5-10 min and resumes at R again: still nothing). A known upstream
//     limitation: clients must be restarted after a plain restore, or the
//     restore must bump revisions. The spec asserts exactly that state, so it
//     fails if client-go starts recovering (then turn it into a convergence
//     spec) or if it gets worse (a relist loop, a closed watch); a fresh
//     informer, as after a client restart, converges.
//   - Bumped restore (etcdutl --bump-revision --mark-compacted): the resume
//     at R is below the restarted watch cache's first revision, answered 410
//     (isExpiredError), so the reflector relists and Replace delivers the
//     vanished pod as a DeletedFinalStateUnknown tombstone
//     (the_real_fifo.go Replace -> reconcileReplacement).
func EtcdRestored(ctx context.Context, s e2e.Setup, in EtcdRestoreInput) {
	if !in.Bumped {
		r := restoredUnderInformer(ctx, s, cluster.RestoreOptions{}, in.Wrap, nil)
		expectStaleAfterPlainRestore(ctx, r)
		return
	}
	restoredUnderInformer(ctx, s, cluster.RestoreOptions{BumpRevision: restoreBump, MarkCompacted: true}, in.Wrap, nil).expectConverged(ctx)
}

// restoredUnderInformer snapshots etcd under a synced informer, changes
// pods, and restores the snapshot while the informer is cut off; it returns
// once the informer may reconnect. instrument, when set, builds the
// informer's client from the test user's config (the scenario's fault
// injection; a negative control's broken client is s.Client).
func restoredUnderInformer(ctx context.Context, s e2e.Setup, opts cluster.RestoreOptions, wrap func(cache.ResourceEventHandler) cache.ResourceEventHandler, instrument func(*rest.Config) *rest.Config) restored {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	c := e2e.Require[restorableEtcd](ctx, env.Backend, "snapshot and restore etcd and read its revision")
	writer := env.Writer
	podsAPI := writer.CoreV1().Pods(env.Namespace)
	for _, name := range []string{"kept", "changed", "resurrected"} {
		_, err := podsAPI.Create(ctx, e2e.Pod(env.Namespace, name), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	cfg := env.User
	if instrument != nil {
		cfg = instrument(cfg)
	}
	pods := env.StartProbe(ctx, "pods", cfg, probe.Options{Namespace: env.Namespace, WrapHandler: wrap,
		// A wrapped handler here is the delete assertion's negative control:
		// leave it to that assertion, not the handler check.
		NoHandlerCheck: wrap != nil})
	pods.EventuallyConverged(ctx, env.Pods)

	e2e.By(ctx, "taking a snapshot, then creating, updating and deleting pods")
	snapshot := filepath.Join(e2e.TB(ctx).TempDir(), "etcd.db")
	snapRev, err := c.SnapshotEtcd(ctx, snapshot)
	Expect(err).NotTo(HaveOccurred())
	vanished, err := podsAPI.Create(ctx, e2e.Pod(env.Namespace, "vanished"), metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	changed, err := podsAPI.Get(ctx, "changed", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	changed.Labels = map[string]string{"changed": "after-the-snapshot"}
	_, err = podsAPI.Update(ctx, changed, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	endPad := env.TimePhase("server: writes after the snapshot")
	Expect(padRevisions(ctx, writer, env.Namespace, postSnapshotWrites)).To(Succeed(), "writes that take etcd's revision %d past the snapshot", postSnapshotWrites)
	endPad()
	Expect(podsAPI.Delete(ctx, "resurrected", metav1.DeleteOptions{GracePeriodSeconds: new(int64)})).To(Succeed())
	pods.EventuallyConverged(ctx, env.Pods)
	informerRV, err := strconv.ParseInt(pods.Informer.LastSyncResourceVersion(), 10, 64)
	Expect(err).NotTo(HaveOccurred())

	e2e.By(ctx, fmt.Sprintf("restoring etcd from the snapshot (revision %d) with %+v", snapRev, opts))
	reconnect := env.Proxy.RefuseNew()
	e2e.DeferCleanup(ctx, 0, func(context.Context) error { return reconnect() })
	endRestore := env.TimePhase("server: etcd restore")
	Expect(c.RestoreEtcd(ctx, snapshot, opts)).To(Succeed())
	endRestore()
	rev, err := c.EtcdRevision(ctx)
	Expect(err).NotTo(HaveOccurred())
	if opts.BumpRevision == 0 {
		Expect(rev).To(BeNumerically("<", informerRV), "after a plain restore etcd's revision is below the informer's resourceVersion")
	} else {
		Expect(rev).To(BeNumerically(">", informerRV), "after a bumped restore etcd's revision is above the informer's resourceVersion")
	}
	e2e.By(ctx, "letting the informer in again")
	Expect(reconnect()).To(Succeed())

	return restored{env: env, etcd: c, pods: pods, informerRV: informerRV, serverRV: rev, vanished: vanished}
}

type restored struct {
	env        *e2e.Env
	etcd       restorableEtcd
	pods       *e2e.Observed
	informerRV int64
	serverRV   int64
	vanished   *corev1.Pod
}

// expectConverged: the universal invariant, plus one 410 on the resume.
func (r restored) expectConverged(ctx context.Context) {
	ginkgo.GinkgoHelper()
	recovery := r.pods.EventuallyConverged(ctx, r.env.Pods)
	n := r.pods.Report(recovery)
	Expect(n.Reinitialisations).To(Equal(map[probe.Cause]int{probe.CauseGone: 1}), "one re-initialisation, caused by 410 Gone on the resume (%v)", n.ReinitDetails)
	r.pods.ExpectDeletesObserved(probe.Object{Key: r.env.Namespace + "/vanished", UID: string(r.vanished.UID)})
	r.env.Note("S6 outcome", fmt.Sprintf("bumped restore: 410 on the resume at %d (etcd at %d), one relist, converged in %s", r.informerRV, r.serverRV, recovery.Round(time.Millisecond)))
}

// resumedWatch waits for the informer's plain watch to be open again after
// the restore and asserts it resumed at the pre-restore resourceVersion.
func (r restored) resumedWatch(ctx context.Context) probe.Request {
	ginkgo.GinkgoHelper()
	var opened probe.Request
	Eventually(func(g Gomega) {
		opened = e2e.ExpectWatchOpen(g, "the informer", r.pods.Recorder.Snapshot().Requests)
		g.Expect(opened.SendInitialEvents).To(BeFalse(), "the open watch is a plain one, no streaming list: %+v", opened)
	}).WithContext(ctx).WithTimeout(e2e.EventTimeout).WithPolling(50*time.Millisecond).Should(Succeed(), "the informer resumes with a plain watch")
	Expect(opened.ResourceVersion).To(Equal(strconv.FormatInt(r.informerRV, 10)), "the informer resumed at its pre-restore resourceVersion, above etcd's %d", r.serverRV)
	return opened
}

// expectStaleAfterPlainRestore asserts the documented v0.36 behaviour after
// a plain restore, then that a fresh informer converges.
func expectStaleAfterPlainRestore(ctx context.Context, r restored) {
	ginkgo.GinkgoHelper()
	rv := strconv.FormatInt(r.informerRV, 10)
	opened := r.resumedWatch(ctx)
	Consistently(func(g Gomega) {
		rec := r.pods.Recorder.Snapshot()
		g.Expect(rec.Requests[len(rec.Requests)-1].ID).To(Equal(opened.ID), "no request after the resumed watch")
		g.Expect(rec.Requests[len(rec.Requests)-1].Events).To(BeZero(), "the resumed watch delivers nothing")
		err := probe.Converged(ctx, r.pods.Informer.GetStore(), r.env.Pods)
		g.Expect(err).To(MatchError(ContainSubstring(r.env.Namespace+"/vanished: in the store")), "the store keeps the pod that no longer exists")
	}).WithContext(ctx).WithTimeout(staleWindow).WithPolling(250*time.Millisecond).Should(Succeed(),
		"after a plain restore client-go v0.36 keeps a silent watch at resourceVersion %s (etcd at %d) and a stale store", rv, r.serverRV)
	n := r.pods.Report(0)
	Expect(n.Reinitialisations).To(BeEmpty(), "no re-initialisation: nothing tells the reflector its resourceVersion is from another history (%v)", n.ReinitDetails)
	r.env.UpstreamLimitation("after a plain etcd restore an informer's watch resumes at a resourceVersion from another history, accepted and silent: nothing tells the reflector, and the store keeps objects that no longer exist")
	r.env.Note("S6 outcome", fmt.Sprintf("plain restore: NOT CONVERGED (upstream limitation): watch resumed at %s with etcd at %d, accepted and silent for %s; the store keeps the vanished pod", rv, r.serverRV, staleWindow))

	e2e.By(ctx, "starting a fresh informer, as a restarted client would")
	fresh := r.env.StartProbe(ctx, "fresh-pods", r.env.User, probe.Options{Namespace: r.env.Namespace})
	fresh.Report(fresh.EventuallyConverged(ctx, r.env.Pods))
}

// padRevisions makes n writes (padWriters ConfigMaps created, then
// updated) so that etcd's revision grows by n.
func padRevisions(ctx context.Context, cs kubernetes.Interface, ns string, n int) error {
	g, ctx := errgroup.WithContext(ctx)
	cms := cs.CoreV1().ConfigMaps(ns)
	for w := range padWriters {
		writes := n / padWriters
		if w < n%padWriters {
			writes++
		}
		g.Go(func() error {
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("revision-pad-%d", w)}}, metav1.CreateOptions{})
			for i := 1; err == nil && i < writes; i++ {
				cm.Data = map[string]string{"write": strconv.Itoa(i)}
				cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			}
			return err
		})
	}
	return g.Wait()
}
