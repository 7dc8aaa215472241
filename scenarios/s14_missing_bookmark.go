package scenarios

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/ptr"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S14Bookmark is S14's value: its three streaming-list specs (client-go
// v0.36+), and its negative control.
var S14Bookmark = Register(Scenario{
	ID: "S14", Title: "streaming list without its end bookmark", Labels: []string{"missing-bookmark"},
	Specs: []Spec{
		{
			Text:    "waits on the open stream: never synced, no LIST, warns at 10 s; WaitForCacheSync gives up at its bound; syncs once the stream ends with the bookmark let through",
			Feature: "waits on the open stream", Mode: e2e.StreamingList, Sample: true, ClientGo: ">= 0.36.0",
			Run: func(ctx context.Context, s e2e.Setup, _ Input) { WaitsForTheBookmark(ctx, s) },
		},
		{
			Text:    "retries the streaming list at once each time the server ends a stream without the bookmark, never falls back to a LIST",
			Feature: "retries when the server ends the stream", Mode: e2e.StreamingList, ClientGo: ">= 0.36.0",
			Run: func(ctx context.Context, s e2e.Setup, _ Input) { RetriesWhenTheServerEndsTheStream(ctx, s) },
		},
		{
			Text:    "falls back to a LIST only when the streaming list ends within a second with no event",
			Feature: "falls back to a LIST only on a very short stream", Mode: e2e.StreamingList, ClientGo: ">= 0.36.0",
			Run: func(ctx context.Context, s e2e.Setup, _ Input) { FallsBackOnAVeryShortStream(ctx, s) },
		},
		// A transport that starts every streaming list with a synthesised
		// initial-events-end bookmark: the reflector "syncs" at once with an
		// empty store although the server's bookmark never came. The
		// no-sync assertion must catch it.
		{
			Text: "fails when the client syncs on a bookmark sent before the initial events", Mode: e2e.StreamingList, ClientGo: ">= 0.36.0",
			Client: EarlyInitialEventsEnd,
			Run:    RunBody(WaitsForTheBookmark),
			Fails:  []string{NoSyncWithoutBookmark}, Because: "the S14 assertion catches a sync without the server's bookmark",
		},
	},
})

// S14 (issue 12, kubernetes#135895): a streaming list whose
// initial-events-end bookmark never arrives, as from a server or proxy that
// does not send it (the fake clientset of #135895, proxies that strip
// bookmarks). Injected by e2e/httpfault's StreamInjector in the client's
// transport: the real server's stream passes through, minus the BOOKMARK
// annotated k8s.io/initial-events-end=true.
//
// Streaming-list mode only: with WatchListClient off the reflector LISTs and
// its watches resume from a resourceVersion without sendInitialEvents, so no
// initial-events-end bookmark is ever expected and dropping one changes
// nothing.
//
// Expected of client-go v0.36 (v0.36.6; the same functions are identical
// in v0.37.2), tools/cache/reflector.go:
//   - ListAndWatchWithContext calls watchList; only when watchList returns
//     an error does it fall back to r.list, a plain LIST.
//   - watchList loops: each turn opens a WATCH with sendInitialEvents=true,
//     resourceVersionMatch=NotOlderThan, allowWatchBookmarks,
//     resourceVersion rewatchResourceVersion() ("" before the first sync)
//     and timeoutSeconds int64(min + rand*(max-min)) of minWatchTimeout 5 min
//     and maxWatchTimeout 10 min (a shared informer cannot lower them), and
//     feeds a temporary store through handleListWatch, which returns only on
//     the bookmark (exitOnWatchListBookmarkReceived), the end of the stream,
//     an ERROR event or the context's end. Only after the bookmark does the
//     store get Replace: until then no handler is called and HasSynced
//     stays false. There is no client-side deadline: an open stream without
//     the bookmark is waited on until the server ends it (its
//     timeoutSeconds, minutes).
//   - newInitialEventsEndBookmarkTicker ticks every 10 s while waiting;
//     warnIfExpired logs (V(0), the context's logger) "Warning: event
//     bookmark expired" with "awaiting required bookmark event for initial
//     events stream, no events received for <since the request>" when no
//     event came, or "hasn't received required bookmark event marking the
//     end of initial events stream, received last event <d> ago" when the
//     last one is 10 s old.
//   - A stream that ends without the bookmark after a second or with an
//     event: handleAnyWatch returns (false, nil) and the loop opens the next
//     streaming list at once (no backoff, no LIST), from the same
//     resourceVersion, with a new temporary store. One that ends within a
//     second with no event is a VeryShortWatchError, which
//     isErrorRetriableWithSideEffectsFn does not retry: watchList returns
//     it and ListAndWatchWithContext falls back to a LIST (logged at V(4):
//     "Falling back to regular list"). That is the only fallback.
//   - shared_informer.go WaitForCacheSync polls HasSynced every 100 ms
//     (syncedPollPeriod) and returns false once its stop channel closes.
//
// The informer runs with a contextual logger of the spec's (klog.NewContext
// through the factory's RunWithContext), so the spec reads the warnings
// client-go logs for exactly this informer.
const (
	// bookmarkWarningTick: newInitialEventsEndBookmarkTicker's interval.
	bookmarkWarningTick = 10 * time.Second
	// warningLateness: how late after its tick the warning may be logged
	// (the ticker starts when the watch's response arrived).
	warningLateness = time.Second
	// warningTimeout bounds waiting for the first warning.
	warningTimeout = bookmarkWarningTick + warningLateness
	// minWatchTimeout, maxWatchTimeout: reflector.go defaultMinWatchTimeout
	// and defaultMaxWatchTimeout, the range of a streaming list's timeoutSeconds.
	minWatchTimeout = 5 * time.Minute
	maxWatchTimeout = 10 * time.Minute
	// missingBookmarkSyncBound is the caller's bound on WaitForCacheSync.
	missingBookmarkSyncBound = 2 * time.Second
	// syncedPollPeriod: how often WaitForCacheSync polls HasSynced.
	syncedPollPeriod = 100 * time.Millisecond
	// waitForSyncLateness: WaitForCacheSync returns within a poll of its
	// bound, plus scheduling on loaded cores.
	waitForSyncLateness = syncedPollPeriod + 400*time.Millisecond
	// maxRetryGap separates watchList's own retry (at once) from a
	// ListAndWatch attempt after the reflector's backoff, which waits at
	// least 800 ms (defaultBackoffInit; jitter only adds).
	maxRetryGap = 500 * time.Millisecond
	// streamingListRoundTrip bounds one streaming list of a few pods on
	// loopback, from request to bookmark, on loaded cores.
	streamingListRoundTrip = 2 * time.Second
	// syncAfterStreamEnd bounds the sync once a stream without the bookmark
	// ended and the bookmark is let through: the retry comes at once, its
	// stream carries the bookmark, and WaitForCacheSync notices at its next poll.
	syncAfterStreamEnd = maxRetryGap + streamingListRoundTrip + syncedPollPeriod
	// convergedAfterSync: the synced store is the streaming list's
	// consistent snapshot; nothing changed since, so a quorum read matches
	// it at once (one quorum read and a comparison).
	convergedAfterSync = time.Second
	// stuckWindow: how long the spec watches an informer that received
	// events on a stream without the bookmark, to see nothing reach it.
	stuckWindow = time.Second
	// serverStreamTimeout is the timeoutSeconds of the streaming lists the
	// server ends itself (a tweak, as in S3): long enough not to be a very
	// short watch.
	serverStreamTimeout = 2 * time.Second
	// serverEndsWanted: streams the server ends without the bookmark before
	// it is let through.
	serverEndsWanted = 2
	// s14Pods: pods in the namespace.
	s14Pods = 3
)

// NoSyncWithoutBookmark is the assertion every S14 spec makes while the
// bookmark is withheld (the negative control matches it).
const NoSyncWithoutBookmark = "no sync without the initial-events-end bookmark"

// The warnings of reflector.go initialEventsEndBookmarkTicker.produceWarningIfExpired.
const (
	warningNoEvents  = "awaiting required bookmark event for initial events stream, no events received for"
	warningLastEvent = "hasn't received required bookmark event marking the end of initial events stream"
	fallbackToList   = "Falling back to regular list"
)

// s14Numbers is what the S14 specs report besides the probe's numbers.
type s14Numbers struct {
	Framings                 map[string]int `json:"framings,omitempty"`
	BookmarksDropped         int            `json:"bookmarksDropped"`
	WaitForCacheSyncBound    string         `json:"waitForCacheSyncBound,omitempty"`
	WaitForCacheSyncReturned string         `json:"waitForCacheSyncReturned,omitempty"`
	TimeoutSeconds           string         `json:"timeoutSeconds,omitempty"`
	Warning                  string         `json:"warning,omitempty"`
	WarningAfter             string         `json:"warningAfter,omitempty"`
	StreamsEndedUnsynced     int            `json:"streamsEndedUnsynced,omitempty"`
	RetryGaps                []string       `json:"retryGaps,omitempty"`
	SyncAfterStreamEnd       string         `json:"syncAfterStreamEnd,omitempty"`
	ConvergedAfterStreamEnd  string         `json:"convergedAfterStreamEnd,omitempty"`
	SyncAfterUndo            string         `json:"syncAfterUndo,omitempty"`
	ConvergedAfterUndo       string         `json:"convergedAfterUndo,omitempty"`
	Fallback                 string         `json:"fallback,omitempty"`
}

// ms and us render durations for the report.
func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }
func us(d time.Duration) string { return d.Round(time.Microsecond).String() }

// WaitsForTheBookmark runs S14's first spec: with the bookmark dropped the
// informer waits on the open stream: never synced, no LIST, a warning at
// 10 s; WaitForCacheSync gives up at its bound; it syncs once the stream
// ends with the bookmark let through. s.Client changes the informer's
// client (a negative control breaks it).
func WaitsForTheBookmark(ctx context.Context, s e2e.Setup) {
	env, ctx, _, logs := startS14(ctx, s, 0)
	streams := &httpfault.StreamInjector{Faults: env.Faults}
	undo, dropped := streams.DropInitialEventsEnd(httpfault.StreamingLists)
	e2e.Defer(ctx, undo)
	pods := env.StartProbeUnsynced("pods", streams.Instrument(env.User), probe.Options{Namespace: env.Namespace, Informer: logs.podInformer(env.Namespace, nil)})
	var n s14Numbers
	var recovery time.Duration
	e2e.Defer(ctx, func() { n.report(env, pods, streams, dropped, recovery) })

	requireStreamingLists(ctx, pods)
	e2e.By(ctx, "waiting for the sync, bounded, while the bookmark is dropped")
	bounded, cancel := context.WithTimeout(ctx, missingBookmarkSyncBound)
	defer cancel()
	start := time.Now()
	err := pods.WaitForSync(bounded)
	waited := time.Since(start)
	n.WaitForCacheSyncBound, n.WaitForCacheSyncReturned = missingBookmarkSyncBound.String(), ms(waited)
	Expect(err).To(HaveOccurred(), "%s: WaitForCacheSync bounded by %s", NoSyncWithoutBookmark, missingBookmarkSyncBound)
	Expect(waited).To(BeNumerically(">=", missingBookmarkSyncBound), "WaitForCacheSync returned at the caller's bound, not before")
	Expect(waited).To(BeNumerically("<=", missingBookmarkSyncBound+waitForSyncLateness), "WaitForCacheSync returned within %s of the caller's bound", waitForSyncLateness)
	Eventually(dropped).WithContext(ctx).WithTimeout(e2e.EventTimeout).WithPolling(50*time.Millisecond).Should(Equal(1), "the server's bookmark was dropped")

	expectBookmarkWarning(ctx, pods, logs, &n)
	expectOneOpenStreamingList(ctx, pods, &n)

	e2e.By(ctx, "creating pods while the informer waits: they reach the stream, not the store")
	created := createPods(ctx, env, "waiting", s14Pods)
	// ADDED events only: a long-running apiserver (the existing backend's)
	// also sends the open stream a plain BOOKMARK about a second in.
	Eventually(func() int { return pods.Recorder.Snapshot().Requests[0].EventTypes["ADDED"] }).WithContext(ctx).WithTimeout(e2e.EventTimeout).WithPolling(50*time.Millisecond).
		Should(Equal(s14Pods), "the pods' ADDED events reached the client on the open stream")
	Consistently(func(g Gomega) { expectNothingReachedTheInformer(g, pods) }).WithContext(ctx).WithTimeout(stuckWindow).WithPolling(50 * time.Millisecond).Should(Succeed())

	e2e.By(ctx, "letting the bookmark through and ending the open stream")
	undo()
	ended := time.Now()
	Expect(streams.EndStreams(httpfault.StreamingLists)).To(Equal(1), "the injector ended the open streaming list")
	synced, converged := syncsThenConverges(ctx, pods, env, ended, syncAfterStreamEnd, "the stream's end (watchList retries at once)")
	n.SyncAfterStreamEnd, n.ConvergedAfterStreamEnd, recovery = ms(synced), ms(converged), converged

	expectRetriedAtOnce(pods, created, &n)
}

// expectBookmarkWarning checks client-go's warning about the stream that
// never ended its initial events, at its 10 s tick, when this client-go
// runs informers with a context (else it says why it could not).
func expectBookmarkWarning(ctx context.Context, pods *e2e.Observed, logs *logCapture, n *s14Numbers) {
	if logs.contextual.Load() {
		e2e.By(ctx, "waiting for client-go's warning at its 10 s tick")
		// Which warning is due depends on what the stream carried before
		// the tick: nothing (an empty namespace on a fresh apiserver), or
		// an event, e.g. a bookmark a long-running apiserver's watch cache
		// sent (seen on the existing backend): then the ticker warns only
		// at the first tick a full interval after the last event.
		var line logLine
		var sl probe.Request
		Eventually(func() bool {
			var ok bool
			sl = pods.Recorder.Snapshot().Requests[0]
			if noEventBeforeFirstTick(sl) {
				line, ok = logs.first(warningNoEvents)
			} else {
				line, ok = logs.first(warningLastEvent)
			}
			return ok
		}).WithContext(ctx).WithTimeout(warningTimeout+bookmarkWarningTick).WithPolling(50*time.Millisecond).
			Should(BeTrue(), "client-go warns %q or, after an event, %q", warningNoEvents, warningLastEvent)
		after := line.time.Sub(sl.Start)
		n.Warning, n.WarningAfter = line.message(), ms(after)
		if noEventBeforeFirstTick(sl) {
			Expect(after).To(BeNumerically(">=", bookmarkWarningTick), "the warning comes at the ticker's first tick, not before")
			Expect(after).To(BeNumerically("<=", bookmarkWarningTick+warningLateness), "the warning comes at the ticker's first tick")
			waitedFor := noEventsFor(line.text)
			Expect(waitedFor).To(BeNumerically(">=", bookmarkWarningTick), "the warning says how long the stream has waited: %s", line.text)
			Expect(waitedFor).To(BeNumerically("<", bookmarkWarningTick+warningLateness), "the warning says how long the stream has waited: %s", line.text)
		} else {
			pods.Note("S14 event before the first tick", fmt.Sprintf("%d event(s), the last a %s %s after the request", sl.Events, sl.LastEventType, ms(sl.LastEvent.Sub(sl.Start))))
			Expect(line.time.Sub(sl.LastEvent)).To(BeNumerically(">=", bookmarkWarningTick), "the warning comes a full tick after the last event, not before")
			Expect(line.time.Sub(sl.LastEvent)).To(BeNumerically("<=", 2*bookmarkWarningTick+warningLateness), "the warning comes at the first tick a full interval after the last event")
		}
	} else {
		pods.Note("S14 warning not checked", "this client-go runs informers without a context (no RunWithContext), so the spec cannot hand the reflector a logger of its own")
	}
}

// expectOneOpenStreamingList checks the informer's one request so far: a
// streaming list for the newest state, accepted and still open, with a
// timeoutSeconds the server would end only after minutes; no sync.
func expectOneOpenStreamingList(ctx context.Context, pods *e2e.Observed, n *s14Numbers) {
	e2e.By(ctx, "checking the one request: a streaming list, open, waited on")
	rec := pods.Recorder.Snapshot()
	Expect(rec.Requests).To(HaveLen(1), "%s: one request, the streaming list, no retry and no LIST while it is open", NoSyncWithoutBookmark)
	sl := rec.Requests[0]
	n.TimeoutSeconds = sl.TimeoutSeconds
	Expect(sl.Watch && sl.SendInitialEvents).To(BeTrue(), "a streaming list: %+v", sl)
	Expect(sl.Status).To(Equal(200), "the streaming list was accepted")
	Expect(sl.End.IsZero()).To(BeTrue(), "the streaming list is still open")
	Expect(sl.ResourceVersion).To(BeEmpty(), "the first streaming list asks for the newest state (resourceVersion \"\")")
	Expect(sl.ResourceVersionMatch).To(Equal(string(metav1.ResourceVersionMatchNotOlderThan)), "the streaming list's resourceVersionMatch")
	timeout, err := strconv.Atoi(sl.TimeoutSeconds)
	Expect(err).NotTo(HaveOccurred(), "timeoutSeconds %q", sl.TimeoutSeconds)
	Expect(timeout).To(And(BeNumerically(">=", minWatchTimeout.Seconds()), BeNumerically("<", maxWatchTimeout.Seconds())),
		"the streaming list's timeoutSeconds is in [minWatchTimeout, maxWatchTimeout): the server would end it after minutes")
	Expect(pods.Informer.HasSynced()).To(BeFalse(), NoSyncWithoutBookmark)
}

// expectRetriedAtOnce checks the two requests until the sync: the first
// streaming list, ended cleanly without its bookmark, and its retry, a
// streaming list again, at once, which delivered created.
func expectRetriedAtOnce(pods *e2e.Observed, created []*corev1.Pod, n *s14Numbers) {
	rec := pods.Recorder.Snapshot()
	Expect(rec.Requests).To(HaveLen(2), "two requests until the sync: the first streaming list and its retry")
	first, retry := rec.Requests[0], rec.Requests[1]
	Expect(first.CleanEOF).To(BeTrue(), "the first streaming list ended cleanly: %+v", first)
	Expect(first.InitialEventsEnd).To(BeFalse(), "the first streaming list never delivered the bookmark")
	Expect(retry.Watch && retry.SendInitialEvents).To(BeTrue(), "the retry is a streaming list, not a LIST: %+v", retry)
	Expect(retry.ResourceVersion).To(BeEmpty(), "the retry asks for the newest state again (never synced)")
	Expect(retry.InitialEventsEnd).To(BeTrue(), "the retry delivered the bookmark")
	gap := retry.Start.Sub(first.End)
	n.RetryGaps = []string{us(gap)}
	Expect(gap).To(BeNumerically("<", maxRetryGap), "the retry comes at once, not after a backoff")
	expectInitialAdds(rec, created)
}

// RetriesWhenTheServerEndsTheStream runs S14's second spec: each time the
// server ends a stream without the bookmark the informer retries the
// streaming list at once, and never falls back to a LIST.
func RetriesWhenTheServerEndsTheStream(ctx context.Context, s e2e.Setup) {
	env, ctx, created, logs := startS14(ctx, s, s14Pods)
	streams := &httpfault.StreamInjector{Faults: env.Faults}
	undo, dropped := streams.DropInitialEventsEnd(httpfault.StreamingLists)
	e2e.Defer(ctx, undo)
	// The tweak runs after the reflector set its options (S3): every
	// streaming list asks the server to end it after serverStreamTimeout.
	short := func(o *metav1.ListOptions) { o.TimeoutSeconds = ptr.To(int64(serverStreamTimeout.Seconds())) }
	// This spec's streams are JSON (the others': client-go's default,
	// protobuf), so each framing the injector rewrites meets a real server.
	cfg := rest.CopyConfig(env.User)
	cfg.ContentType = "application/json"
	pods := env.StartProbeUnsynced("pods", streams.Instrument(cfg), probe.Options{Namespace: env.Namespace, Informer: logs.podInformer(env.Namespace, short)})
	var n s14Numbers
	var recovery time.Duration
	e2e.Defer(ctx, func() { n.report(env, pods, streams, dropped, recovery) })

	requireStreamingLists(ctx, pods)
	e2e.By(ctx, fmt.Sprintf("waiting for the server to end %d streaming lists without their bookmark", serverEndsWanted))
	awaitServerEnds(ctx, pods)
	Expect(pods.Informer.HasSynced()).To(BeFalse(), NoSyncWithoutBookmark)
	Consistently(func(g Gomega) { expectNothingReachedTheInformer(g, pods) }).WithContext(ctx).WithTimeout(stuckWindow).WithPolling(50 * time.Millisecond).Should(Succeed())
	expectStreamsRetriedAtOnce(pods.Recorder.Snapshot(), &n)
	Expect(dropped()).To(BeNumerically(">=", n.StreamsEndedUnsynced), "each ended stream's bookmark was dropped")
	Expect(streams.Rewritten()).To(HaveKey("application/json"), "the streams were JSON")
	if logs.contextual.Load() {
		_, warned := logs.first(warningLastEvent)
		Expect(warned).To(BeFalse(), "no warning: each stream ended before the %s tick", bookmarkWarningTick)
	}

	e2e.By(ctx, "letting the bookmark through")
	undo()
	undone := time.Now()
	// The stream open now may have had its bookmark dropped already: it
	// ends at its timeout, and the next one carries the bookmark.
	bound := serverStreamTimeout + syncAfterStreamEnd
	synced, converged := syncsThenConverges(ctx, pods, env, undone, bound, "the bookmark being let through")
	n.SyncAfterUndo, n.ConvergedAfterUndo, recovery = ms(synced), ms(converged), converged
	rec := pods.Recorder.Snapshot()
	for _, r := range rec.Requests {
		if r.Start.Before(rec.Synced) {
			Expect(r.Watch && r.SendInitialEvents).To(BeTrue(), "no LIST before the sync: %+v", r)
		}
	}
	expectInitialAdds(rec, created)
}

// awaitServerEnds waits until the server ended serverEndsWanted of the
// informer's streaming lists.
func awaitServerEnds(ctx context.Context, pods *e2e.Observed) {
	endedStreams := func() int {
		k := 0
		for _, r := range pods.Recorder.Snapshot().Requests {
			if !r.End.IsZero() {
				k++
			}
		}
		return k
	}
	Eventually(endedStreams).WithContext(ctx).WithTimeout(serverEndsWanted*(serverStreamTimeout+streamingListRoundTrip+maxRetryGap)).WithPolling(50*time.Millisecond).
		Should(BeNumerically(">=", serverEndsWanted), "streaming lists ended by the server")
}

// expectStreamsRetriedAtOnce: every request so far is a streaming list for the
// newest state, each following the last at once (its gap recorded in n),
// each ended cleanly by the server after a second or more with the pods'
// ADDED events and no bookmark (counted in n).
func expectStreamsRetriedAtOnce(rec probe.Record, n *s14Numbers) {
	var prev *probe.Request
	for i := range rec.Requests {
		r := rec.Requests[i]
		Expect(r.Watch && r.SendInitialEvents).To(BeTrue(), "%s: request #%d is a streaming list, not a LIST or a plain watch: %+v", NoSyncWithoutBookmark, r.ID, r)
		Expect(r.ResourceVersion).To(BeEmpty(), "streaming list #%d asks for the newest state (never synced)", r.ID)
		if prev != nil {
			gap := r.Start.Sub(prev.End)
			n.RetryGaps = append(n.RetryGaps, us(gap))
			Expect(gap).To(BeNumerically("<", maxRetryGap), "streaming list #%d follows #%d at once, not after a backoff", r.ID, prev.ID)
		}
		if r.End.IsZero() {
			break
		}
		n.StreamsEndedUnsynced++
		Expect(r.CleanEOF).To(BeTrue(), "the server ended streaming list #%d cleanly: %+v", r.ID, r)
		Expect(r.Duration()).To(BeNumerically(">=", time.Second), "streaming list #%d lasted a second or more (not a very short watch)", r.ID)
		Expect(r.EventTypes["ADDED"]).To(Equal(s14Pods), "streaming list #%d carried the pods' ADDED events", r.ID)
		Expect(r.InitialEventsEnd).To(BeFalse(), "streaming list #%d carried no bookmark", r.ID)
		prev = &rec.Requests[i]
	}
}

// FallsBackOnAVeryShortStream runs S14's third spec: the informer falls
// back to a LIST only when the streaming list ends within a second with no
// event.
func FallsBackOnAVeryShortStream(ctx context.Context, s e2e.Setup) {
	env, ctx, created, logs := startS14(ctx, s, s14Pods)
	in := &httpfault.Injector{Faults: env.Faults}
	restore, answered := in.EndWatchesCleanly(httpfault.StreamingLists, 1)
	e2e.Defer(ctx, restore)
	pods := env.StartProbe(ctx, "pods", in.Instrument(env.User), probe.Options{Namespace: env.Namespace, Informer: logs.podInformer(env.Namespace, nil)})
	var n s14Numbers
	e2e.Defer(ctx, func() { n.report(env, pods, nil, nil, 0) })
	Expect(answered()).To(Equal(1), "the streaming list was answered with an empty stream")
	pods.EventuallyConverged(ctx, env.Pods)

	rec := pods.Recorder.Snapshot()
	Expect(len(rec.Requests)).To(BeNumerically(">=", 2), "requests: %+v", rec.Requests)
	sl, list := rec.Requests[0], rec.Requests[1]
	Expect(sl.Watch && sl.SendInitialEvents && sl.CleanEOF && sl.Events == 0).To(BeTrue(), "the streaming list ended at once with no event: %+v", sl)
	Expect(sl.Duration()).To(BeNumerically("<", time.Second), "a very short watch")
	Expect(list.Watch).To(BeFalse(), "the reflector fell back to a LIST: %+v", list)
	Expect(list.Method).To(Equal("GET"))
	Expect(list.ResourceVersion).To(Equal("0"), "the fallback LIST is served from the watch cache (relistResourceVersion before the first sync)")
	gap := list.Start.Sub(sl.End)
	n.RetryGaps = []string{us(gap)}
	Expect(gap).To(BeNumerically("<", maxRetryGap), "the fallback comes at once, in the same ListAndWatch, not after a backoff")
	if logs.contextual.Load() {
		line, ok := logs.first(fallbackToList)
		Expect(ok).To(BeTrue(), "client-go logs %q", fallbackToList)
		n.Fallback = line.message()
		Expect(line.text).To(ContainSubstring("very short watch"), "the fallback's cause")
	}
	Eventually(func() int { return len(pods.Recorder.Snapshot().Requests) }).WithContext(ctx).WithTimeout(e2e.EventTimeout).WithPolling(50*time.Millisecond).
		Should(BeNumerically(">=", 3), "a watch follows the LIST")
	w := pods.Recorder.Snapshot().Requests[2]
	Expect(w.Watch && !w.SendInitialEvents && w.ResourceVersion != "").To(BeTrue(), "after the LIST, a watch resuming from its resourceVersion: %+v", w)
	expectInitialAdds(rec, created)
}

// requireStreaming fails the spec unless s streams its lists: S14's
// specs are about streaming lists (their suite runs them in that mode
// only).
func requireStreaming(s e2e.Setup) {
	ginkgo.GinkgoHelper()
	Expect(s.Mode.Streaming).To(BeTrue(), "S14 runs in streaming-list mode, not %s", s.Mode)
}

// EarlyInitialEventsEnd is S14's broken client: a transport that starts
// every streaming list with a synthesised initial-events-end bookmark, so
// the reflector "syncs" at once with an empty store although the server's
// bookmark never came.
func EarlyInitialEventsEnd(cfg *rest.Config) *rest.Config {
	s := &httpfault.StreamInjector{}
	s.SendInitialEventsEndFirst(httpfault.StreamingLists, func() runtime.Object { return &corev1.Pod{} })
	return s.Instrument(cfg)
}

// requireStreamingLists waits for the answer to the informer's first
// request, a streaming list, and skips the spec when the server refused it
// (a kube-apiserver that does not serve streaming lists): then there is no
// bookmark to withhold.
func requireStreamingLists(ctx context.Context, pods *e2e.Observed) {
	ginkgo.GinkgoHelper()
	var first probe.Request
	Eventually(func() bool {
		rs := pods.Recorder.Snapshot().Requests
		if len(rs) == 0 {
			return false
		}
		first = rs[0]
		return first.Status != 0 || first.Err != ""
	}).WithContext(ctx).WithTimeout(e2e.EventTimeout).WithPolling(20*time.Millisecond).Should(BeTrue(), "the informer's first request was answered")
	Expect(first.Watch && first.SendInitialEvents).To(BeTrue(), "the informer's first request is a streaming list: %+v", first)
	if first.Status != 200 {
		e2e.Skip(ctx, fmt.Sprintf("the server answered the streaming list with %d %s: it does not serve streaming lists", first.Status, first.Err))
	}
}

// expectNothingReachedTheInformer: while the bookmark is withheld the
// streamed objects stay in watchList's temporary store.
func expectNothingReachedTheInformer(g Gomega, pods *e2e.Observed) {
	g.Expect(pods.Informer.HasSynced()).To(BeFalse(), NoSyncWithoutBookmark)
	g.Expect(pods.Informer.GetStore().List()).To(BeEmpty(), "%s: the informer's store is empty", NoSyncWithoutBookmark)
	g.Expect(pods.Recorder.Snapshot().Events).To(BeEmpty(), "%s: no handler was called", NoSyncWithoutBookmark)
}

// expectInitialAdds: the sync delivered each pod to the handler as an Add

// startS14 is the set-up S14's specs share: a streaming-list spec's Env
// (else it skips), before pods created ("before-0", ...), and a capture of
// the informer's log, where its warnings go.
func startS14(ctx context.Context, s e2e.Setup, before int) (*e2e.Env, context.Context, []*corev1.Pod, *logCapture) {
	requireStreaming(s)
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	created := createPods(ctx, env, "before", before)
	return env, ctx, created, &logCapture{log: e2e.FrontEndOf(ctx).Writer()}
}

// report reports S14's numbers (with the stream injector's counts, when
// the spec rewrote streams) and the informer's, its recovery taking
// recovery.
func (n *s14Numbers) report(env *e2e.Env, pods *e2e.Observed, streams *httpfault.StreamInjector, dropped func() int, recovery time.Duration) {
	if streams != nil {
		n.Framings, n.BookmarksDropped = streams.Rewritten(), dropped()
	}
	pods.Report(recovery)
	env.Note("S14 missing bookmark", *n)
}

// of the initial list.
func expectInitialAdds(rec probe.Record, created []*corev1.Pod) {
	ginkgo.GinkgoHelper()
	initial := map[string]bool{}
	for _, e := range rec.Events {
		if e.Kind == probe.Add && e.InInitialList {
			initial[e.Key] = true
		}
	}
	for _, p := range created {
		Expect(initial).To(HaveKey(p.Namespace+"/"+p.Name), "the handler got %s as an Add of the initial list", p.Name)
	}
}

func createPods(ctx context.Context, env *e2e.Env, prefix string, count int) []*corev1.Pod {
	ginkgo.GinkgoHelper()
	var out []*corev1.Pod
	for i := range count {
		p, err := env.Writer.CoreV1().Pods(env.Namespace).Create(ctx, e2e.Pod(env.Namespace, fmt.Sprintf("%s-%d", prefix, i)), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		out = append(out, p)
	}
	return out
}

var noEventsForRE = regexp.MustCompile(`no events received for ([0-9.]+[a-zµ]+)`)

// noEventsFor reads the duration a "no events received for" warning states.
func noEventsFor(text string) time.Duration {
	m := noEventsForRE.FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	d, _ := time.ParseDuration(m[1])
	return d
}

// logCapture collects what the informer under test logs through the
// logger of its context, line by line with the time of each.
type logCapture struct {
	mu    sync.Mutex
	lines []logLine
	// log is the spec's log, where each line goes too (nil: nowhere).
	log io.Writer
	// contextual: the factory ran the informer through RunWithContext, so
	// the reflector logs to this capture.
	contextual atomic.Bool
}

type logLine struct {
	time time.Time
	text string
}

// message is the line without klog's header.
func (l logLine) message() string {
	text := strings.TrimSpace(l.text)
	if i := strings.Index(text, "] "); i >= 0 {
		return text[i+2:]
	}
	return text
}

func (c *logCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.lines = append(c.lines, logLine{time.Now(), string(p)})
	c.mu.Unlock()
	if c.log != nil {
		fmt.Fprintln(c.log, strings.TrimSuffix(string(p), "\n")) // textlogger ends each line with one
	}
	return len(p), nil
}

func (c *logCapture) first(substr string) (logLine, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		if strings.Contains(l.text, substr) {
			return l, true
		}
	}
	return logLine{}, false
}

// podInformer picks a pod informer for the probe that logs to c (at
// verbosity 4, where the reflector says why it falls back to a LIST). It is
// the informer the factory's Core().V1().Pods() builds (NewFilteredPodInformer
// with the namespace index), wrapped to run with a logger in its context,
// and registered with the factory for the pod type (InformerFor), so the
// factory starts and stops it. The factory's own list tweaks cannot reach
// it (the factory keeps them private); tweak stands for them, and the
// factory's transform still applies.
func (c *logCapture) podInformer(namespace string, tweak func(*metav1.ListOptions)) func(informers.SharedInformerFactory) cache.SharedIndexInformer {
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(c), textlogger.Verbosity(4)))
	return func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.InformerFor(&corev1.Pod{}, func(cs kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			inf := coreinformers.NewFilteredPodInformer(cs, namespace, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, tweak)
			return loggedInformer{SharedIndexInformer: inf, logger: logger, c: c}
		})
	}
}

// loggedInformer runs its informer with a logger in the context.
type loggedInformer struct {
	cache.SharedIndexInformer
	logger klog.Logger
	c      *logCapture
}

// RunWithContext is what the factory calls (client-go v0.36 does); a
// factory that calls Run runs the informer as is, and the capture stays empty.
func (i loggedInformer) RunWithContext(ctx context.Context) {
	runner, ok := any(i.SharedIndexInformer).(interface{ RunWithContext(context.Context) })
	if !ok {
		i.SharedIndexInformer.Run(ctx.Done())
		return
	}
	i.c.contextual.Store(true)
	runner.RunWithContext(klog.NewContext(ctx, i.logger))
}

// noEventBeforeFirstTick: the streaming list carried no event before the
// warning ticker's first tick (the ticker starts with the response).
func noEventBeforeFirstTick(sl probe.Request) bool {
	return sl.FirstEvent.IsZero() || sl.FirstEvent.Sub(sl.Start) >= bookmarkWarningTick
}

// syncsThenConverges asserts the informer syncs within bound of since, then
// converges (store and handler calls) within bound+convergedAfterSync of
// it; it returns both times, measured from since. what names since.
func syncsThenConverges(ctx context.Context, pods *e2e.Observed, env *e2e.Env, since time.Time, bound time.Duration, what string) (synced, converged time.Duration) {
	ginkgo.GinkgoHelper()
	syncCtx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	Expect(pods.WaitForSync(syncCtx)).To(Succeed(), "the informer syncs within %s of %s", bound, what)
	synced = time.Since(since)
	pods.EventuallyConverged(ctx, env.Pods)
	converged = time.Since(since)
	Expect(converged).To(BeNumerically("<=", bound+convergedAfterSync), "converged to a quorum read within %s of %s", bound+convergedAfterSync, what)
	return synced, converged
}
