package scenarios

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S21StreamCut is S21's value: the cut in streaming-list mode, and its
// negative control.
var S21StreamCut = Register(Scenario{
	ID: "S21", Title: "a streaming list cut inside its initial events", Labels: []string{"stream-cut"},
	Specs: []Spec{
		// Streaming-list mode only: a LIST+WATCH informer's streams carry
		// no initial events.
		{
			Text: "resumes from a resourceVersion it synced to and misses nothing", Feature: ModeAlone, Mode: e2e.StreamingList, Sample: true,
			Run: func(ctx context.Context, s e2e.Setup, in Input) { StreamCutInsideInitialEvents(ctx, s, in.Probe()) },
		},
		// Every streaming list asks for resourceVersion "1" (not older
		// than), which the server serves: a client that starts over from
		// somewhere it never was.
		{
			Text: "fails when the client lists from a resourceVersion it never synced to", Mode: e2e.StreamingList,
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				fromRV1 := func(o *metav1.ListOptions) {
					if o.SendInitialEvents != nil && *o.SendInitialEvents {
						o.ResourceVersion = "1"
					}
				}
				StreamCutInsideInitialEvents(ctx, s, probe.Options{TweakListOptions: fromRV1})
			},
			Fails: []string{ResumesFromSynced}, Because: "the S21 assertion catches a request from an RV the informer never synced to",
		},
	},
})

// ResumesFromSynced is S21's assertion: after a stream cut inside its
// initial events, the informer's next request starts from a
// resourceVersion it really synced to.
const ResumesFromSynced = "the request after the cut starts from a resourceVersion the informer synced to"

// S21Objects is how many objects S21's streaming lists carry; S21CutAfter
// how many of them pass before the cut.
const (
	S21Objects  = 30
	S21CutAfter = 10
)

// StreamCutInsideInitialEvents is S21 (streaming-list mode): a streaming
// list is cut in the middle of its initial events (after S21CutAfter of
// its objects, before the initial-events-end bookmark: the client reads an
// unexpected EOF, httpfault.StreamInjector.CutInitialEvents), twice: the
// informer's first sync, and a relist after it synced (its watch ended,
// the resume answered 410, five objects created meanwhile). After each cut
// the informer's next request must start from a resourceVersion it really
// synced to ("", or one it had synced: its LastSyncResourceVersion or an
// event's), never from one seen only inside the cut stream, and it must
// converge with no object missed (the consistency detector checks each
// streaming list too).
//
// Expected of client-go v0.36 (tools/cache/reflector.go watchList): the
// stream's objects go to a temporary store, and the resourceVersion seen
// in it only to a local variable; the store and lastSyncResourceVersion
// change only after the initial-events-end bookmark. An error before it
// stops the watch and retries with a clean state at
// rewatchResourceVersion(): "" after a 410 or before the first sync, else
// the last synced resourceVersion.
func StreamCutInsideInitialEvents(ctx context.Context, s e2e.Setup, opts probe.Options) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	writer := env.Subjects
	server := writer.Quorum()
	createNamed(ctx, writer, "listed-%02d", S21Objects)
	streams := &httpfault.StreamInjector{Faults: env.Faults}
	faults := &httpfault.Injector{Faults: env.Faults}
	cfg := streams.Instrument(faults.Instrument(env.User))

	e2e.By(ctx, fmt.Sprintf("the first streaming list is cut after %d of its %d objects", S21CutAfter, S21Objects))
	restoreCut, cut := streams.CutInitialEvents(httpfault.StreamingLists, S21CutAfter, 1)
	opts.Namespace = env.Namespace
	obs := env.StartProbe(ctx, writer.Name(), cfg, opts)
	restoreCut()
	Expect(cut()).To(Equal(1), "the first streaming list was cut")
	obs.EventuallyConverged(ctx, server)
	// "" and "0" start from scratch (a consistent read, any state: a LIST
	// after the reflector gave up streaming uses "0" before a first sync,
	// reflector.go relistResourceVersion).
	synced := map[string]bool{"": true, "0": true}
	checked := expectResumeFromSynced(obs, synced, 0)

	e2e.By(ctx, "after the sync: five objects created, the watch ended, its resume answered 410; the relist is cut too")
	createNamed(ctx, writer, "later-%d", 5)
	obs.EventuallyConverged(ctx, server)
	synced[obs.Informer.LastSyncResourceVersion()] = true
	for _, e := range obs.Recorder.Snapshot().Events {
		synced[e.ResourceVersion] = true
	}
	restoreCut, cut = streams.CutInitialEvents(httpfault.StreamingLists, S21CutAfter, 1)
	defer restoreCut()
	restoreGone, gone := faults.EndWatchesWithError(httpfault.Watches, 1, 410, metav1.StatusReasonExpired, "too old resource version (injected by S21)")
	defer restoreGone()
	Eventually(func() int { return streams.EndStreams(httpfault.StreamingLists) }).WithTimeout(e2e.EventTimeout).Should(BeNumerically(">=", 1), "the informer's streaming list ended")
	Eventually(func() int { return cut() }).WithTimeout(e2e.EventTimeout).WithPolling(50*time.Millisecond).Should(Equal(1), "the resume was answered 410 (%d) and the relist's streaming list was cut", gone())
	recovery := obs.EventuallyConverged(ctx, server)
	n := obs.Report(recovery)
	checked += expectResumeFromSynced(obs, synced, checked)
	env.Note("S21 resumes", fmt.Sprintf("%d streaming lists cut after %d of their objects; the requests after them started at resourceVersions the informer had synced to", checked, S21CutAfter))
	Expect(checked).To(Equal(2), "two cut streaming lists were followed by a request; numbers: %s", n)
}

// expectResumeFromSynced checks the request after each cut streaming list
// (from the skip-th cut on) and returns how many it checked.
func expectResumeFromSynced(obs *e2e.Observed, synced map[string]bool, skip int) int {
	reqs := obs.Recorder.Snapshot().ObjectRequests()
	seen, checked := 0, 0
	for i, r := range reqs {
		if !(r.Watch && r.SendInitialEvents && !r.InitialEventsEnd && r.Err != "" && r.Status == 200) {
			continue
		}
		if seen++; seen <= skip || i+1 >= len(reqs) {
			continue
		}
		next := reqs[i+1]
		rvs := make([]string, 0, len(synced))
		for rv := range synced {
			rvs = append(rvs, fmt.Sprintf("%q", rv))
		}
		obs.Note(fmt.Sprintf("S21 after cut %d", seen), fmt.Sprintf("%s %s at resourceVersion %q (cut stream: %s at %q, %d events, %s)", next.Kind(), next.Path, next.ResourceVersion, r.Kind(), r.ResourceVersion, r.Events, r.Err))
		Expect(synced[next.ResourceVersion]).To(BeTrue(), ResumesFromSynced+": %s at %q after the cut %s; synced to: %v", next.Kind(), next.ResourceVersion, r.Kind(), rvs)
		checked++
	}
	return checked
}
