package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/utils/ptr"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S4ErrorClasses is S4's first value: each error class on a watch, in
// LIST+WATCH mode, and its negative control.
var S4ErrorClasses = Register(Scenario{
	ID: "S4", Title: "error classes on a watch", Labels: []string{"error-class"},
	Specs: append(s4ErrorClassSpecs(),
		// A transport that turns every non-2xx answer into an error hides
		// the 429 from the reflector, which then relists: the no-relist
		// assertion must catch it.
		Spec{
			Text: "fails when the client cannot tell a 429 from a failure", Mode: e2e.ListWatch,
			Client: httpfault.StatusesAsErrors,
			Run:    RunWith(ExpectReinitialisations, ThrottledWatchOpen),
			Fails:  []string{ErrorClassReinits}, Because: "the S4 assertion catches a relist after 429",
		},
	),
})

// s4ErrorClassSpecs are the error-class table's specs, one per error class
// (ErrorClasses), named after it, in LIST+WATCH mode. A spec each in a
// Context named as the table: the table's entries are named without the
// mode (the whole Describe runs in LIST+WATCH mode).
func s4ErrorClassSpecs() []Spec {
	var specs []Spec
	for _, ec := range ErrorClasses {
		specs = append(specs, Spec{
			Context: "re-initialise exactly when the error calls for it", Text: ec.Name, Mode: e2e.ListWatch,
			Run: func(ctx context.Context, s e2e.Setup, _ Input) { ExpectReinitialisations(ctx, s, ec) },
		})
	}
	return specs
}

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
//
// ErrorClass is one error: Inject arms it (Times answers) and Want is the
// re-initialisations by cause it must cause.
type ErrorClass struct {
	// Name says what the error is and what it must cause ("410 Gone
	// event: relist"): the spec's text.
	Name   string
	Inject func(*httpfault.Injector) (restore func(), answered func() int)
	Times  int
	Want   map[probe.Cause]int
}

// ErrorClasses are S4's error classes, each with what it must cause (the
// Ginkgo table and the e2e-framework feature run each).
var ErrorClasses = []ErrorClass{
	{Name: "410 Gone event: relist", Inject: func(in *httpfault.Injector) (func(), func() int) {
		return in.EndWatchesWithError(httpfault.Watches, 1, 410, metav1.StatusReasonExpired, "too old resource version: 1 (2)")
	}, Times: 1, Want: map[probe.Cause]int{probe.CauseGone: 1}},
	{Name: "too large resource version event: relist", Inject: func(in *httpfault.Injector) (func(), func() int) {
		return in.EndWatchesWithError(httpfault.Watches, 1, 504, metav1.StatusReasonTimeout, "Too large resource version: 1000, current: 10")
	}, Times: 1, Want: map[probe.Cause]int{probe.CauseTooLargeRV: 1}},
	{Name: "500 InternalError event: relist (shared informers cannot opt into the retry)", Inject: func(in *httpfault.Injector) (func(), func() int) {
		return in.EndWatchesWithError(httpfault.Watches, 1, 500, metav1.StatusReasonInternalError, "etcd event received with PrevKv=nil")
	}, Times: 1, Want: map[probe.Cause]int{probe.CauseInternalError: 1}},
	{Name: "close within a second with no event: relist", Inject: func(in *httpfault.Injector) (func(), func() int) {
		return in.EndWatchesCleanly(httpfault.Watches, 1)
	}, Times: 1, Want: map[probe.Cause]int{probe.CauseCleanClose: 1}},
	ThrottledWatchOpen,
	{Name: "500 opening a watch: relist", Inject: func(in *httpfault.Injector) (func(), func() int) {
		return in.FailRequests(httpfault.Watches, 1, 500, metav1.StatusReasonInternalError, "boom")
	}, Times: 1, Want: map[probe.Cause]int{probe.CauseInternalError: 1}},
}

// ThrottledWatchOpen is the error class of a 429 opening a watch: back off
// and watch again, no relist (its negative control breaks the client that
// must tell it from a failure: httpfault.StatusesAsErrors).
var ThrottledWatchOpen = ErrorClass{Name: "429 opening a watch: back off and watch again, no relist", Inject: func(in *httpfault.Injector) (func(), func() int) {
	return in.FailRequests(httpfault.Watches, 2, 429, metav1.StatusReasonTooManyRequests, "slow down")
}, Times: 2, Want: map[probe.Cause]int{}}

// watchTimeout bounds waiting for every injection to be answered and a real
// watch to be open again (reflector backoff starts at 800 ms).
const watchTimeout = 30 * time.Second

// ExpectReinitialisations runs S4's error class ec (above) against an
// informer in LIST+WATCH mode (s's mode must be it); s.Client, if set,
// changes the informer's client (a negative control breaks it).
func ExpectReinitialisations(ctx context.Context, s e2e.Setup, ec ErrorClass) {
	Expect(s.Mode.Streaming).To(BeFalse(), "S4's error classes run in LIST+WATCH mode, not %s", s.Mode)
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	in := &httpfault.Injector{Faults: env.Faults}
	restore, answered := ec.Inject(in)
	e2e.Defer(ctx, restore)
	pods := env.StartProbe(ctx, "pods", in.Instrument(env.User), probe.Options{Namespace: env.Namespace})
	e2e.Defer(ctx, func() { pods.Report(0) })
	Eventually(func(g Gomega) {
		g.Expect(answered()).To(BeNumerically(">=", ec.Times), "injections answered")
		e2e.ExpectWatchOpen(g, "the informer", pods.Recorder.Snapshot().Requests)
	}).WithContext(ctx).WithTimeout(watchTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	reinits := probe.Reinitialisations(pods.Recorder.Snapshot())
	Expect(probe.CountByCause(reinits)).To(Equal(ec.Want), ErrorClassReinits+" (%v)", reinits)
}

// S4Throttling is S4's second value: 429s past the REST client opening
// resuming watches, in them, and on a relist's streaming list, with negative
// controls.
var S4Throttling = Register(Scenario{
	ID: "S4", Title: "throttling past the REST client", Labels: []string{"error-class"},
	Specs: []Spec{
		{
			Text: "the reflector backs off and resumes from its resourceVersion, never relists",
			Entries: []Entry{
				{Name: "2 429s without Retry-After opening resuming watches", Modes: []e2e.SyncMode{e2e.StreamingList}, Sample: true, Run: s4Throttled(ThrottledNoRetryAfter)},
				{Name: "2 429s without Retry-After opening resuming watches", Modes: []e2e.SyncMode{e2e.ListWatch}, Run: s4Throttled(ThrottledNoRetryAfter)},
				{Name: "11 429s with Retry-After: 1 opening a resuming watch", Run: s4Throttled(ThrottledPastRetries)},
				{Name: "2 429 ERROR events in resuming watches", Run: s4Throttled(ThrottledEvents)},
			},
		},
		// LIST+WATCH mode has no streaming list: its relist is a LIST.
		{
			Text: "a relist's streaming list backs off and streams again from its resourceVersion, never falls back to a LIST",
			Entries: []Entry{
				{Name: "2 429s without Retry-After", Feature: "a relist's streaming list: 2 429s without Retry-After", Modes: []e2e.SyncMode{e2e.StreamingList}, Run: s4Throttled(ThrottledNoRetryAfter.OnRelist())},
				{Name: "11 429s with Retry-After: 1", Feature: "a relist's streaming list: 11 429s with Retry-After: 1", Modes: []e2e.SyncMode{e2e.StreamingList}, Run: s4Throttled(ThrottledPastRetries.OnRelist())},
			},
		},
		// A client stack that takes a 429 without Retry-After for a
		// failure: the reflector relists from watch() and falls back to a
		// LIST from watchList(). The re-initialisation assertion must catch
		// both.
		{
			Text: "fails when the client takes a 429 without Retry-After on a resuming watch for a failure", Mode: e2e.ListWatch,
			Client: httpfault.TooManyRequestsAsInternalErrors,
			Run:    RunWith(ExpectThrottledRecovery, ThrottledNoRetryAfter),
			Fails:  []string{ThrottledReinits}, Because: "the S4 throttling assertion catches a relist after a 429",
		},
		{
			Text: "fails when the client takes a 429 without Retry-After on a relist's streaming list for a failure", Mode: e2e.StreamingList,
			Client: httpfault.TooManyRequestsAsInternalErrors,
			Run:    RunWith(ExpectThrottledRecovery, ThrottledNoRetryAfter.OnRelist()),
			Fails:  []string{ThrottledReinits}, Because: "the S4 throttling assertion catches a fallback to LIST after a 429",
		},
	},
})

// s4Throttled is ExpectThrottledRecovery of t.
func s4Throttled(t Throttle) func(context.Context, e2e.Setup, Input) {
	return func(ctx context.Context, s e2e.Setup, _ Input) { ExpectThrottledRecovery(ctx, s, t) }
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
	// ErrorClassReinits: the error-class table's re-initialisations.
	ErrorClassReinits = "re-initialisations by cause after the injected error"
	ThrottledReinits  = "re-initialisations by cause while throttled"
	throttledRequests = "requests from the first 429 to the recovery"
	throttledAnswers  = "429 answers the client received"
	throttledRecovery = "time from the first 429 to the recovery, within the bounds derived from client-go"
)

// Throttle is one throttling fault.
type Throttle struct {
	Answers    int  // 429s injected
	RetryAfter int  // their Retry-After in seconds, or httpfault.NoRetryAfter
	Event      bool // 429 ERROR events in watch streams instead of HTTP 429s
	Relist     bool // the streaming lists of a relist (after a 410) instead of a resuming watch
}

// The throttling faults of S4's tables.
var (
	ThrottledNoRetryAfter = Throttle{Answers: 2, RetryAfter: httpfault.NoRetryAfter}
	ThrottledPastRetries  = Throttle{Answers: restMaxRetries + 1, RetryAfter: 1}
	ThrottledEvents       = Throttle{Answers: 2, Event: true}
)

// OnRelist is the same fault on the streaming lists of a relist.
func (t Throttle) OnRelist() Throttle {
	t.Relist = true
	return t
}

// reflectorErrors is how many of the answers reach the reflector: each event
// and each 429 without Retry-After; of those with Retry-After, one in
// restMaxRetries+1 (the REST client retries the others).
func (t Throttle) reflectorErrors() int {
	if t.Event || t.RetryAfter == httpfault.NoRetryAfter {
		return t.Answers
	}
	return t.Answers / (restMaxRetries + 1)
}

// recoveryBounds is the time from the first answer to the request that
// succeeds: the REST client waits Retry-After before each answer it retries,
// the reflector backs off once per answer it gets. The resuming watch's
// backoffs are the reflector's first; a relist's come after the one
// RunWithContext's delayHandler.Until spent between the two
// ListAndWatchWithContext calls.
func (t Throttle) recoveryBounds() (lo, hi time.Duration) {
	errs := t.reflectorErrors()
	if t.RetryAfter != httpfault.NoRetryAfter {
		lo = time.Duration(t.Answers-errs) * time.Duration(t.RetryAfter) * time.Second
	}
	hi = lo
	first := 1
	if t.Relist {
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
func (t Throttle) wantReinits() map[probe.Cause]int {
	if !t.Relist {
		return map[probe.Cause]int{}
	}
	return map[probe.Cause]int{probe.CauseGone: 1, probe.CauseTooManyRequests: t.Answers}
}

// wantRequests describes the answers, then the request that succeeds, all
// from resourceVersion rv.
func (t Throttle) wantRequests(rv string) []string {
	r := probe.Request{Watch: true, ResourceVersion: rv, SendInitialEvents: t.Relist, Status: http.StatusTooManyRequests}
	if t.Relist {
		r.ResourceVersionMatch = string(metav1.ResourceVersionMatchNotOlderThan)
	}
	if t.Event {
		r.Status, r.ErrorCode = http.StatusOK, http.StatusTooManyRequests
	}
	var want []string
	for range t.Answers {
		want = append(want, describeRequest(r))
	}
	r.Status, r.ErrorCode = http.StatusOK, 0
	return append(want, describeRequest(r))
}

// arm injects the fault into in and returns the count of its 429 answers.
func (t Throttle) arm(ctx context.Context, in *httpfault.Injector) (answered func() int) {
	var restore func()
	match := httpfault.Watches
	if t.Relist {
		match = httpfault.StreamingLists
		restoreGone, _ := in.EndWatchesWithError(httpfault.Watches, 1, 410, metav1.StatusReasonExpired, "too old resource version: 1 (2)")
		e2e.Defer(ctx, restoreGone)
	}
	if t.Event {
		restore, answered = in.EndWatchesWithError(match, t.Answers, 429, metav1.StatusReasonTooManyRequests, "slow down")
	} else {
		restore, answered = in.FailRequestsRetryAfter(match, t.Answers, 429, metav1.StatusReasonTooManyRequests, "slow down", t.RetryAfter)
	}
	e2e.Defer(ctx, restore)
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

// ExpectThrottledRecovery runs one throttling fault against an informer
// (built with s.Client when set) and asserts what client-go's reflector
// must do.
func ExpectThrottledRecovery(ctx context.Context, s e2e.Setup, t Throttle) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	in := &httpfault.Injector{Faults: env.Faults}
	timeout := informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.TimeoutSeconds = ptr.To(int64(throttledWatchTimeout.Seconds()))
	})
	pods := env.StartProbe(ctx, "pods", in.Instrument(env.User), probe.Options{Namespace: env.Namespace, FactoryOptions: []informers.SharedInformerOption{timeout}})
	var recovery time.Duration
	e2e.Defer(ctx, func() { pods.Report(recovery) })

	e2e.By(ctx, fmt.Sprintf("answering %d watches with 429 (Retry-After %d, ERROR event %v, relist %v)", t.Answers, t.RetryAfter, t.Event, t.Relist))
	answered := t.arm(ctx, in)
	Eventually(answered).WithContext(ctx).WithTimeout(throttleTimeout).WithPolling(50*time.Millisecond).Should(BeNumerically(">=", 1), "the first 429 answered")
	_, err := env.Writer.CoreV1().Pods(env.Namespace).Create(ctx, e2e.Pod(env.Namespace, "while-throttled"), metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())

	e2e.By(ctx, "waiting for a real watch opened after the last 429")
	Eventually(func(g Gomega) {
		last := e2e.ExpectWatchOpen(g, "the informer", pods.Recorder.Snapshot().Requests)
		g.Expect(last.Start.After(in.LastAnswer())).To(BeTrue(), "the open watch started after the last injected answer")
	}).WithContext(ctx).WithTimeout(throttleTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	pods.EventuallyConverged(ctx, env.Pods)

	rec := pods.Recorder.Snapshot()
	reinits := probe.Reinitialisations(rec)
	Expect(probe.CountByCause(reinits)).To(Equal(t.wantReinits()), "%s (%v)", ThrottledReinits, reinits)

	window := throttledWindow(rec.Requests)
	Expect(window).NotTo(BeEmpty(), throttledRequests)
	rv := window[0].ResourceVersion
	Expect(rv).NotTo(BeElementOf("", "0"), "%s: resumed from the informer's resourceVersion", throttledRequests)
	got := make([]string, len(window))
	for i, r := range window {
		got[i] = describeRequest(r)
	}
	Expect(got).To(Equal(t.wantRequests(rv)), throttledRequests)
	if t.Relist {
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
	Expect([]int{answered(), received}).To(Equal([]int{t.Answers, t.Answers}), "%s (injected, recorded)", throttledAnswers)

	recovery = window[len(window)-1].Start.Sub(window[0].Start)
	lo, hi := t.recoveryBounds()
	env.Note("S4 throttling", throttleNumbers{Answers: t.Answers, ReflectorErrors: t.reflectorErrors(), ResourceVersion: rv,
		RecoverySeconds: recovery.Seconds(), MinSeconds: lo.Seconds(), MaxSeconds: hi.Seconds()})
	Expect(recovery).To(And(BeNumerically(">=", lo), BeNumerically("<=", hi)), "%s [%s, %s]", throttledRecovery, lo, hi)
}
