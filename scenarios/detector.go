package scenarios

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
)

// client-go's own oracle (issue 15, item 5). With
// KUBE_WATCHLIST_INCONSISTENCY_DETECTOR on (make exports it; package
// probe/watchlistdetector sets it before client-go's init otherwise), the
// reflector checks every streaming list before it replaces its store
// (tools/cache/reflector.go watchList -> checkWatchListDataConsistencyIfRequested
// -> consistencydetector.CheckDataConsistency, v0.31-v0.37): one LIST
// through the informer's own ListerWatcher at the streaming list's
// resourceVersion with resourceVersionMatch=Exact, its items compared by UID
// with what the stream delivered; a difference panics in the reflector's
// goroutine. The probe records that LIST apart from the informer's own
// requests (probe.IsConsistencyCheck) and turns the panic into a failure
// of the spec naming the detector and the informer (probe's detector
// handler, e2e): every streaming-list spec of the suite fails on a report.
//
// These specs show the detector at work on one informer: in streaming-list
// mode exactly one such LIST, answered 200, sent after the stream's events
// and before the sync, and no re-initialisation; in LIST+WATCH mode none.
// The negative control drops one object from every streaming list's
// initial events: the detector must report it and the spec fail with the
// detector and the informer named.
//
// StreamingListChecked runs it in s's mode, the informer's client through
// s.Client when set.
func StreamingListChecked(ctx context.Context, s e2e.Setup) {
	m := s.Mode
	if m.Streaming && !probe.DetectorEnabled() {
		e2e.Skip(ctx, "client-go's watch-list consistency detector is "+probe.DetectorState())
	}
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	for _, name := range []string{"d1", "d2", "d3"} {
		_, err := env.Writer.CoreV1().Pods(env.Namespace).Create(ctx, e2e.Pod(env.Namespace, name), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred(), "create pod %s", name)
	}
	pods := env.StartProbe(ctx, "pods", env.User, probe.Options{Namespace: env.Namespace})
	pods.EventuallyConverged(ctx, env.Pods)
	pods.Report(0)

	rec := pods.Recorder.Snapshot()
	Expect(probe.Reinitialisations(rec)).To(BeEmpty(), "no re-initialisation")
	reqs := rec.ObjectRequests()
	Expect(reqs).NotTo(BeEmpty())
	first := reqs[0]
	if !m.Streaming {
		Expect(first.Kind()).To(Equal("list"), "the informer's first request is a LIST: %+v", first)
		Expect(rec.ConsistencyChecks).To(BeEmpty(), "no consistency detector LIST after a LIST")
		return
	}
	Expect(first.Kind()).To(Equal("streaming list"), "the informer's first request is a streaming list: %+v", first)
	Expect(first.InitialEventsEnd).To(BeTrue(), "the streaming list ended its initial events: %+v", first)
	Expect(reqs).To(HaveLen(1), "the streaming list goes on as the watch; the detector's LIST is not among the informer's requests: %+v", reqs)
	Expect(rec.ConsistencyChecks).To(HaveLen(1), "one consistency detector LIST for one streaming list")
	c := rec.ConsistencyChecks[0]
	Expect(c.ResourceVersionMatch).To(Equal(string(metav1.ResourceVersionMatchExact)), "the detector's LIST is exact: %+v", c)
	// The informer synced at the resourceVersion of the bookmark that ended
	// the initial events; LastSyncResourceVersion read after the sync may
	// already have moved on (a later event or bookmark, e.g. other
	// namespaces' writes on a shared cluster).
	Expect(c.ResourceVersion).To(Equal(first.InitialEventsEndRV), "the detector's LIST is at the resourceVersion the informer synced at (its initial-events-end bookmark's)")
	Expect(c.Status).To(Equal(http.StatusOK), "the detector's LIST is answered: %+v", c)
	Expect(c.Start).To(BeTemporally(">", first.FirstEvent), "the detector's LIST follows the stream's events")
	Expect(c.Start).To(BeTemporally("<", rec.Synced), "the detector's LIST comes before the sync (the reflector checks before it replaces its store)")
	env.Note("consistency check took", c.Duration().Round(time.Millisecond).String())
}

// LossyStreamingLists is the detector's negative control's client: a
// transport that drops the first object of every streaming list's initial
// events (the informer would sync without it; the detector's LIST has it),
// for the rest of the spec of ctx; dropped counts the objects dropped.
func LossyStreamingLists(ctx context.Context) (client func(*rest.Config) *rest.Config, dropped func() int) {
	s := &httpfault.StreamInjector{}
	undo, dropped := s.DropInitialObject(httpfault.StreamingLists)
	e2e.Defer(ctx, undo)
	return s.Instrument, dropped
}
