package scenarios

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S1Restart is S1's value: both stop modes, both sync modes, on every
// informer stack; and its negative control.
var S1Restart = Register(Scenario{
	ID: "S1", Title: "kube-apiserver restart", Labels: []string{"apiserver-restart"},
	Needs: []cluster.Capability{cluster.CapabilityAPIServerRestart, cluster.CapabilityHA}, Disruptive: true,
	Specs: []Spec{
		{Text: "the informer resumes, converges and relists only where the server says so", Entries: s1Entries()},
		// A transport that reports the end of every watch stream as an
		// error: the stream watcher turns it into an ERROR event and the
		// reflector relists instead of resuming. A second attempt where the
		// first's fault was masked: a restarted apiserver can answer a
		// re-watch 403 while its authorizer starts (seen on client-go
		// v0.31.14: the watch that ended was that 403, after which S1
		// allows the relist), and then no watch end tells the broken client
		// from a sound one. The control passes when an attempt is caught.
		{
			Text: "fails when the client relists whenever a watch ends", Mode: e2e.StreamingList, Attempts: 2,
			Client: EndOfWatchAsError,
			Run:    RunWith(APIServerRestart, RestartInput{Stop: cluster.Hard}),
			Fails:  []string{ResumesWatch, NeedlessReinit}, Because: "an S1 assertion catches a client that relists on every watch end",
		},
		// A client stuck on the connection it lost (the "http2: no cached
		// connection was available" loop) for stuckFor: its requests fail
		// long after the restarted apiserver is ready, then it recovers
		// and converges, so only the first-success bound tells it apart.
		{
			Text: "fails when the client stays stuck on its lost connection after the restart", Mode: e2e.StreamingList, Speed: Slow,
			Client: StuckAfterConnectionLoss,
			Run:    RunWith(APIServerRestart, RestartInput{Stop: cluster.Hard}),
			Fails:  []string{FirstSuccessWithin}, Because: "S1's first-success bound catches a client stuck on a dead connection that recovers later",
		},
	},
})

// StuckAfterConnectionLoss wraps cfg's transport so that, from the first
// request that fails on (the restarted apiserver's address refusing the
// re-watch), every request fails for stuckFor with the error of a client
// stuck on a dead HTTP/2 connection instead of dialling anew; then it
// recovers.
func StuckAfterConnectionLoss(cfg *rest.Config) *rest.Config {
	var mu sync.Mutex
	var until time.Time
	return httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
		mu.Lock()
		stuck := time.Now().Before(until)
		mu.Unlock()
		if stuck {
			return nil, errors.New("http2: no cached connection was available (a broken client stuck on its lost connection)")
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			mu.Lock()
			if until.IsZero() {
				until = time.Now().Add(stuckFor)
			}
			mu.Unlock()
		}
		return resp, err
	})
}

// s1Entries are S1's entries: each stop mode on each informer stack, in
// both sync modes; the hard stop on the typed stack is the sample.
func s1Entries() []Entry {
	var entries []Entry
	for _, stack := range probe.Stacks {
		for _, stop := range []struct {
			mode          cluster.StopMode
			name, feature string
		}{{cluster.Graceful, "graceful (SIGTERM)", "graceful stop"}, {cluster.Hard, "hard (SIGKILL)", "hard stop"}} {
			entries = append(entries, Entry{
				Name: stop.name, Feature: stop.feature,
				Modes:  []e2e.SyncMode{e2e.StreamingList.OnStack(stack), e2e.ListWatch.OnStack(stack)},
				Sample: stop.mode == cluster.Hard && stack == probe.StackTyped,
				Run:    RunWith(APIServerRestart, RestartInput{Stop: stop.mode}),
			})
		}
	}
	return entries
}

// S1 (seeds 000, 004): kube-apiserver 0 stops and starts again on the same
// address and certificates, gracefully (SIGTERM, with its drain) and hard
// (SIGKILL), while the test user's pod informer (the stack's resource's)
// watches it. A second
// apiserver on the same etcd takes writes while apiserver 0 is down (create,
// update, delete); more follow once it is back. The informer must reconnect
// without a new client, converge to a quorum read, deliver every delete, get
// its first 2xx answer within a bound of the apiserver being ready again,
// resume its watch before anything else, and re-initialise only where the
// server told it to.
//
// The informer talks to apiserver 0 directly, not through the fault proxy:
// that is what "the same address" means, and a TCP proxy in front of a dead
// upstream accepts and then resets, which client-go treats differently from
// the "connection refused" of a dead address (below).
//
// Graceful stops use the fast-graceful-shutdown profile: with default flags
// kube-apiserver keeps open watches for its whole 60 s shutdown timeout
// (--request-timeout; fixtures/profiles/fast-graceful-shutdown.yaml), which would make the spec
// a minute longer and change nothing the informer sees but the wait; the
// profile closes them after 2 s
// (--shutdown-watch-termination-grace-period).
//
// Expected of client-go v0.36 (tools/cache/reflector.go), in both stop modes
// and both sync modes:
//  1. The watch ends without an error the reflector sees: SIGTERM closes it
//     cleanly (EOF); SIGKILL ends the HTTP/2 connection and the body read
//     returns io.ErrUnexpectedEOF, which apimachinery
//     pkg/watch/streamwatcher.go receive() treats as a normal close (no
//     ERROR event). The watch had events, so handleAnyWatch returns nil
//     (it is not a "very short watch"), and watch() loops: the next request
//     is a plain WATCH from the last resourceVersion, never a relist. The
//     spec makes sure the watch has delivered an event before the stop.
//  2. While nothing listens on the address, that WATCH gets "connection
//     refused", which isWatchErrorRetriable accepts: back off and watch
//     again, still no relist.
//  3. The new apiserver answers the WATCH with 410 "too old resource
//     version" (its watch cache starts at etcd's current revision, newer
//     than the informer's: apiserver pkg/storage/cacher/watch_cache.go
//     getAllEventsSinceLocked), which watch() answers with return nil and
//     ListAndWatch with a relist; or, in the first second of the new
//     process, 403 Forbidden (RBAC's informers not synced yet), which
//     isWatchErrorRetriable rejects: ListAndWatch returns the error and
//     relists after backoff (a relist answered 403 relists again).
//     In a graceful stop the resumed WATCH can also reach the terminating
//     apiserver, which accepts it and ends it at once (0 events, a few ms);
//     handleAnyWatch calls that a VeryShortWatchError and ListAndWatch
//     relists (it happens in some runs).
//     Once a relist has started, its failures (refused, 403) make it try
//     again after backoff (watchList falls back to a LIST in the same
//     round): those are the same relist, not new decisions to relist.
//  4. Exactly one re-initialisation succeeds (a LIST then a WATCH, or a
//     streaming list: watchList), replacing the store: the pod deleted while
//     the apiserver was down is delivered as a DeletedFinalStateUnknown
//     tombstone.
//
// So every relist must start after a 410 or a 403 answered by the server
// (or the graceful race above); one started by a transport error or any
// other clean close would be a regression: a relist where resuming was
// possible.
//
// On the CRD stacks the restarted apiserver builds a custom resource's
// storage, watch cache included, on the first request for it
// (apiextensions-apiserver customresource_handler.go
// getOrCreateServingInfoFor), and a cache not yet ready answers 429 with
// Retry-After (apiserver pkg/storage/cacher/cacher.go): measured, the
// relist started by the 403 is answered 429 once before it succeeds, a
// retry of the same relist.
const (
	// FirstSuccessBound bounds the time from apiserver 0 being ready again to
	// the informer's first 2xx answer after an outage of up to 6 s (a quiet
	// machine's 3-6 s): the reflector backs off 800 ms doubling with jitter
	// 1.0 (reflector.go defaultBackoff*), so after the outage plus the ~1 s
	// of 403s the pending wait is at most the 6.4-12.8 s step. A longer
	// outage (a loaded machine restarts kube-apiserver slower) has a later
	// step pending: firstSuccessBound derives the bound from the outage the
	// spec measured. A client stuck on a dead connection (the "http2: no
	// cached connection was available" loop) never gets an answer.
	FirstSuccessBound = 15 * time.Second
	// rbacWindow is how long a restarted kube-apiserver answers 403 while
	// its authorizer's informers sync (measured: under a second).
	rbacWindow = time.Second
	// firstSuccessSlack is what the backoff does not bound: the round trip
	// of the request that succeeds, timers scheduled late.
	firstSuccessSlack = 15*time.Second - rbacWindow - 2*6400*time.Millisecond
	// stuckFor is how long StuckAfterConnectionLoss fails every request:
	// past the bound after any outage up to 15 s (the reflector's attempts
	// after 30 s of failures start no sooner than 50.4 s: 0.8 + 1.6 + ...
	// + 25.6), within the convergence wait after failures.
	stuckFor = 30 * time.Second
	// PreStopEventTimeout bounds the wait for the pre-stop update to
	// reach the informer.
	PreStopEventTimeout = 10 * time.Second
	// veryShortWatch is handleAnyWatch's limit: a watch that ends sooner
	// with no event is a VeryShortWatchError.
	veryShortWatch = time.Second
)

// FirstSuccessWithin is the first-success assertion (its negative control
// matches it).
const FirstSuccessWithin = "first 2xx request after kube-apiserver 0 was ready again came within"

// S1Allowed says whether a re-initialisation that started a relist (not a
// retry of one) followed what the comment above allows: a 410 or a 403
// answer, or, in a graceful stop, a re-watch the terminating apiserver
// (started before the old process exited) accepted and ended at once.
func S1Allowed(ri probe.Reinit, stop cluster.StopMode, gone time.Time) bool {
	a := ri.After
	if a == nil {
		return false
	}
	switch ri.Cause {
	case probe.CauseGone:
		return a.Status == http.StatusGone || a.ErrorCode == http.StatusGone
	case probe.CauseOtherStatus:
		return a.Status == http.StatusForbidden
	case probe.CauseCleanClose:
		return stop == cluster.Graceful && a.Watch && a.Events == 0 && a.Duration() < veryShortWatch && a.Start.Before(gone)
	}
	return false
}

// RestartInput configures one run of APIServerRestart: how apiserver 0
// stops.
type RestartInput struct {
	Stop cluster.StopMode
}

// APIServerRestart runs S1 (above) on a cluster of two kube-apiservers
// with the fast-graceful-shutdown profile.
func APIServerRestart(ctx context.Context, s e2e.Setup, in RestartInput) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{APIServers: 2, Profile: "fast-graceful-shutdown"})
	c := e2e.Require[apiServers](ctx, env.Backend, "stop and start one of several kube-apiservers")
	// The objects of the resource the spec's stack watches: pods, or the
	// custom resource on the CRD stacks.
	api := env.SubjectsFor(env.ConfigThrough(cluster.Admin, 1))
	server := api.Quorum()
	created := map[string]probe.Object{}
	for _, n := range []string{"keep", "update-down", "delete-down", "update-up", "delete-up"} {
		o, err := api.Create(ctx, n)
		Expect(err).NotTo(HaveOccurred())
		created[n] = probe.Object{Key: o.Key, UID: o.UID}
	}
	pods := env.StartProbe(ctx, api.Name(), env.ConfigThrough(cluster.TestUser, 0), probe.Options{Namespace: env.Namespace})
	pods.EventuallyConverged(ctx, server)

	e2e.By(ctx, "updating a pod and waiting for the informer's watch to deliver it, so the watch is not a very short one")
	watchBeforeStop := openLongWatch(ctx, api, pods, created["keep"].Key)

	e2e.By(ctx, "stopping kube-apiserver 0 ("+string(in.Stop)+") and writing through apiserver 1 meanwhile")
	stopped := time.Now()
	endStop := env.TimePhase("server: kube-apiserver stop (" + string(in.Stop) + ")")
	Expect(c.StopAPIServer(ctx, 0, in.Stop)).To(Succeed())
	endStop()
	gone := time.Now() // the old process has exited: a 2xx from here on is the new one's
	changeThree(ctx, api, "down")

	e2e.By(ctx, "starting kube-apiserver 0 again on the same address and certificates, then writing more")
	endStart := env.TimePhase("server: kube-apiserver start")
	Expect(c.StartAPIServer(ctx, 0)).To(Succeed())
	endStart()
	ready := time.Now()
	changeThree(ctx, api, "up")

	recovery := pods.EventuallyConverged(ctx, server)
	pods.ExpectDeletesObserved(created["delete-down"], created["delete-up"])
	n := pods.Report(recovery)
	rec := pods.Recorder.Snapshot()
	e2e.Logf(ctx, "S1 %s: outage %s, numbers: %s", in.Stop, ready.Sub(stopped).Round(time.Millisecond), n)

	after := RequestsAfter(rec, watchBeforeStop.ID)
	Expect(after).NotTo(BeEmpty(), "requests after the stop")
	first := after[0]
	Expect(first.Watch && !first.SendInitialEvents && first.ResourceVersion != "").To(BeTrue(),
		"the informer "+ResumesWatch+" from its last resourceVersion before anything else (first request after the stop: %+v)", first)

	firstOK, ok := firstSuccessAfter(after, gone)
	Expect(ok).To(BeTrue(), "a request of the informer succeeded after the restart")
	outage := ready.Sub(stopped)
	bound := firstSuccessBound(outage)
	e2e.Logf(ctx, "S1 %s: first 2xx %s after ready (bound %s after an outage of %s)", in.Stop, firstOK.Start.Sub(ready).Round(time.Millisecond), bound, outage.Round(time.Millisecond))
	env.RecordBound("first 2xx request after kube-apiserver 0 was ready", ready, firstOK.Start, bound, firstOK.Start.Sub(ready) < bound)
	Expect(firstOK.Start.Sub(ready)).To(BeNumerically("<", bound),
		"the "+FirstSuccessWithin+" %s (the reflector's longest pending backoff after an outage of %s; the request: %+v)", bound, outage.Round(time.Millisecond), firstOK)
	expectOneAllowedReinit(rec, in.Stop, gone, n)
}

// openLongWatch relabels the object keep and waits until the informer's
// watch delivered it (so the watch is not a very short one); it returns
// that watch request.
func openLongWatch(ctx context.Context, api *e2e.Subjects, pods *e2e.Observed, keep string) probe.Request {
	Relabel(ctx, api, "keep", "before")
	Eventually(func() []string { return UpdatedKeys(pods) }).WithTimeout(PreStopEventTimeout).WithPolling(20*time.Millisecond).
		Should(ContainElement(keep), "the informer's watch delivered the update before the stop")
	// The informer's watch open now: the last watch request (a Get or List
	// a spec's own client sends through the probe may come after it).
	var watch probe.Request
	for _, r := range pods.Recorder.Snapshot().ObjectRequests() {
		if r.Watch {
			watch = r
		}
	}
	Expect(watch.Watch).To(BeTrue(), "the informer has a watch open before the stop")
	return watch
}

// changeThree creates "create-<phase>", relabels "update-<phase>" and
// deletes "delete-<phase>".
func changeThree(ctx context.Context, api *e2e.Subjects, phase string) {
	_, err := api.Create(ctx, "create-"+phase)
	Expect(err).NotTo(HaveOccurred())
	Relabel(ctx, api, "update-"+phase, phase)
	Expect(api.Delete(ctx, "delete-"+phase)).To(Succeed())
}

// expectOneAllowedReinit: every re-initialisation has a cause S1 allows
// for the stop (S1Allowed), and exactly one succeeded.
func expectOneAllowedReinit(rec probe.Record, stop cluster.StopMode, gone time.Time, n e2e.Numbers) {
	succeeded := 0
	for _, ri := range probe.Reinitialisations(rec) {
		Expect(ri.Cause).NotTo(Equal(probe.CauseUnknown), "every re-initialisation has a cause: %s", ri)
		if ri.Request.Status == http.StatusOK {
			succeeded++
		}
		if ri.After != nil && ri.After.Reinitialises() {
			continue // the relist in progress trying again (or a streaming list falling back to a LIST)
		}
		Expect(S1Allowed(ri, stop, gone)).To(BeTrue(),
			NeedlessReinit+": %s (allowed: after 410 Gone, 403 Forbidden, or a graceful stop's terminating apiserver ending a re-watch at once; all: %v)", ri, n.ReinitDetails)
	}
	Expect(succeeded).To(Equal(1), "exactly one successful re-initialisation after the restart (all: %v)", n.ReinitDetails)
}

// Relabel sets label "changed" of object name (a pod, or a custom
// resource on the CRD stacks) to value.
func Relabel(ctx context.Context, s *e2e.Subjects, name, value string) {
	ginkgo.GinkgoHelper()
	_, err := s.SetLabels(ctx, name, map[string]string{"changed": value})
	Expect(err).NotTo(HaveOccurred())
}

// UpdatedKeys are the keys of the Updates the handler saw.
func UpdatedKeys(o *e2e.Observed) []string {
	var keys []string
	for _, e := range o.Recorder.Snapshot().Events {
		if e.Kind == probe.Update {
			keys = append(keys, e.Key)
		}
	}
	return keys
}

// RequestsAfter returns the requests after the one with the given ID.
func RequestsAfter(rec probe.Record, id int) []probe.Request {
	for i, r := range rec.Requests {
		if r.ID == id {
			return rec.Requests[i+1:]
		}
	}
	return nil
}

// firstSuccessBound is the longest the informer may take, from apiserver 0
// being ready, to its first 2xx after an outage (from the stop to ready) of
// the given length, derived from client-go's reflector backoff
// (tools/cache/reflector.go NewReflectorWithOptions: wait.Backoff from
// defaultBackoffInit 800 ms, factor 2, jitter 1.0, capped at
// defaultBackoffMax 30 s; apimachinery wait.Backoff.Step waits [d, 2d)).
// The informer's requests fail from the stop until the new process's 403s
// end, at most rbacWindow after ready. The k-th wait (d = 800 ms x 2^k)
// starts no sooner than the sum of the k waits before it, 800 ms x
// (2^k - 1): the largest k that fits in the failing time is the step that
// can be pending after the last failure, and its wait is at most 2d. Never
// below FirstSuccessBound, the bound of a quiet machine's outage.
func firstSuccessBound(outage time.Duration) time.Duration {
	return max(FirstSuccessBound, rbacWindow+reflectorLongestWait(outage+rbacWindow)+firstSuccessSlack)
}

// reflectorLongestWait is the longest wait the reflector's backoff can have
// pending after failing requests for the given time: see firstSuccessBound.
func reflectorLongestWait(failing time.Duration) time.Duration {
	d, start := reflectorBackoffInit, time.Duration(0) // step k's d and its earliest start
	for d < reflectorBackoffMax && start+d <= failing {
		start += d
		d *= 2
	}
	return 2 * min(d, reflectorBackoffMax)
}

// firstSuccessAfter is the first request started after t and answered 2xx.
func firstSuccessAfter(rs []probe.Request, t time.Time) (probe.Request, bool) {
	for _, r := range rs {
		if r.Start.After(t) && r.Status >= 200 && r.Status < 300 {
			return r, true
		}
	}
	return probe.Request{}, false
}
