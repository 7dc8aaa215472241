package scenarios

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/report"
)

// S26Cancelled is S26's value: each wait ended each way, in client-go's
// default mode (it needs no informer), and its negative controls.
var S26Cancelled = Register(Scenario{
	ID: "S26", Title: "a call whose context ends while client-go waits", Labels: []string{"cancelled-call"},
	Specs: []Spec{
		{
			Text: "returns when its context ends, with an error",
			Entries: []Entry{
				{
					Name: "waiting out a 429's Retry-After, cancelled", Feature: "Retry-After, cancelled", Modes: DefaultMode,
					Labels: []string{"release-sensitive"}, Sample: true,
					Run: func(ctx context.Context, s e2e.Setup, _ Input) { CancelledCall(ctx, s, WaitRetryAfter, EndCancel) },
				},
				{
					Name: "waiting out a 429's Retry-After, deadline", Feature: "Retry-After, deadline", Modes: DefaultMode,
					Labels: []string{"release-sensitive"},
					Run:    func(ctx context.Context, s e2e.Setup, _ Input) { CancelledCall(ctx, s, WaitRetryAfter, EndDeadline) },
				},
				{
					Name: "waiting for the client-side rate limiter, cancelled", Feature: "client-side rate limiter, cancelled", Modes: DefaultMode,
					Run: func(ctx context.Context, s e2e.Setup, _ Input) { CancelledCall(ctx, s, WaitRateLimiter, EndCancel) },
				},
				{
					Name: "waiting for the client-side rate limiter, deadline", Feature: "client-side rate limiter, deadline", Modes: DefaultMode,
					Run: func(ctx context.Context, s e2e.Setup, _ Input) { CancelledCall(ctx, s, WaitRateLimiter, EndDeadline) },
				},
			},
		},
		// Every answer (the 429) handed over 5 s after it came: the call
		// returns 4 s after its context's end.
		{
			Text:   "fails when the client holds its answers whatever the context",
			Client: HoldAnswers(5 * time.Second),
			Run:    RunWith2(CancelledCall, WaitRetryAfter, EndCancel),
			Fails:  []string{CallReturnsWhenItsContextEnds}, Because: "the S26 assertion catches a call held past its context",
		},
		{
			Text:   "fails when the client's rate limiter ignores the context",
			Client: ContextIgnoringRateLimiter,
			Run:    RunWith2(CancelledCall, WaitRateLimiter, EndCancel),
			Fails:  []string{CallReturnsWhenItsContextEnds}, Because: "the S26 assertion catches a rate limiter that waits past the context",
		},
	},
})

// CallReturnsWhenItsContextEnds is S26's assertion: a call whose context
// ended while client-go waited returned within S26ReturnBound.
const CallReturnsWhenItsContextEnds = "the call returned within its bound of its context's end"

// S26's numbers: the Retry-After the server answers with, when the call's
// context ends after the call began, how soon after that the call must
// have returned, and the client's rate (one request per 1/S26QPS seconds,
// a burst of one: the second call waits 5 s for its token).
const (
	S26RetryAfter  = 30 // seconds
	S26ContextEnds = time.Second
	S26ReturnBound = time.Second
	S26QPS         = 0.2
)

// S26Wait is what a call of S26 waits on when its context ends.
type S26Wait string

const (
	// WaitRetryAfter: the REST client waits out a 429's Retry-After before
	// retrying (rest/with_retry.go Before).
	WaitRetryAfter S26Wait = "Retry-After"
	// WaitRateLimiter: the REST client's own rate limiter holds the call
	// (rest/request.go tryThrottle, flowcontrol's token bucket).
	WaitRateLimiter S26Wait = "client-side rate limiter"
)

// S26End is how a call's context ends.
type S26End string

const (
	EndCancel   S26End = "cancelled"
	EndDeadline S26End = "deadline"
)

// CancelledCall is S26: a clientset GET waits inside client-go (w) when its
// context ends (S26ContextEnds after the call began, by cancel or deadline,
// e); the call must return within S26ReturnBound of that end, with an
// error. The spec observes (report.Observation) how long after the end it
// returned, the error's text and whether it wraps the context's error, and
// how many answers the server sent.
//
// WaitRetryAfter: every GET of the target is answered 429 with Retry-After:
// S26RetryAfter (injected in the client's transport, as kube-apiserver's
// max-in-flight filter answers). Expected of client-go v0.33-v0.37
// (rest/with_retry.go Before): the wait before a retry is
// request.backoff.SleepWithContext(ctx, delay), which ends with the
// context (rest/urlbackoff.go NoBackoff.SleepWithContext); v0.31 and v0.32
// call request.backoff.Sleep(delay), a time.Sleep the context does not end:
// the call returns only after the whole Retry-After (then
// tryThrottleWithInfo sees the context's error).
//
// WaitRateLimiter: the client's rate is S26QPS with a burst of 1; a first
// call takes the token, the second waits for the next (5 s). Expected of
// client-go v0.31-v0.37 (rest/request.go tryThrottleWithInfo:
// r.rateLimiter.Wait(ctx); util/flowcontrol tokenBucketRateLimiter.Wait,
// x/time/rate Limiter.Wait): the wait ends with a cancelled context, and
// returns at once, before the deadline, when the token would come after it
// ("would exceed context deadline").
func CancelledCall(ctx context.Context, s e2e.Setup, w S26Wait, e S26End) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	get, answered := waitingGet(ctx, env, s.Client, w)

	e2e.By(ctx, fmt.Sprintf("a GET waiting on the %s; its context ends (%s) after %s", w, e, S26ContextEnds))
	var (
		callCtx context.Context
		cancel  context.CancelFunc
	)
	start := time.Now()
	ends := start.Add(S26ContextEnds)
	if e == EndDeadline {
		callCtx, cancel = context.WithDeadline(ctx, ends)
	} else {
		callCtx, cancel = context.WithCancel(ctx)
		t := time.AfterFunc(S26ContextEnds, cancel)
		defer t.Stop()
	}
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- get(callCtx) }()
	// Bounded: a client that waits out the whole Retry-After or its token
	// returns by then; one that never returns fails here.
	giveUp := S26ContextEnds + S26RetryAfter*time.Second + 10*time.Second
	var callErr error
	returned := false
	select {
	case callErr = <-done:
		returned = true
	case <-time.After(giveUp):
	}
	at := time.Now()
	late := max(at.Sub(ends), 0)
	env.RecordBound(fmt.Sprintf("the GET returned after its context's end (%s)", e), ends, at, S26ReturnBound, returned && late <= S26ReturnBound)
	env.Observe(report.Seconds("returned after the context's end", late))
	env.Observe(report.Calls("answers before it returned", answered()))
	if callErr != nil {
		env.Observe(report.Value("error", report.NormaliseError(callErr.Error(), env.Namespace)))
		env.Observe(report.Value("error wraps the context's", fmt.Sprint(errors.Is(callErr, context.Canceled) || errors.Is(callErr, context.DeadlineExceeded))))
	}
	env.Note("S26 call", fmt.Sprintf("waiting on the %s, context %s after %s: returned %t, %.2f s after the end (bound %s), %d answers; error: %v",
		w, e, S26ContextEnds, returned, late.Seconds(), S26ReturnBound, answered(), callErr))
	Expect(returned).To(BeTrue(), CallReturnsWhenItsContextEnds+" (%s): it had not returned %s after", S26ReturnBound, giveUp)
	Expect(late).To(BeNumerically("<=", S26ReturnBound), CallReturnsWhenItsContextEnds+" (%s): it returned %s after (error: %v)", S26ReturnBound, late.Round(time.Millisecond), callErr)
	Expect(callErr).To(HaveOccurred(), "a call whose context ended before its answer fails")
}

// waitingGet is a GET of S26's target whose next call waits on w: every
// answer is 429 with a Retry-After (answered counts them), or the client's
// rate limiter has no token left (this took the burst's one). client, when
// set, is a negative control's broken client.
func waitingGet(ctx context.Context, env *e2e.Env, client func(*rest.Config) *rest.Config, w S26Wait) (get func(context.Context) error, answered func() int) {
	cfg := rest.CopyConfig(env.User)
	const target = "s26-target"
	answered = func() int { return 0 }
	switch w {
	case WaitRetryAfter:
		in := &httpfault.Injector{Faults: env.Faults}
		cfg = in.Instrument(cfg)
		restore, n := in.FailRequestsRetryAfter(func(r *http.Request) bool {
			return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/configmaps/"+target)
		}, -1, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "S26: too many requests", S26RetryAfter)
		e2e.Defer(ctx, restore)
		answered = n
	case WaitRateLimiter:
		cfg.QPS, cfg.Burst, cfg.RateLimiter = S26QPS, 1, nil
	default:
		e2e.Fail(ctx, fmt.Sprintf("S26: no such wait %q", w))
	}
	if client != nil {
		cfg = client(cfg)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	get = func(ctx context.Context) error {
		_, err := cs.CoreV1().ConfigMaps(env.Namespace).Get(ctx, target, metav1.GetOptions{})
		return err
	}
	if w == WaitRateLimiter {
		// Takes the burst's one token (the object need not exist: a 404 is
		// an answer).
		_ = get(ctx)
	}
	return get, answered
}

// ContextIgnoringRateLimiter is a negative control's broken client: its
// rate limiter (at the config's QPS and burst) waits for its token whatever
// the context, as a limiter that ignores cancellation would.
func ContextIgnoringRateLimiter(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter = ignoringLimiter{flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)}
	return cfg
}

type ignoringLimiter struct{ flowcontrol.RateLimiter }

func (l ignoringLimiter) Wait(context.Context) error {
	l.Accept()
	return nil
}

// HoldAnswers is a negative control's broken client: its transport hands
// every answer over d after it came, whatever the request's context.
func HoldAnswers(d time.Duration) func(*rest.Config) *rest.Config {
	return func(cfg *rest.Config) *rest.Config {
		cfg = httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			time.Sleep(d) // ignoring the context: the broken part
			return resp, err
		})
		return cfg
	}
}
