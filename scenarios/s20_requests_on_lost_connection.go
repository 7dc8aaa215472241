package scenarios

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S20Requests is S20's value: both sync modes, and its negative control.
var S20Requests = Register(Scenario{
	ID: "S20", Title: "the clientset's own requests when the informers' connection is lost", Labels: []string{"lost-connection-requests"},
	Specs: []Spec{
		// On the typed stack: its clientset shares the informers'
		// connection (the dynamic and metadata informers have clients of
		// their own).
		{
			Text: "a GET in flight and a LIST issued meanwhile are retried on a new connection and succeed", Sample: true,
			Entries: []Entry{{Run: func(ctx context.Context, s e2e.Setup, in Input) {
				RequestsOnLostConnection(ctx, s, in.Probe(), DefaultRetries)
			}}},
		},
		{
			Text:  "fails when the requests may not be retried (MaxRetries(0))",
			Run:   RunWith2(RequestsOnLostConnection, probe.Options{}, 0),
			Fails: []string{RequestsRetried}, Because: "the S20 assertion catches requests that fail with the lost connection",
		},
	},
})

// RequestsRetried is S20's assertion: the controller's own requests on the
// informers' clientset succeeded although their connection was lost.
const RequestsRetried = "the clientset's own GET and LIST succeeded on a new connection"

// clientGoRetryAfter is the wait client-go puts before retrying a GET that
// failed on a lost connection: rest/with_retry.go IsNextRetry answers the
// error with an artificial "Retry-After: 1" response.
const clientGoRetryAfter = time.Second

// RequestsRecoveryBound is how long after the blackhole's start S20's
// requests must have succeeded: the health check's detection (read-idle +
// ping timeout), client-go's retry delay, and staleSlack for the new dial
// and the answer on a loaded machine.
func RequestsRecoveryBound(readIdle, ping time.Duration) time.Duration {
	return readIdle + ping + clientGoRetryAfter + staleSlack
}

// DefaultRetries leaves a request's retries at client-go's default (10).
const DefaultRetries = -1

// RequestsOnLostConnection is S20: while an informer watches, its HTTP/2
// connection goes silent (the fault proxy drops every byte, closes
// nothing). A GET of one object is in flight on that connection, and a
// LIST (of configmaps: not the informer's own list) is issued while the
// connection is silent but not yet declared lost; both through the
// informer's clientset, as a controller's own calls are. When the HTTP/2
// health check (read-idle and ping timeouts of ShortReadIdle and
// ShortPingTimeout) declares the connection lost, both must be retried on a
// new connection and succeed within RequestsRecoveryBound, and the informer
// must recover too. retries is each request's retry limit
// (rest.Request.MaxRetries; DefaultRetries for client-go's own).
//
// Expected of client-go v0.36 (rest/request.go request): a GET failing with
// a connection reset, a probable EOF or "http2: client connection lost"
// (apimachinery util/net IsHTTP2ConnectionLost) is retryable
// (isErrRetryableFunc); rest/with_retry.go IsNextRetry retries it after 1 s,
// up to maxRetries (10 by default, rest/request.go NewRequest); x/net's
// http2 transport drops the lost connection from its pool, so the retry
// dials a new one. Writes are never retried (not idempotent). Before
// v0.32 (kubernetes PR #126954) a lost HTTP/2 connection was not retryable:
// the GET and the LIST fail (the verdicts explain it).
func RequestsOnLostConnection(ctx context.Context, s e2e.Setup, opts probe.Options, retries int) {
	readIdle, ping := ShortReadIdle, ShortPingTimeout
	setHTTP2HealthCheck(ctx, &readIdle, &ping)
	bound := RequestsRecoveryBound(readIdle, ping)
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	server := env.Subjects.Quorum()
	obs := startSharingInformer(ctx, env, opts)
	rc := obs.Client.CoreV1().RESTClient()
	request := func(r *rest.Request) *rest.Request {
		if retries != DefaultRetries {
			r = r.MaxRetries(retries)
		}
		return r
	}

	e2e.By(ctx, "silencing the connection (bytes dropped both ways, nothing closed); new connections get through")
	start := time.Now()
	e2e.Defer(ctx, env.Proxy.BlackholeCurrent())
	reqCtx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	calls := &s20Calls{start: start, ctx: reqCtx}
	resource := env.Subjects.Name()
	calls.do("GET "+resource+"/wanted (in flight when the connection went silent)", 0, func() error {
		return request(rc.Get().Namespace(env.Namespace).Resource(resource).Name("wanted")).Do(reqCtx).Error()
	})
	calls.do("LIST configmaps (issued while it was silent)", readIdle/2, func() error {
		return request(rc.Get().Namespace(env.Namespace).Resource("configmaps")).Do(reqCtx).Error()
	})
	// Bounded by reqCtx: each request returns by the bound at the latest.
	e2e.Logf(ctx, "waiting for the requests (bound %s)", bound)
	calls.wg.Wait()

	recovery := obs.EventuallyConverged(ctx, server)
	n := obs.Report(recovery)
	line, failed := calls.outcomes()
	env.Note("S20 requests", fmt.Sprintf("%sdials %d (bound %s, retries %s)", line, n.Dials, bound, retriesName(retries)))
	if len(failed) > 0 {
		env.RecordBoundFailed("the clientset's requests succeeded", start, time.Now(), bound, fmt.Sprintf("%d of %d requests failed (%s)", len(failed), len(calls.results), failed[0]))
	} else {
		env.RecordBound("the clientset's requests succeeded", start, time.Now(), bound, true)
	}
	Expect(failed).To(BeEmpty(), RequestsRetried+" within %s of the blackhole; numbers: %s", bound, n)
}

// startSharingInformer starts S20's informer, synced with its watch open,
// and checks that its clientset shares the informer's one connection (a
// GET of "wanted"), else skips: an informer source with an HTTP client of
// its own (controller-runtime's cache) does not, and S20 tests nothing.
func startSharingInformer(ctx context.Context, env *e2e.Env, opts probe.Options) *e2e.Observed {
	writer := env.Subjects
	_, err := writer.Create(ctx, "wanted")
	Expect(err).NotTo(HaveOccurred())
	obs := startConverged(ctx, env, opts)
	var watch probe.Request
	Eventually(func(g Gomega) {
		watch = e2e.ExpectWatchOpen(g, "the informer", obs.Recorder.Snapshot().Requests)
	}).WithContext(ctx).WithTimeout(e2e.EventTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	rc := obs.Client.CoreV1().RESTClient()
	Expect(rc.Get().Namespace(env.Namespace).Resource(writer.Name()).Name("wanted").Do(ctx).Error()).To(Succeed())
	rs := obs.Recorder.Snapshot().Requests
	if warm := rs[len(rs)-1]; warm.Conn != watch.Conn {
		e2e.Skip(ctx, fmt.Sprintf("the informers (%s) and their clientset are on different connections (%s, %s): S20 needs a clientset that shares the informers' connection", obs.Stack, watch.Conn, warm.Conn))
	}
	Expect(env.Proxy.Stats().Active()).To(HaveLen(1), "the informer and its clientset share one connection")
	return obs
}

// s20Calls are the clientset's requests S20 makes while the connection is
// silent, each in the background after a delay, bounded by ctx.
type s20Calls struct {
	start   time.Time
	ctx     context.Context
	mu      sync.Mutex
	results []s20Result
	wg      sync.WaitGroup
}

// s20Result is one request's: what, its error, when it returned.
type s20Result struct {
	what string
	err  error
	took time.Duration
}

// do makes call, described as what, after the delay (or at once when ctx
// ends first).
func (c *s20Calls) do(what string, after time.Duration, call func() error) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTimer(after)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.ctx.Done():
		}
		err := call()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.results = append(c.results, s20Result{what: what, err: err, took: time.Since(c.start)})
	}()
}

// outcomes are the requests' outcomes in a line, and the failed ones.
func (c *s20Calls) outcomes() (line string, failed []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.results {
		outcome := "ok"
		if r.err != nil {
			outcome = r.err.Error()
			failed = append(failed, fmt.Sprintf("%s: %v", r.what, r.err))
		}
		line += fmt.Sprintf("%s: %s after %s; ", r.what, outcome, r.took.Round(time.Millisecond))
	}
	return line, failed
}

func retriesName(retries int) string {
	if retries == DefaultRetries {
		return "client-go's default"
	}
	return fmt.Sprint(retries)
}
