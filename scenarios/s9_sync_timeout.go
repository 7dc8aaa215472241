package scenarios

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S9SyncTimeout is S9's value: a sync with the apiserver unreachable in
// both sync modes, and its negative control.
var S9SyncTimeout = Register(Scenario{
	ID: "S9", Title: "sync with an unreachable apiserver", Labels: []string{"sync-timeout"},
	Specs: []Spec{
		{
			Text: "gives up at the caller's bound, backs off meanwhile, and syncs once the apiserver is reachable", Sample: true,
			Entries: []Entry{{Run: RunBody(SyncWithUnreachableAPIServer)}},
		},
		// A transport that retries every failed request at once, 50 times:
		// the dial bound must catch it.
		{
			Text:   "fails when the client retries in a hot loop",
			Client: EagerRetry,
			Run:    RunBody(SyncWithUnreachableAPIServer),
			Fails:  []string{DialsWhileUnreachable}, Because: "the S9 bound catches a hot loop",
		},
	},
})

// S9 (seed 003 scenario 1): WaitForCacheSync while the apiserver cannot be
// reached. Bounded by a context of syncBound it must give up at that bound,
// the reflector must back off meanwhile (a bounded number of attempts, no
// hot loop), and once the apiserver is reachable the sync completes.
//
// Expected of client-go v0.36: tools/cache/reflector.go RunWithContext runs
// ListAndWatch under wait.BackoffUntil with the reflector's backoff manager
// (800 ms initial, doubling to 30 s, with jitter), so in 3 s it dials a
// handful of times; tools/cache/shared_informer.go WaitForCacheSync returns
// false when its stop channel closes.
const (
	// DialsWhileUnreachable is S9's no-hot-loop bound; its negative control matches it.
	DialsWhileUnreachable = "dials while unreachable"
	syncBound             = 3 * time.Second
	// maxDialsInSyncBound: 800 ms backoff doubling gives about 3 attempts in
	// 3 s; allow slack for jitter and the watch-list fallback to a LIST.
	maxDialsInSyncBound = 10
)

// SyncWithUnreachableAPIServer runs S9 (above) on an informer of the test
// user (built with s.Client when set: a negative control breaks it).
func SyncWithUnreachableAPIServer(ctx context.Context, s e2e.Setup) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	proxy := env.Proxy

	e2e.By(ctx, "refusing connections, then starting the informer")
	reachable := proxy.RefuseNew()
	pods := env.StartProbeUnsynced("pods", env.User, probe.Options{Namespace: env.Namespace})
	e2e.Defer(ctx, func() { pods.Report(0) })
	bounded, cancel := context.WithTimeout(ctx, syncBound)
	defer cancel()
	start := time.Now()
	err := pods.WaitForSync(bounded)
	waited := time.Since(start)
	Expect(err).To(HaveOccurred(), "WaitForCacheSync reports no sync while the apiserver is unreachable")
	Expect(waited).To(BeNumerically("~", syncBound, 500*time.Millisecond), "WaitForCacheSync gave up at the caller's bound")
	dials := len(pods.Recorder.Snapshot().Dials)
	Expect(dials).To(BeNumerically(">=", 1), "the reflector tried")
	Expect(dials).To(BeNumerically("<=", maxDialsInSyncBound), DialsWhileUnreachable+" for %s (backoff, no hot loop)", syncBound)

	e2e.By(ctx, "letting connections through again")
	Expect(reachable()).To(Succeed())
	syncCtx, cancelSync := context.WithTimeout(ctx, e2e.SyncTimeout)
	defer cancelSync()
	Expect(pods.WaitForSync(syncCtx)).To(Succeed(), "the informer syncs once the apiserver is reachable")
}

// EagerRetry is the broken client of S9's negative control: a transport
// that retries every failed request at once, 50 times.
func EagerRetry(cfg *rest.Config) *rest.Config {
	return httpfault.Intercept(cfg, func(next http.RoundTripper, req *http.Request) (*http.Response, error) {
		var err error
		for range 50 {
			var resp *http.Response
			if resp, err = next.RoundTrip(req); err == nil {
				return resp, nil
			}
		}
		return nil, err
	})
}
