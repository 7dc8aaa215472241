package scenarios

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
)

// The terms of the bound, each from the source it is cited from.
const (
	// watchCacheBlockTimeout is k8s.io/apiserver
	// pkg/storage/cacher/watch_cache.go blockTimeout: how long
	// waitUntilFreshAndBlock waits for the watch cache to reach a requested
	// resourceVersion before answering "too large resource version".
	watchCacheBlockTimeout = 3 * time.Second
	// tooLargeRetryAfter is watch_cache.go
	// resourceVersionTooHighRetrySeconds, sent as Retry-After.
	tooLargeRetryAfter = 1 * time.Second
	// restClientMaxRetries is client-go rest/request.go NewRequest's
	// maxRetries: rest/with_retry.go IsNextRetry retries a 5xx carrying
	// Retry-After until the attempts exceed it.
	restClientMaxRetries = 10
	// reflectorBackoffCeiling is the longest the reflector waits before
	// ListAndWatch runs again: tools/cache/reflector.go defaultBackoffMax
	// (30 s) with defaultBackoffJitter 1.0 (apimachinery wait.Jitter: [d, 2d)).
	reflectorBackoffCeiling = 2 * 30 * time.Second
	// shortWatch is reflector.go handleAnyWatch's limit: a watch that ends
	// sooner with no event is a VeryShortWatchError.
	shortWatch = time.Second
	// relistSlack covers what the bound's terms do not: the fallback list,
	// the informer's Replace and handler calls, the request round trips, on
	// a 2-core host shared with other runs.
	relistSlack = 5 * time.Second
)

// RelistConverged names the bound's assertion; the negative control
// matches it.
const RelistConverged = "converges after the relist at an unavailable resourceVersion within"

// relistExpectation is what the relist at R must look like in a sync mode.
type relistExpectation struct {
	// tooLarge is how many answers "too large resource version" the client
	// gets before it lists at "".
	tooLarge int
	// bound is from the start of the first relist at R to convergence.
	bound time.Duration
}

func expectedRelist(m e2e.SyncMode) relistExpectation {
	if m.Streaming {
		// One ERROR event after the wait; the retry at "" follows at once.
		return relistExpectation{tooLarge: 1, bound: watchCacheBlockTimeout + relistSlack}
	}
	// The REST client's own retries: every answer waits blockTimeout, every
	// retry Retry-After first.
	n := restClientMaxRetries + 1
	return relistExpectation{tooLarge: n, bound: time.Duration(n)*watchCacheBlockTimeout + restClientMaxRetries*tooLargeRetryAfter + relistSlack}
}

// S6Relist is S6's second value: the relist after a plain restore, in both
// sync modes (LIST+WATCH slow), and its negative control.
var S6Relist = Register(Scenario{
	ID: "S6", Title: "etcd restored from an earlier snapshot, then a relist", Labels: []string{"etcd-restore"},
	Needs: []cluster.Capability{cluster.CapabilityEtcdSnapshot, cluster.CapabilityAPIServerRestart}, Disruptive: true,
	Specs: []Spec{
		// LIST+WATCH takes a minute by design (the REST client's 11 tries
		// of the LIST, expectedRelist): slow; the streaming list seconds.
		{
			Text: "plain restore, then a relist: the LIST at the informer's resourceVersion is answered too large and the reflector falls back to a consistent list",
			Entries: []Entry{
				{Modes: []e2e.SyncMode{e2e.StreamingList}, Run: s6Relist},
				{Modes: []e2e.SyncMode{e2e.ListWatch}, Speed: Slow, Run: s6Relist},
			},
		},
		// A client stack that sends its consistent relist (resourceVersion
		// "") at the last resourceVersion it listed at never gets off R, as
		// client-go before k8s#107133's fix: the bound must catch it. In
		// streaming-list mode, whose bound (8 s) fails in a third of the
		// time LIST+WATCH's 48 s would take.
		{
			Text: "fails when the client retries the same resourceVersion forever", Mode: e2e.StreamingList,
			Client: PinListResourceVersion,
			Run:    RunBody(RelistAfterPlainRestore),
			Fails:  []string{RelistConverged}, Because: "the S6 relist bound catches a client that never falls back to a consistent list",
		},
	},
})

// s6Relist is RelistAfterPlainRestore, an entry's body.
func s6Relist(ctx context.Context, s e2e.Setup, _ Input) { RelistAfterPlainRestore(ctx, s) }

// S6, continued (issue 12, k8s#107133): a plain etcd restore, then anything
// that makes the informer re-initialise. The relist is at the informer's
// resourceVersion R, which the restored etcd has not reached and, on a quiet
// resource, will not reach: the server cannot serve it, and the reflector
// must fall back to a consistent list (resourceVersion "") instead of
// asking for R forever, as it did before k8s#107133 was fixed.
//
// How the relist is reached: S6's plain-restore spec shows the resumed
// watch at R is accepted and silent, so nothing re-initialises by itself.
// Here the connection is lost (the proxy resets it; the reset watch, older
// than a second, ends without an error: apimachinery
// pkg/watch/streamwatcher.go receive, net.IsProbableEOF) and the watch that
// resumes at R is closed by the server at once with no event
// (httpfault.EndWatchesCleanly): client-go tools/cache/reflector.go
// handleAnyWatch makes that a VeryShortWatchError, watch() returns,
// ListAndWatch runs again after the reflector's backoff, at R.
//
// Expected of client-go v0.36 against kube-apiserver 1.36 (watch cache on):
//   - LIST+WATCH: reflector.go list() lists at relistResourceVersion() = R
//     with pager.PageSize = 0 (RV neither "" nor "0"), so no limit and the
//     watch cache serves it (k8s.io/apiserver pkg/storage/cacher/delegator
//     ShouldDelegateList: not delegated; watch_cache.go
//     waitUntilFreshAndList -> waitAndListLatestRV). waitUntilFreshAndBlock
//     waits blockTimeout (3 s) for the cache to reach R, then returns
//     storage.NewTooLargeResourceVersionError(R, current,
//     resourceVersionTooHighRetrySeconds = 1): HTTP 504, reason Timeout,
//     cause ResourceVersionTooLarge, message "Timeout: Too large resource
//     version: R, current: C" (apimachinery errors.go NewTimeoutError) and
//     a Retry-After: 1 header (endpoints/handlers/responsewriters/writers.go
//     ErrorNegotiated, from Details.RetryAfterSeconds). client-go's REST client retries a 5xx carrying Retry-After by
//     itself (rest/with_retry.go IsNextRetry and checkWait; maxRetries 10
//     from rest/request.go NewRequest; Before sleeps the Retry-After), so
//     the reflector sees the error only after 11 answers, about 11 x 3 s +
//     10 x 1 s. Then list(): isTooLargeResourceVersionError ->
//     setIsLastSyncResourceVersionUnavailable(true) -> list again at
//     relistResourceVersion() = "": a consistent read, served, and Replace
//     delivers the vanished pod as a DeletedFinalStateUnknown tombstone.
//   - Streaming list: watchList() asks at rewatchResourceVersion() = R with
//     sendInitialEvents=true and resourceVersionMatch=NotOlderThan. cacher.go
//     Watch -> waitUntilWatchCacheFreshAndForceAllEvents ->
//     waitUntilFreshAndBlock: the same 3 s wait and the same error, but a
//     watch returns it as newErrWatcher: HTTP 200 and one ERROR event, which
//     the REST client cannot retry. handleListWatch returns it;
//     isErrorRetriableWithSideEffectsFn sets the resourceVersion unavailable
//     and watchList asks again at once at rewatchResourceVersion() = "".
//
// Quiet resource: after the restore nothing writes pods; etcd's revision
// grows only with the cluster's own writes (kube-apiserver's lease
// renewals and endpoint reconciliation; on kind the controllers' leader
// leases too: postSnapshotWrites has the numbers) and starts about
// postSnapshotWrites below R, so the watch cache cannot reach R while
// the spec runs; the spec checks that premise at its end and that every
// answer's "current" is below R.
//
// RelistAfterPlainRestore runs it in s's sync mode (its expected relist
// and bound); s.Client, when set, changes the informer's client after the
// scenario's own instruments (negative controls break it).
func RelistAfterPlainRestore(ctx context.Context, s e2e.Setup) {
	m := s.Mode
	faults := &httpfault.Injector{}
	answers := &listErrors{}
	instrument := func(cfg *rest.Config) *rest.Config { return answers.Instrument(faults.Instrument(cfg)) }
	r := restoredUnderInformer(ctx, s, cluster.RestoreOptions{}, nil, instrument)
	faults.Faults = r.env.Faults
	rv := strconv.FormatInt(r.informerRV, 10)
	want := expectedRelist(m)
	opened := r.resumedWatch(ctx)

	cut, closed := r.loseConnectionAfterResume(ctx, faults, opened)
	first := r.awaitRelist(ctx, closed)
	relistDelay := first.Request.Start.Sub(cut)
	converged := r.convergesAfterFallback(ctx, first, want, rv)

	rec := r.pods.Recorder.Snapshot()
	reinits := probe.Reinitialisations(rec)
	n := r.pods.Report(converged)
	Expect(describeReinits(reinits)).To(Equal(expectedReinits(m, rv, want.tooLarge)),
		"re-initialisations: the relist at %s after the very short watch, %d answers too large, then a list at resourceVersion \"\" (%v)", rv, want.tooLarge, n.ReinitDetails)
	Expect(probe.CountByCause(reinits)).To(Equal(map[probe.Cause]int{probe.CauseCleanClose: 1, probe.CauseTooLargeRV: want.tooLarge}), "re-initialisations by cause")
	tooLargeFor := r.expectTooLargeAnswers(m, reinits[:want.tooLarge], first)
	r.expectRESTClientAnswers(m, answers.snapshot(), want.tooLarge)
	final := reinits[len(reinits)-1].Request
	Expect(final.ResourceVersion).To(BeEmpty(), "the final list is a consistent read (resourceVersion \"\")")

	r.pods.ExpectDeletesObserved(probe.Object{Key: r.env.Namespace + "/vanished", UID: string(r.vanished.UID)})
	Expect(rec.Events).To(ContainElement(SatisfyAll(
		HaveField("Kind", probe.Delete), HaveField("Key", r.env.Namespace+"/vanished"), HaveField("UID", string(r.vanished.UID)), HaveField("Tombstone", true),
	)), "the vanished pod is delivered as a DeletedFinalStateUnknown tombstone by the fallback list's Replace")

	rev, err := r.etcd.EtcdRevision(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(rev).To(BeNumerically("<", r.informerRV), "premise: etcd's revision stayed below the informer's resourceVersion the whole spec (quiet resource)")

	r.env.Note("S6 outcome", fmt.Sprintf("plain restore, then a relist (%s): relist at %s %s after the connection loss; %d answers too large resource version over %s (etcd at %d after the restore, %d at the end); fallback list at resourceVersion \"\"; converged %s after the first relist (bound %s); the vanished pod arrived as a tombstone",
		m.Name, rv, relistDelay.Round(time.Millisecond), want.tooLarge, tooLargeFor.Round(time.Millisecond), r.serverRV, rev, converged.Round(time.Millisecond), want.bound))
}

// loseConnectionAfterResume keeps the resumed watch (opened) open past a
// very short watch, has the next watch closed at once (through faults) and
// resets the informer's connection; it returns when the connection was
// lost and how many watches were closed.
func (r restored) loseConnectionAfterResume(ctx context.Context, faults *httpfault.Injector, opened probe.Request) (cut time.Time, closed func() int) {
	e2e.By(ctx, "keeping the resumed watch open past a very short watch, then losing the connection; the watch resumed after it closes at once")
	Consistently(func(g Gomega) {
		rs := r.pods.Recorder.Snapshot().Requests
		last := rs[len(rs)-1]
		g.Expect(last.ID).To(Equal(opened.ID), "no request after the resumed watch")
		g.Expect(last.End.IsZero() && last.Events == 0).To(BeTrue(), "the resumed watch is open and silent: %+v", last)
	}).WithContext(ctx).WithTimeout(shortWatch).WithPolling(100 * time.Millisecond).Should(Succeed())
	restoreInjection, closed := faults.EndWatchesCleanly(httpfault.Watches, 1)
	e2e.Defer(ctx, restoreInjection)
	cut = time.Now()
	Expect(r.env.Proxy.ResetAll()).To(BeNumerically(">=", 1), "the informer's connection was reset")
	return cut, closed
}

// awaitRelist waits for the reflector's first re-initialisation after
// the resumed watch was closed at once, and returns it.
func (r restored) awaitRelist(ctx context.Context, closed func() int) probe.Reinit {
	e2e.By(ctx, "waiting for the relist at the informer's resourceVersion")
	var first probe.Reinit
	Eventually(func(g Gomega) {
		g.Expect(closed()).To(Equal(1), "the resumed watch was closed at once")
		reinits := probe.Reinitialisations(r.pods.Recorder.Snapshot())
		g.Expect(reinits).NotTo(BeEmpty(), "a re-initialisation")
		first = reinits[0]
	}).WithContext(ctx).WithTimeout(reflectorBackoffCeiling+relistSlack).WithPolling(50*time.Millisecond).Should(Succeed(),
		"the reflector relists within its backoff ceiling %s after the very short watch", reflectorBackoffCeiling)
	return first
}

// convergesAfterFallback waits for the informer to converge within
// want.bound of its first relist (at rv), for its handlers to add up and
// for its watch to be open again; it returns how long convergence took.
func (r restored) convergesAfterFallback(ctx context.Context, first probe.Reinit, want relistExpectation, rv string) time.Duration {
	e2e.By(ctx, fmt.Sprintf("waiting for convergence within %s of the first relist (%d answers too large, then a consistent list)", want.bound, want.tooLarge))
	deadline := first.Request.Start.Add(want.bound)
	Eventually(ctx, func(ctx context.Context) error {
		return probe.Converged(ctx, r.pods.Informer.GetStore(), r.env.Pods)
	}).WithTimeout(time.Until(deadline)).WithPolling(50*time.Millisecond).Should(Succeed(),
		"informer %s %s %s of its first relist at resourceVersion %s (record and logs: %s)", r.pods.Name, RelistConverged, want.bound, rv, r.pods.Dir)
	converged := time.Since(first.Request.Start)
	r.env.EventuallyHandlersConverged(ctx, r.pods.Name, r.pods.Recorder, r.env.Pods, r.pods.Dir)
	// The request after the last re-initialisation: a watch, open (in
	// streaming mode the streaming list itself goes on as the watch).
	Eventually(func(g Gomega) {
		e2e.ExpectWatchOpen(g, "the informer", r.pods.Recorder.Snapshot().Requests)
	}).WithContext(ctx).WithTimeout(e2e.EventTimeout).WithPolling(50*time.Millisecond).Should(Succeed(), "the informer watches again after the fallback list")
	return converged
}

// expectTooLargeAnswers checks each relist answered too large (tooLarge):
// after the watch cache's wait, Retry-After apart, and in streaming mode
// as an ERROR event; it returns how long they took from the first relist.
func (r restored) expectTooLargeAnswers(m e2e.SyncMode, tooLarge []probe.Reinit, first probe.Reinit) time.Duration {
	var tooLargeFor time.Duration
	for i, ri := range tooLarge {
		req := ri.Request
		Expect(req.Duration()).To(BeNumerically(">=", watchCacheBlockTimeout), "too large answer %d came after the watch cache's wait (%+v)", i+1, req)
		if i > 0 {
			prev := tooLarge[i-1].Request
			Expect(req.Start.Sub(prev.End)).To(BeNumerically(">=", tooLargeRetryAfter), "the REST client waited Retry-After before attempt %d", i+1)
		}
		if m.Streaming {
			Expect(req.ErrorReason).To(Equal(string(metav1.StatusReasonTimeout)), "the ERROR event's reason")
			r.expectTooLargeMessage(req.ErrorMessage)
		}
		tooLargeFor = req.End.Sub(first.Request.Start)
	}
	return tooLargeFor
}

// expectRESTClientAnswers checks the error answers the REST client got
// (errs): none in streaming mode, else tooLarge answers too large, each
// with what makes the REST client retry and the reflector fall back.
func (r restored) expectRESTClientAnswers(m e2e.SyncMode, errs []listError, tooLarge int) {
	if m.Streaming {
		Expect(errs).To(BeEmpty(), "a streaming list gets its error as an event in a 200 stream: nothing for the REST client to retry")
		return
	}
	Expect(errs).To(HaveLen(tooLarge), "the LIST answers too large, as the REST client got them")
	for _, a := range errs {
		Expect(a.retryAfter).To(Equal(strconv.Itoa(int(tooLargeRetryAfter.Seconds()))), "Retry-After from the Status's RetryAfterSeconds (responsewriters ErrorNegotiated): what makes the REST client retry")
		Expect(a.status.Code).To(BeEquivalentTo(http.StatusGatewayTimeout))
		Expect(a.status.Reason).To(Equal(metav1.StatusReasonTimeout))
		Expect(a.status.Details).NotTo(BeNil())
		Expect(a.status.Details.Causes).To(ContainElement(HaveField("Type", metav1.CauseTypeResourceVersionTooLarge)), "the cause reflector.go isTooLargeResourceVersionError looks for")
		r.expectTooLargeMessage(a.status.Message)
	}
}

// describeReinit renders a re-initialisation as the spec expects it.
func describeReinit(ri probe.Reinit) string {
	kind := "LIST"
	if ri.Request.Watch {
		kind = "streaming list"
	}
	answer := fmt.Sprintf("HTTP %d", ri.Request.Status)
	if ri.Request.ErrorCode != 0 {
		answer += fmt.Sprintf(", ERROR event %d", ri.Request.ErrorCode)
	}
	return fmt.Sprintf("%s at resourceVersion %q: %s (after %s)", kind, ri.Request.ResourceVersion, answer, ri.Cause)
}

func describeReinits(rs []probe.Reinit) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, describeReinit(r))
	}
	return out
}

// expectedReinits is the exact sequence: the relist at rv after the very
// short watch, the answers too large, the consistent list.
func expectedReinits(m e2e.SyncMode, rv string, tooLarge int) []string {
	at := func(rv string, status int, errorEvent int32, cause probe.Cause) string {
		req := probe.Request{Watch: m.Streaming, SendInitialEvents: m.Streaming, Method: http.MethodGet, ResourceVersion: rv, Status: status, ErrorCode: errorEvent}
		return describeReinit(probe.Reinit{Request: req, Cause: cause})
	}
	tooLargeAt := func(cause probe.Cause) string {
		if m.Streaming {
			return at(rv, http.StatusOK, http.StatusGatewayTimeout, cause)
		}
		return at(rv, http.StatusGatewayTimeout, 0, cause)
	}
	out := []string{tooLargeAt(probe.CauseCleanClose)}
	for range tooLarge - 1 {
		out = append(out, tooLargeAt(probe.CauseTooLargeRV))
	}
	return append(out, at("", http.StatusOK, 0, probe.CauseTooLargeRV))
}

// expectTooLargeMessage checks the server's message: k8s.io/apiserver
// pkg/storage/errors.go NewTooLargeResourceVersionError ("Too large
// resource version: %d, current: %d") in apimachinery's NewTimeoutError
// ("Timeout: %s"): asked at the informer's resourceVersion, the watch cache
// behind it.
func (r restored) expectTooLargeMessage(msg string) {
	ginkgo.GinkgoHelper()
	var asked, current int64
	_, err := fmt.Sscanf(msg, "Timeout: Too large resource version: %d, current: %d", &asked, &current)
	Expect(err).NotTo(HaveOccurred(), "the answer says which resourceVersion is too large: %q", msg)
	Expect(asked).To(Equal(r.informerRV), "asked at the informer's resourceVersion: %q", msg)
	Expect(current).To(BeNumerically("<", r.informerRV), "the watch cache is behind the informer: %q", msg)
}

// listErrors records the error answers to an informer's LISTs below the
// probe's recorder, as the REST client gets them: the Status and the
// Retry-After header the probe does not keep.
type listErrors struct {
	mu  sync.Mutex
	got []listError
}

type listError struct {
	retryAfter string
	status     metav1.Status
}

func (l *listErrors) Instrument(cfg *rest.Config) *rest.Config {
	return httpfault.Intercept(cfg, l.roundTrip)
}

func (l *listErrors) snapshot() []listError {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]listError(nil), l.got...)
}

// roundTrip records each LIST's error answer.
func (l *listErrors) roundTrip(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	resp, err := next.RoundTrip(req)
	if err != nil || resp.StatusCode < 300 || !httpfault.Lists(req) {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	e := listError{retryAfter: resp.Header.Get("Retry-After")}
	if mediaType, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil {
		if info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType); ok {
			_, _, _ = info.Serializer.Decode(body, nil, &e.status)
		}
	}
	l.mu.Lock()
	l.got = append(l.got, e)
	l.mu.Unlock()
	return resp, nil
}
