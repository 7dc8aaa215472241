package scenarios

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S8Resync is S8's value: a resync in both sync modes, and its negative
// control.
var S8Resync = Register(Scenario{
	ID: "S8", Title: "resync", Labels: []string{"resync"},
	Specs: []Spec{
		{
			Text: "re-delivers every object from the indexer and sends no request to the apiserver", Sample: true,
			Entries: []Entry{{Run: func(ctx context.Context, s e2e.Setup, in Input) {
				ResyncSendsNoRequests(ctx, s, in.Probe())
			}}},
		},
		// A client whose watches time out after 1 s (a tweak of
		// timeoutSeconds) sends a new watch every second: the assertion of
		// zero requests during the resync window must catch it.
		{
			Text: "fails when the client re-watches every second",
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				tweak := informers.WithTweakListOptions(RewatchEverySecond)
				ResyncSendsNoRequests(ctx, s, probe.Options{FactoryOptions: []informers.SharedInformerOption{tweak}})
			},
			// Either S8 assertion may be the one that trips: the new
			// watches show up as requests, and when they end in relists
			// (clean close within a second) the relists can also keep
			// every pod from reaching its resyncs in the window. Both are
			// this spec failing.
			Fails: []string{RequestsDuringResyncs, ResyncsOf}, Because: "an S8 assertion catches a client that keeps requesting",
		},
	},
})

// S8 (seed 001): a resync re-delivers the indexer's objects as Updates with
// unchanged resourceVersions and must not reach the apiserver.
//
// Expected of client-go v0.36: tools/cache/reflector.go startResync calls
// r.store.Resync(), and DeltaFIFO.Resync (tools/cache/delta_fifo.go) queues
// Sync deltas for every key of the indexer (knownObjects); the shared
// informer turns them into OnUpdate(old, new) with old == new
// (shared_informer.go HandleDeltas / processDeltas). No list, no watch.
const (
	// S8's two assertions; its negative control matches either.
	ResyncsOf             = "resyncs of"
	RequestsDuringResyncs = "requests sent while resyncing"
	resyncPeriod          = time.Second
	resyncsWanted         = 3
	// resyncWindow bounds waiting for resyncsWanted resyncs of every pod.
	resyncWindow = 10 * resyncPeriod
)

// ResyncSendsNoRequests runs S8 (above) with the probe options given (a
// negative control tweaks the informer's factory).
func ResyncSendsNoRequests(ctx context.Context, s e2e.Setup, opts probe.Options) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	writer := env.Writer
	names := []string{"r1", "r2", "r3"}
	for _, n := range names {
		_, err := writer.CoreV1().Pods(env.Namespace).Create(ctx, e2e.Pod(env.Namespace, n), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	opts.Namespace, opts.Resync = env.Namespace, resyncPeriod
	pods := env.StartProbe(ctx, "pods", env.User, opts)
	pods.EventuallyConverged(ctx, env.Pods)
	e2e.Defer(ctx, func() { pods.Report(0) })

	before := pods.Recorder.Snapshot()
	e2e.By(ctx, fmt.Sprintf("waiting for %d resyncs of every pod (period %s)", resyncsWanted, resyncPeriod))
	resyncs := func() map[string]int {
		m := map[string]int{}
		for _, e := range pods.Recorder.Snapshot().Events[len(before.Events):] {
			if e.Resync() {
				m[e.Key]++
			}
		}
		return m
	}
	Eventually(func(g Gomega) {
		m := resyncs()
		for _, n := range names {
			g.Expect(m[env.Namespace+"/"+n]).To(BeNumerically(">=", resyncsWanted), ResyncsOf+" %s/%s", env.Namespace, n)
		}
	}).WithTimeout(resyncWindow).WithPolling(100 * time.Millisecond).Should(Succeed())

	after := pods.Recorder.Snapshot()
	newRequests := after.Requests[len(before.Requests):]
	Expect(newRequests).To(BeEmpty(), RequestsDuringResyncs+" over %d resync periods: %v", resyncsWanted, newRequests)
	Expect(after.ConsistencyChecks).To(HaveLen(len(before.ConsistencyChecks)), "consistency detector LISTs during %d resync periods", resyncsWanted)
	Expect(after.Dials).To(HaveLen(len(before.Dials)), "dials during the resyncs")
	for _, e := range after.Events[len(before.Events):] {
		Expect(e.Kind).To(Equal(probe.Update), "resync delivers only Updates: %+v", e)
		Expect(e.ResourceVersion).To(Equal(e.OldResourceVersion), "a resync does not change the resourceVersion: %+v", e)
	}
}

// RewatchEverySecond is the broken client of S8's negative control, a
// list-options tweak (informers.WithTweakListOptions): its watches time out
// after 1 s, so it sends a new watch every second.
func RewatchEverySecond(o *metav1.ListOptions) { one := int64(1); o.TimeoutSeconds = &one }
