package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S11Failover is S11's value: a failover to a warm and to a freshly
// restarted apiserver, both sync modes, and its negative control.
var S11Failover = Register(Scenario{
	ID: "S11", Title: "HA apiservers: failover", Labels: []string{"ha"},
	Needs: []cluster.Capability{cluster.CapabilityHA, cluster.CapabilityAPIServerRestart}, Disruptive: true,
	Specs: []Spec{
		{
			Text: "to a warm apiserver: the resume is accepted, no re-initialisation", Sample: true,
			Entries: []Entry{{Feature: "to a warm apiserver", Run: RunWith(HAFailover, FailoverInput{})}},
		},
		{
			Text:    "to a freshly restarted apiserver: 410, one relist",
			Entries: []Entry{{Feature: "to a freshly restarted apiserver", Run: RunWith(HAFailover, FailoverInput{FreshTarget: true})}},
		},
		// A client that pinned itself to the apiserver it first reached
		// (here: configured with apiserver 0's own URL, as after resolving
		// a load balancer name once) never reaches the survivor: the
		// failover bound must catch it.
		{
			Text: "fails when the client does not go through the failover address", Mode: e2e.StreamingList,
			Run:   RunWith(HAFailover, FailoverInput{PinnedToAPIServer0: true}),
			Fails: []string{FailoverConverged}, Because: "the S11 bound catches a client that cannot fail over",
		},
	},
})

// S11 (seed 000): two kube-apiservers over one etcd behind one address (the
// fault proxy, sending new connections to apiserver 0). Pods are written
// continuously through apiserver 1; apiserver 0, the informer's, is killed
// (SIGKILL) and the proxy fails over to apiserver 1: Pin(1) as the kill
// lands, so no reconnect races the failover. The kill itself closes every
// connection to apiserver 0 (the spec checks none is left), so the ResetAll
// of a failover would have nothing to do; called after the informer's
// reconnect it would reset the new connection too, a second fault, so it is
// not called. The informer must reconnect through the same address,
// converge within failoverBound, deliver every delete, and every
// re-initialisation must have a known cause. The report says whether the
// resume was accepted or answered 410 ("S11 outcome").
//
// Two failover targets:
//   - warm: apiserver 1 has been up all along; its watch cache holds every
//     event since the informer's last resourceVersion.
//   - fresh: apiserver 1 was restarted just before the failover (the pod
//     writes pause meanwhile), after a write the informer's pod watch does
//     not see (a configmap), so its watch cache starts at an etcd revision
//     newer than the informer's last resourceVersion (apiserver
//     pkg/storage/cacher/watch_cache.go getAllEventsSinceLocked: a
//     resourceVersion below the list's is "too old").
//
// Expected of client-go v0.36: the watch on the dead apiserver ends with
// io.ErrUnexpectedEOF, a normal close for apimachinery
// pkg/watch/streamwatcher.go receive(); the watch had events, so
// tools/cache/reflector.go watch() starts a plain WATCH from the last
// resourceVersion, which the proxy sends to apiserver 1.
//   - warm: the resume is accepted: no re-initialisation at all.
//   - fresh: the WATCH is answered 410 "too old resource version"; watch()
//     returns nil (isExpiredError) and ListAndWatch relists at the last
//     resourceVersion: exactly one re-initialisation, caused by 410. The
//     writes the informer missed arrive through the relist's Replace
//     (deletes as DeletedFinalStateUnknown tombstones). RunWithContext runs
//     ListAndWatch under delayHandler.Until with sliding=true, so even this
//     relist waits one backoff step (800 ms-1.6 s at first): pods created
//     and deleted in that window never reach the handler at all, which is
//     why only the deletes of pods the informer had seen are owed.
const (
	// FailoverConverged is S11's bound; its negative control matches it.
	FailoverConverged = "the informer converged through the failover"
	// failoverBound bounds the time from the end of the writes to
	// convergence: one reconnect (reflector backoff 800 ms with jitter, or
	// rest.Request.Watch's 1 s retry of a reset) plus at most one relist.
	failoverBound = 10 * time.Second
	// writesAcrossFailover is how many writes happen before the kill and
	// again after the failover.
	writesAcrossFailover = 10
	// writeInterval paces the continuous writer.
	writeInterval = 50 * time.Millisecond
	// writesTimeout bounds waiting for writesAcrossFailover writes.
	writesTimeout = 30 * time.Second
	// rbacSyncTimeout bounds waiting for a restarted apiserver to authorise
	// the test user (its RBAC informers sync after /readyz).
	rbacSyncTimeout = 30 * time.Second
)

// FailoverInput configures one run of HAFailover.
type FailoverInput struct {
	// FreshTarget restarts apiserver 1 before the failover.
	FreshTarget bool
	// PinnedToAPIServer0 builds the informer on apiserver 0's own URL
	// instead of the failover address (the negative control): a client that
	// pinned itself to the apiserver it first reached, after resolving a
	// load balancer name once.
	PinnedToAPIServer0 bool
}

// HAFailover runs S11 (above) on a cluster of two kube-apiservers.
func HAFailover(ctx context.Context, s e2e.Setup, in FailoverInput) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{APIServers: 2})
	c := e2e.Require[apiServers](ctx, env.Backend, "stop and start one of several kube-apiservers")
	writer, err := kubernetes.NewForConfig(env.ConfigThrough(cluster.Admin, 1))
	Expect(err).NotTo(HaveOccurred())
	server := probe.QuorumPods(writer, env.Namespace)

	cfg := env.User
	if in.PinnedToAPIServer0 {
		cfg = env.ConfigThrough(cluster.TestUser, 0)
	}
	pods := env.StartProbe(ctx, "pods", cfg, probe.Options{Namespace: env.Namespace})
	pods.EventuallyConverged(ctx, server)

	w := StartPodWriter(ctx, writer.CoreV1().Pods(env.Namespace), env.Namespace)
	e2e.Defer(ctx, func() { w.Stop() })
	w.WaitFor(writesAcrossFailover)
	if in.FreshTarget {
		restartFailoverTarget(ctx, env, c, writer, w)
	}
	killed, deleted := killAndFailOver(ctx, env, c, w)

	recovery := convergesThroughFailover(ctx, env, pods, server)
	env.EventuallyHandlersConverged(ctx, pods.Name, pods.Recorder, server, pods.Dir)
	// A relist cannot deliver the delete of a pod the informer never saw (created
	// and deleted while it was away): with a fresh target only the deletes of
	// pods it had seen are owed; with a warm one the resumed watch replays every
	// event, so every delete is.
	owed, unseen := deleted, 0
	if in.FreshTarget {
		owed, unseen = seenBefore(pods.Recorder.Snapshot(), deleted)
	}
	pods.ExpectDeletesObserved(owed...)
	n := pods.Report(recovery)

	rec := pods.Recorder.Snapshot()
	reinits := probe.Reinitialisations(rec)
	for _, ri := range reinits {
		Expect(ri.Cause).NotTo(Equal(probe.CauseUnknown), "every re-initialisation has a cause: %s", ri)
	}
	reportFailover(env, in, rec, reinits, n, killed, unseen)

	if in.FreshTarget {
		Expect(n.Reinitialisations).To(Equal(map[probe.Cause]int{probe.CauseGone: 1}),
			"re-initialisations by cause: exactly one relist after the fresh apiserver's 410 (%v)", n.ReinitDetails)
	} else {
		Expect(reinits).To(BeEmpty(), "re-initialisations by cause: none, the warm apiserver accepts the resume (%v)", n.ReinitDetails)
	}
}

// restartFailoverTarget pauses the writes, writes a configmap the pod watch
// does not see and restarts apiserver 1, so that its watch cache starts
// past the informer's resourceVersion.
func restartFailoverTarget(ctx context.Context, env *e2e.Env, c apiServers, writer kubernetes.Interface, w *Writer) {
	e2e.By(ctx, "pausing the writes, writing a configmap the pod watch does not see, and restarting apiserver 1")
	w.Pause()
	_, err := writer.CoreV1().ConfigMaps(env.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bump"}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	endRestart := env.TimePhase("server: kube-apiserver restart")
	Expect(c.RestartAPIServer(ctx, 1, cluster.Hard)).To(Succeed())
	endRestart()
	waitAuthorised(ctx, env, 1)
}

// killAndFailOver kills apiserver 0 as the proxy fails over to apiserver
// 1, then lets the writer write writesAcrossFailover more and stops it; it
// returns when the kill was and the pods the writer deleted.
func killAndFailOver(ctx context.Context, env *e2e.Env, c apiServers, w *Writer) (killed time.Time, deleted []probe.Object) {
	e2e.By(ctx, "killing apiserver 0 while the proxy fails over to apiserver 1")
	proxy := env.Proxy
	_, err := proxy.Pin(1)
	Expect(err).NotTo(HaveOccurred())
	killed = time.Now()
	Expect(c.StopAPIServer(ctx, 0, cluster.Hard)).To(Succeed())
	// The kill closed the dead apiserver's sockets and the proxy the client
	// side of each: ResetAll would find nothing of apiserver 0 to reset, and
	// would reset the informer's new connection to apiserver 1 instead.
	Eventually(func() []faultproxy.ConnStats { return onUpstream(proxy.Stats().Active(), 0) }).
		WithTimeout(e2e.EventTimeout).WithPolling(20*time.Millisecond).Should(BeEmpty(), "no connection to the dead apiserver left open")
	w.Resume()
	w.WaitFor(w.Count() + writesAcrossFailover)
	return killed, w.Stop()
}

// convergesThroughFailover waits for the informer's store to equal the
// server within failoverBound of the last write, records the bound in the
// timeline and returns how long the store took.
func convergesThroughFailover(ctx context.Context, env *e2e.Env, pods *e2e.Observed, server probe.Lister) time.Duration {
	ginkgo.GinkgoHelper()
	return convergesWithin(ctx, env, pods, server, failoverBound, "converged through the failover, from the last write", FailoverConverged)
}

// convergesWithin waits for the informer's store to equal the server
// within bound of now (the last write), records the bound (named what) in
// the timeline, met or missed, and returns how long the store took; the
// failure message starts with assertion (a negative control matches it).
func convergesWithin(ctx context.Context, env *e2e.Env, pods *e2e.Observed, server probe.Lister, bound time.Duration, what, assertion string) time.Duration {
	ginkgo.GinkgoHelper()
	start := time.Now()
	converged := false
	defer func() {
		if !converged { // the bound failed the spec: the timeline shows it missed
			env.RecordBound(what, start, time.Now(), bound, false)
		}
	}()
	Eventually(ctx, func(ctx context.Context) error {
		return probe.Converged(ctx, pods.Informer.GetStore(), server)
	}).WithTimeout(bound).WithPolling(50*time.Millisecond).Should(Succeed(),
		assertion+" within %s of the last write (record and logs: %s)", bound, pods.Dir)
	converged = true
	recovery := time.Since(start)
	env.RecordBound(what, start, start.Add(recovery), bound, true)
	return recovery
}

// reportFailover reports S11's outcome (whether the resume was accepted or
// answered 410, from the record rec and its re-initialisations) and the
// proxy's connections.
func reportFailover(env *e2e.Env, in FailoverInput, rec probe.Record, reinits []probe.Reinit, n e2e.Numbers, killed time.Time, unseen int) {
	gone := n.Reinitialisations[probe.CauseGone]
	resumed := 0
	for _, r := range rec.Requests {
		if r.Start.After(killed) && r.Watch && !r.SendInitialEvents && r.Status == http.StatusOK && r.ResourceVersion != "" {
			resumed++
		}
	}
	outcome := fmt.Sprintf("resume accepted by the other apiserver, no re-initialisation (failover target %s)", targetName(in))
	if len(reinits) > 0 {
		outcome = fmt.Sprintf("%d re-initialisation(s) (%v), %d of them after 410 (failover target %s)", len(reinits), n.ReinitDetails, gone, targetName(in))
		if ri := reinits[0]; ri.After != nil && !ri.After.End.IsZero() {
			outcome += fmt.Sprintf("; the relist started %s after the 410 (reflector backoff)", ri.Request.Start.Sub(ri.After.End).Round(time.Millisecond))
		}
	}
	if unseen > 0 {
		outcome += fmt.Sprintf("; %d pods created and deleted while it was away never reached it", unseen)
	}
	env.Note("S11 outcome", outcome)
	st := env.Proxy.Stats()
	env.Note("S11 proxy", fmt.Sprintf("%d connections accepted, %d to apiserver 1", st.Accepted, len(onUpstream(st.Connections, 1))))
	env.Logf("S11 %s: %s; numbers: %s; resumed watches %d", targetName(in), outcome, n, resumed)
}

func targetName(in FailoverInput) string {
	if in.FreshTarget {
		return "freshly restarted"
	}
	return "warm"
}

func onUpstream(cs []faultproxy.ConnStats, i int) []faultproxy.ConnStats {
	var out []faultproxy.ConnStats
	for _, c := range cs {
		if c.Upstream == i {
			out = append(out, c)
		}
	}
	return out
}

// seenBefore keeps the deleted objects the handler had seen added, and
// counts the others.
func seenBefore(rec probe.Record, deleted []probe.Object) (seen []probe.Object, unseen int) {
	added := map[[2]string]bool{}
	for _, e := range rec.Events {
		if e.Kind == probe.Add || e.Kind == probe.Update {
			added[[2]string{e.Key, e.UID}] = true
		}
	}
	for _, d := range deleted {
		if added[[2]string{d.Key, d.UID}] {
			seen = append(seen, d)
		} else {
			unseen++
		}
	}
	return seen, unseen
}

// waitAuthorised waits until the test user may list pods on apiserver i
// (a restarted apiserver answers 403 until its RBAC informers sync).
func waitAuthorised(ctx context.Context, env *e2e.Env, i int) {
	ginkgo.GinkgoHelper()
	cs, err := kubernetes.NewForConfig(env.ConfigThrough(cluster.TestUser, i))
	Expect(err).NotTo(HaveOccurred())
	Eventually(ctx, func(ctx context.Context) error {
		_, err := cs.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}).WithTimeout(rbacSyncTimeout).WithPolling(50*time.Millisecond).Should(Succeed(), "apiserver %d authorises the test user", i)
}
