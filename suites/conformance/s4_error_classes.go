package conformance

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/e2e/probe"
)

// S4 (seeds 000, 003): each error the server can answer a watch with, and the
// re-initialisation it must or must not cause. Injected by e2e/httpfault in
// the client's transport (TLS, HTTP/2 and the apiserver stay real), with
// streaming lists off so the informer opens resuming watches right after its
// LIST.
//
// Expected of client-go v0.36, tools/cache/reflector.go:
//   - watch: an ERROR event ends handleWatch with the decoded status error;
//     isExpiredError (410) and "too large resource version" are logged, any
//     other error is "watch ended with error"; apierrors.IsInternalError is
//     retried only when MaxInternalErrorRetryDuration > 0, which shared
//     informers never set. Either way watch() returns and ListAndWatch starts
//     over: one relist.
//   - a watch that closes within a second with no event is "very short
//     watch" (handleAnyWatch): an error, so one relist.
//   - opening a watch: isWatchErrorRetriable treats connection refused and
//     429 as retriable (back off, watch again, no relist); any other status
//     returns the error from ListAndWatch: one relist after backoff.
type errorClass struct {
	inject func(*httpfault.Injector) (restore func(), answered func() int)
	times  int
	want   map[probe.Cause]int
}

// watchTimeout bounds waiting for every injection to be answered and a real
// watch to be open again (reflector backoff starts at 800 ms).
const watchTimeout = 30 * time.Second

var _ = Describe("S4 error classes on a watch", Label("error-class"), e2e.ListWatch.Decorations(), func() {
	DescribeTable("re-initialise exactly when the error calls for it",
		func(ctx SpecContext, ec errorClass) { expectReinitialisations(ctx, ec, false) },
		Entry("410 Gone event: relist", errorClass{
			inject: func(in *httpfault.Injector) (func(), func() int) {
				return in.EndWatchesWithError(httpfault.Watches, 1, 410, metav1.StatusReasonExpired, "too old resource version: 1 (2)")
			}, times: 1, want: map[probe.Cause]int{probe.CauseGone: 1}}),
		Entry("too large resource version event: relist", errorClass{
			inject: func(in *httpfault.Injector) (func(), func() int) {
				return in.EndWatchesWithError(httpfault.Watches, 1, 504, metav1.StatusReasonTimeout, "Too large resource version: 1000, current: 10")
			}, times: 1, want: map[probe.Cause]int{probe.CauseTooLargeRV: 1}}),
		Entry("500 InternalError event: relist (shared informers cannot opt into the retry)", errorClass{
			inject: func(in *httpfault.Injector) (func(), func() int) {
				return in.EndWatchesWithError(httpfault.Watches, 1, 500, metav1.StatusReasonInternalError, "etcd event received with PrevKv=nil")
			}, times: 1, want: map[probe.Cause]int{probe.CauseInternalError: 1}}),
		Entry("close within a second with no event: relist", errorClass{
			inject: func(in *httpfault.Injector) (func(), func() int) {
				return in.EndWatchesCleanly(httpfault.Watches, 1)
			}, times: 1, want: map[probe.Cause]int{probe.CauseCleanClose: 1}}),
		Entry("429 opening a watch: back off and watch again, no relist", errorClass{
			inject: func(in *httpfault.Injector) (func(), func() int) {
				return in.FailRequests(httpfault.Watches, 2, 429, metav1.StatusReasonTooManyRequests, "slow down")
			}, times: 2, want: map[probe.Cause]int{}}),
		Entry("500 opening a watch: relist", errorClass{
			inject: func(in *httpfault.Injector) (func(), func() int) {
				return in.FailRequests(httpfault.Watches, 1, 500, metav1.StatusReasonInternalError, "boom")
			}, times: 1, want: map[probe.Cause]int{probe.CauseInternalError: 1}}),
	)

	It("fails when the client cannot tell a 429 from a failure", NegativeControl, func(ctx SpecContext) {
		// A transport that turns every non-2xx answer into an error hides
		// the 429 from the reflector, which then relists: the no-relist
		// assertion must catch it.
		err := InterceptGomegaFailure(func() {
			expectReinitialisations(ctx, errorClass{
				inject: func(in *httpfault.Injector) (func(), func() int) {
					return in.FailRequests(httpfault.Watches, 2, 429, metav1.StatusReasonTooManyRequests, "slow down")
				}, times: 2, want: map[probe.Cause]int{}}, true)
		})
		Expect(err).To(MatchError(ContainSubstring(errorClassReinits)), "the S4 assertion catches a relist after 429")
	})
})

func expectReinitialisations(ctx context.Context, ec errorClass, brokenTransport bool) {
	e2e.ListWatch.Use()
	env := e2e.StartEnv(ctx, cluster.Spec{})
	in := &httpfault.Injector{}
	restore, answered := ec.inject(in)
	DeferCleanup(restore)
	cfg := in.Instrument(env.User)
	if brokenTransport {
		cfg = httpfault.StatusesAsErrors(cfg)
	}
	pods := e2e.StartProbe(ctx, "pods", cfg, probe.Options{Namespace: env.Namespace})
	DeferCleanup(func() { pods.Report(0) })
	Eventually(func(g Gomega) {
		g.Expect(answered()).To(BeNumerically(">=", ec.times), "injections answered")
		e2e.ExpectWatchOpen(g, "the informer", pods.Recorder.Snapshot().Requests)
	}).WithContext(ctx).WithTimeout(watchTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	reinits := probe.Reinitialisations(pods.Recorder.Snapshot())
	Expect(probe.CountByCause(reinits)).To(Equal(ec.want), errorClassReinits+" (%v)", reinits)
}

// Throttling that client-go's REST client does not absorb, so that the
// reflector's own 429 handling is reached (issue 12). The REST client retries
// a 429 itself when it carries Retry-After, waiting that long, at most
// restMaxRetries times (rest/request.go Watch, rest/with_retry.go IsNextRetry
// and checkWait): "429 opening a watch" above never reaches the reflector.
// These entries do, with
//   - 429s without Retry-After (kube-apiserver's own 429s, from max-in-flight,
//     APF and an unready watch cache, carry one; proxies and gateways may not);
//   - restMaxRetries+1 429s with Retry-After: 1, APF throttling for longer
//     than the REST client retries;
//   - 429 ERROR events in a watch stream (client-go handles them;
//     kube-apiserver 1.36's 429s come from its filters and the cacher, before
//     a watch response starts).
//
// Expected of client-go v0.36, tools/cache/reflector.go:
//   - watch(): WatchWithContext fails with a 429 -> isWatchErrorRetriable ->
//     back off (delayHandler) and watch again from LastSyncResourceVersion; a
//     429 ERROR event ends handleWatch with it -> the apierrors.IsTooManyRequests
//     case -> back off, continue. No re-initialisation, the same resourceVersion.
//   - watchList(): a 429 opening the streaming list ->
//     isErrorRetriableWithSideEffectsFn -> isWatchErrorRetriable -> back off
//     and stream again from rewatchResourceVersion (a 429, unlike 410, does not
//     mark it unavailable). Never a LIST: ListAndWatchWithContext falls back
//     to one only when watchList returns an error.
//   - the backoff (NewReflectorWithOptions): wait.Backoff from
//     defaultBackoffInit 800 ms, factor 2, jitter 1 (wait.Jitter: [d, 2d)),
//     capped at 30 s, reset only after 2 min (DelayWithReset), so the n-th
//     call of delayHandler in a spec waits [d_n, 2 d_n), d_n = 800 ms x 2^(n-1).
//
// How the faults are reached, in both sync modes: every watch times out at
// the server after throttledWatchTimeout (S3's tweak), because in
// streaming-list mode the streaming list's watch must end before the reflector
// opens a resuming watch; the faults are armed once the informer synced.
// Streaming lists after the first sync are reached by forcing one relist:
// a 410 ERROR event on a resuming watch, then the 429s answer the relist's
// streaming lists. That is the field case (APF throttling a relist), and only
// a relist carries a resourceVersion the retries must keep; injecting at the
// initial sync would retry from resourceVersion "" and prove less.
const (
	// restMaxRetries: rest/request.go NewRequest sets maxRetries 10, and
	// rest/with_retry.go IsNextRetry retries while attempts <= maxRetries.
	restMaxRetries = 10
	// reflectorBackoffInit, reflectorBackoffMax: tools/cache/reflector.go
	// defaultBackoffInit and defaultBackoffMax.
	reflectorBackoffInit = 800 * time.Millisecond
	reflectorBackoffMax  = 30 * time.Second
	// throttledWatchTimeout is every watch's timeoutSeconds: above a second,
	// so no watch ending at it is a "very short watch" (handleAnyWatch).
	throttledWatchTimeout = 2 * time.Second
	// throttleSlack is what the source does not bound: timers and goroutines
	// scheduled late on a loaded machine, the round trip of the request that
	// succeeds.
	throttleSlack = 2 * time.Second
	// throttleTimeout bounds each wait of a throttling spec: above the largest
	// derived recovery bound (11 answers on a relist: 10 s + 3.2 s + slack)
	// plus what comes before the fault (a watch timeout, one backoff), so a
	// slow recovery fails the bound with its measured time, not the wait.
	throttleTimeout = 60 * time.Second
)

// The assertions of the throttling specs, named so that the negative
// controls match exactly the assertion they must trip.
const (
	// errorClassReinits: the error-class table's re-initialisations.
	errorClassReinits = "re-initialisations by cause after the injected error"
	throttledReinits  = "re-initialisations by cause while throttled"
	throttledRequests = "requests from the first 429 to the recovery"
	throttledAnswers  = "429 answers the client received"
	throttledRecovery = "time from the first 429 to the recovery, within the bounds derived from client-go"
)

// throttle is one throttling fault.
type throttle struct {
	answers    int  // 429s injected
	retryAfter int  // their Retry-After in seconds, or httpfault.NoRetryAfter
	event      bool // 429 ERROR events in watch streams instead of HTTP 429s
	relist     bool // the streaming lists of a relist (after a 410) instead of a resuming watch
}

var (
	throttledNoRetryAfter = throttle{answers: 2, retryAfter: httpfault.NoRetryAfter}
	throttledPastRetries  = throttle{answers: restMaxRetries + 1, retryAfter: 1}
	throttledEvents       = throttle{answers: 2, event: true}
)

// onRelist is the same fault on the streaming lists of a relist.
func (t throttle) onRelist() throttle {
	t.relist = true
	return t
}

// reflectorErrors is how many of the answers reach the reflector: each event
// and each 429 without Retry-After; of those with Retry-After, one in
// restMaxRetries+1 (the REST client retries the others).
func (t throttle) reflectorErrors() int {
	if t.event || t.retryAfter == httpfault.NoRetryAfter {
		return t.answers
	}
	return t.answers / (restMaxRetries + 1)
}

// recoveryBounds is the time from the first answer to the request that
// succeeds: the REST client waits Retry-After before each answer it retries,
// the reflector backs off once per answer it gets. The resuming watch's
// backoffs are the reflector's first; a relist's come after the one
// RunWithContext's delayHandler.Until spent between the two
// ListAndWatchWithContext calls.
func (t throttle) recoveryBounds() (lo, hi time.Duration) {
	errs := t.reflectorErrors()
	if t.retryAfter != httpfault.NoRetryAfter {
		lo = time.Duration(t.answers-errs) * time.Duration(t.retryAfter) * time.Second
	}
	hi = lo
	first := 1
	if t.relist {
		first = 2
	}
	for n := first; n < first+errs; n++ {
		d := min(reflectorBackoffInit<<(n-1), reflectorBackoffMax)
		lo, hi = lo+d, hi+2*d
	}
	return lo, hi + throttleSlack
}

// wantReinits: none for a resuming watch; for a relist, every attempt at its
// streaming list, the first after the 410, the others each after a 429.
func (t throttle) wantReinits() map[probe.Cause]int {
	if !t.relist {
		return map[probe.Cause]int{}
	}
	return map[probe.Cause]int{probe.CauseGone: 1, probe.CauseTooManyRequests: t.answers}
}

// wantRequests describes the answers, then the request that succeeds, all
// from resourceVersion rv.
func (t throttle) wantRequests(rv string) []string {
	r := probe.Request{Watch: true, ResourceVersion: rv, SendInitialEvents: t.relist, Status: http.StatusTooManyRequests}
	if t.relist {
		r.ResourceVersionMatch = string(metav1.ResourceVersionMatchNotOlderThan)
	}
	if t.event {
		r.Status, r.ErrorCode = http.StatusOK, http.StatusTooManyRequests
	}
	var want []string
	for range t.answers {
		want = append(want, describeRequest(r))
	}
	r.Status, r.ErrorCode = http.StatusOK, 0
	return append(want, describeRequest(r))
}

// arm injects the fault into in and returns the count of its 429 answers.
func (t throttle) arm(in *httpfault.Injector) (answered func() int) {
	var restore func()
	match := httpfault.Watches
	if t.relist {
		match = httpfault.StreamingLists
		restoreGone, _ := in.EndWatchesWithError(httpfault.Watches, 1, 410, metav1.StatusReasonExpired, "too old resource version: 1 (2)")
		DeferCleanup(restoreGone)
	}
	if t.event {
		restore, answered = in.EndWatchesWithError(match, t.answers, 429, metav1.StatusReasonTooManyRequests, "slow down")
	} else {
		restore, answered = in.FailRequestsRetryAfter(match, t.answers, 429, metav1.StatusReasonTooManyRequests, "slow down", t.retryAfter)
	}
	DeferCleanup(restore)
	return answered
}

func isThrottled(r probe.Request) bool {
	return r.Status == http.StatusTooManyRequests || r.ErrorCode == http.StatusTooManyRequests
}

// describeRequest is what the throttling specs compare of a request.
func describeRequest(r probe.Request) string {
	s := fmt.Sprintf("%s rv=%q", r.Kind(), r.ResourceVersion)
	if r.ResourceVersionMatch != "" {
		s += " match=" + r.ResourceVersionMatch
	}
	s += fmt.Sprintf(": HTTP %d", r.Status)
	if r.ErrorCode != 0 {
		s += fmt.Sprintf(", ERROR event %d", r.ErrorCode)
	}
	if r.Status == 0 {
		s += ", " + r.Err
	}
	return s
}

// throttledWindow is the requests from the first throttled answer to the
// first request after it that was not throttled (the recovery, if the client
// behaved).
func throttledWindow(rs []probe.Request) []probe.Request {
	first := slices.IndexFunc(rs, isThrottled)
	if first < 0 {
		return nil
	}
	n := slices.IndexFunc(rs[first:], func(r probe.Request) bool { return !isThrottled(r) })
	if n < 0 {
		return rs[first:]
	}
	return rs[first : first+n+1]
}

type throttleNumbers struct {
	Answers         int     `json:"answers"`
	ReflectorErrors int     `json:"reflectorErrors"`
	ResourceVersion string  `json:"resourceVersion"`
	RecoverySeconds float64 `json:"recoverySeconds"`
	MinSeconds      float64 `json:"minSeconds"`
	MaxSeconds      float64 `json:"maxSeconds"`
}

// expectThrottledRecovery runs one throttling fault against an informer
// built on client(cfg) and asserts what client-go's reflector must do.
func expectThrottledRecovery(ctx context.Context, t throttle, client func(*rest.Config) *rest.Config) {
	env := e2e.StartEnv(ctx, cluster.Spec{})
	in := &httpfault.Injector{}
	timeout := informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.TimeoutSeconds = new(int64(throttledWatchTimeout.Seconds()))
	})
	pods := e2e.StartProbe(ctx, "pods", client(in.Instrument(env.User)), probe.Options{Namespace: env.Namespace, FactoryOptions: []informers.SharedInformerOption{timeout}})
	var recovery time.Duration
	DeferCleanup(func() { pods.Report(recovery) })

	By(fmt.Sprintf("answering %d watches with 429 (Retry-After %d, ERROR event %v, relist %v)", t.answers, t.retryAfter, t.event, t.relist))
	answered := t.arm(in)
	Eventually(answered).WithContext(ctx).WithTimeout(throttleTimeout).WithPolling(50*time.Millisecond).Should(BeNumerically(">=", 1), "the first 429 answered")
	_, err := env.Writer.CoreV1().Pods(env.Namespace).Create(ctx, e2e.Pod(env.Namespace, "while-throttled"), metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())

	By("waiting for a real watch opened after the last 429")
	Eventually(func(g Gomega) {
		last := e2e.ExpectWatchOpen(g, "the informer", pods.Recorder.Snapshot().Requests)
		g.Expect(last.Start.After(in.LastAnswer())).To(BeTrue(), "the open watch started after the last injected answer")
	}).WithContext(ctx).WithTimeout(throttleTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	pods.EventuallyConverged(ctx, env.Pods)

	rec := pods.Recorder.Snapshot()
	reinits := probe.Reinitialisations(rec)
	Expect(probe.CountByCause(reinits)).To(Equal(t.wantReinits()), "%s (%v)", throttledReinits, reinits)

	window := throttledWindow(rec.Requests)
	Expect(window).NotTo(BeEmpty(), throttledRequests)
	rv := window[0].ResourceVersion
	Expect(rv).NotTo(BeElementOf("", "0"), "%s: resumed from the informer's resourceVersion", throttledRequests)
	got := make([]string, len(window))
	for i, r := range window {
		got[i] = describeRequest(r)
	}
	Expect(got).To(Equal(t.wantRequests(rv)), throttledRequests)
	if t.relist {
		// The relist streams from the resourceVersion the 410'd watch held.
		Expect(window[0].ID).To(BeNumerically(">", 1), throttledRequests)
		before := rec.Requests[window[0].ID-2]
		Expect(describeRequest(before)).To(Equal(describeRequest(probe.Request{Watch: true, ResourceVersion: rv, Status: http.StatusOK, ErrorCode: http.StatusGone})),
			"%s: the relist follows the 410 and keeps its resourceVersion", throttledRequests)
	}

	received := 0
	for _, r := range rec.Requests {
		if isThrottled(r) {
			received++
		}
	}
	Expect([]int{answered(), received}).To(Equal([]int{t.answers, t.answers}), "%s (injected, recorded)", throttledAnswers)

	recovery = window[len(window)-1].Start.Sub(window[0].Start)
	lo, hi := t.recoveryBounds()
	AddReportEntry("S4 throttling", throttleNumbers{Answers: t.answers, ReflectorErrors: t.reflectorErrors(), ResourceVersion: rv,
		RecoverySeconds: recovery.Seconds(), MinSeconds: lo.Seconds(), MaxSeconds: hi.Seconds()})
	Expect(recovery).To(And(BeNumerically(">=", lo), BeNumerically("<=", hi)), "%s [%s, %s]", throttledRecovery, lo, hi)
}

var _ = Describe("S4 throttling past the REST client", Label("error-class"), func() {
	DescribeTable("the reflector backs off and resumes from its resourceVersion, never relists",
		func(ctx SpecContext, m e2e.SyncMode, t throttle) {
			m.Use()
			expectThrottledRecovery(ctx, t, func(c *rest.Config) *rest.Config { return c })
		},
		e2e.StreamingList.Entry("2 429s without Retry-After opening resuming watches", throttledNoRetryAfter),
		e2e.ListWatch.Entry("2 429s without Retry-After opening resuming watches", throttledNoRetryAfter),
		e2e.StreamingList.Entry("11 429s with Retry-After: 1 opening a resuming watch", throttledPastRetries),
		e2e.ListWatch.Entry("11 429s with Retry-After: 1 opening a resuming watch", throttledPastRetries),
		e2e.StreamingList.Entry("2 429 ERROR events in resuming watches", throttledEvents),
		e2e.ListWatch.Entry("2 429 ERROR events in resuming watches", throttledEvents),
	)

	// LIST+WATCH mode has no streaming list: its relist is a LIST.
	DescribeTable("a relist's streaming list backs off and streams again from its resourceVersion, never falls back to a LIST",
		func(ctx SpecContext, m e2e.SyncMode, t throttle) {
			m.Use()
			expectThrottledRecovery(ctx, t, func(c *rest.Config) *rest.Config { return c })
		},
		e2e.StreamingList.Entry("2 429s without Retry-After", throttledNoRetryAfter.onRelist()),
		e2e.StreamingList.Entry("11 429s with Retry-After: 1", throttledPastRetries.onRelist()),
	)

	// A client stack that takes a 429 without Retry-After for a failure: the
	// reflector relists from watch() and falls back to a LIST from
	// watchList(). The re-initialisation assertion must catch both.
	It("fails when the client takes a 429 without Retry-After on a resuming watch for a failure", NegativeControl, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
		e2e.ListWatch.Use()
		err := InterceptGomegaFailure(func() {
			expectThrottledRecovery(ctx, throttledNoRetryAfter, httpfault.TooManyRequestsAsInternalErrors)
		})
		Expect(err).To(MatchError(ContainSubstring(throttledReinits)), "the S4 throttling assertion catches a relist after a 429")
	})

	It("fails when the client takes a 429 without Retry-After on a relist's streaming list for a failure", NegativeControl, e2e.StreamingList.Decorations(), func(ctx SpecContext) {
		e2e.StreamingList.Use()
		err := InterceptGomegaFailure(func() {
			expectThrottledRecovery(ctx, throttledNoRetryAfter.onRelist(), httpfault.TooManyRequestsAsInternalErrors)
		})
		Expect(err).To(MatchError(ContainSubstring(throttledReinits)), "the S4 throttling assertion catches a fallback to LIST after a 429")
	})
})
