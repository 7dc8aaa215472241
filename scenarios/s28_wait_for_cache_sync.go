package scenarios

import (
	"context"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
)

// SyncWaitReturns is S28's assertion: each wait for the cache sync returned
// within S28Bound of the informer's sync.
const SyncWaitReturns = "the wait for the cache sync returned within its bound of the sync"

// S28's numbers: how many fresh informers it waits on, how soon after
// HasSynced turned true each wait must return (client-go's polling waiters
// look every 100 ms, shared_informer.go syncedPollPeriod; the rest is
// slack for a loaded machine), and what counts as returning at once.
const (
	S28Informers = 5
	S28Bound     = 250 * time.Millisecond
	s28AtOnce    = 15 * time.Millisecond
)

// SyncWaiter waits until every synced reports true or stop closes, as
// cache.WaitForCacheSync does.
type SyncWaiter func(stop <-chan struct{}, synced ...cache.InformerSynced) bool

// S28SyncWait is S28's value: both sync modes, and its negative control.
var S28SyncWait = Register(Scenario{
	ID: "S28", Title: "waiting for the cache sync", Labels: []string{"sync-wait"},
	Specs: []Spec{
		{
			Text: "the factory's WaitForCacheSync and cache.WaitForCacheSync return promptly once the informer synced", Sample: true,
			Entries: []Entry{{Run: func(ctx context.Context, s e2e.Setup, in Input) {
				WaitForCacheSync(ctx, s, in.Probe(), nil)
			}}},
		},
		{
			Text:  "fails when the wait looks only every second",
			Run:   RunWith2(WaitForCacheSync, probe.Options{}, SlowSyncWaiter),
			Fails: []string{SyncWaitReturns}, Because: "the S28 bound catches a wait that polls every second",
		},
	},
})

// WaitForCacheSync is S28: S28Informers fresh informers are started one
// after the other, and for each, while it syncs, the factory's
// WaitForCacheSync (typed stacks) and the free function (wait, normally
// cache.WaitForCacheSync) wait for it; HasSynced is watched every
// millisecond. Each wait must return within S28Bound of the moment
// HasSynced turned true. Observed (report observations): how each waiter
// returns, "at once" (all within 15 ms) or "polled", and the longest
// latency.
//
// Expected of client-go: cache.WaitForCacheSync polls every 100 ms on
// v0.31-v0.37 (shared_informer.go WaitForCacheSync: wait.PollImmediateUntil
// with syncedPollPeriod); the factory's WaitForCacheSync polls through it up
// to v0.35 and, from v0.36, waits on each informer's HasSyncedChecker
// without polling (informers/factory.go WaitForCacheSyncWithContext,
// cache.WaitFor): it returns at once.
func WaitForCacheSync(ctx context.Context, s e2e.Setup, opts probe.Options, waiter SyncWaiter) {
	if waiter == nil {
		waiter = cache.WaitForCacheSync
	}
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	writer := env.Subjects
	createNamed(ctx, writer, "s28-%d", 3)
	opts.Namespace = env.Namespace
	var lat s28Latencies
	for i := range S28Informers {
		obs := env.StartProbeUnsynced(fmt.Sprintf("%s-%d", writer.Name(), i), env.User, opts)
		lat.measure(ctx, env, obs, waiter)
	}
	var late []string
	for _, w := range []struct {
		what string
		lat  []time.Duration
	}{{"cache.WaitForCacheSync", lat.free}, {"the factory's WaitForCacheSync", lat.factory}} {
		if len(w.lat) == 0 {
			continue
		}
		longest := slices.Max(w.lat)
		// A category, the same from run to run; the number apart.
		how := "polled"
		if longest <= s28AtOnce {
			how = "at once"
		}
		env.Observe(report.Value(w.what+" returns", how))
		env.Observe(report.Seconds(w.what+": longest wait after the sync", longest))
		env.Note("S28 "+w.what, fmt.Sprintf("%s, up to %d ms: latencies %v (bound %s)", how, longest.Milliseconds(), w.lat, S28Bound))
		if longest > S28Bound {
			late = append(late, fmt.Sprintf("%s: %s after the sync", w.what, longest.Round(time.Millisecond)))
		}
	}
	Expect(late).To(BeEmpty(), SyncWaitReturns+" (%s)", S28Bound)
}

// s28Latencies are how long after the informers synced the waits
// returned: waiter's (free) and the factories' (factory).
type s28Latencies struct{ free, factory []time.Duration }

// s28Returned is a wait's return: the factory's or not, when, and whether
// it reported the informer synced.
type s28Returned struct {
	factory bool
	at      time.Time
	synced  bool
}

// measure waits for obs's sync with waiter and with its factory's
// WaitForCacheSync (where it has one), both at once, and records how long
// after HasSynced turned true (polled every millisecond) each returned.
func (l *s28Latencies) measure(ctx context.Context, env *e2e.Env, obs *e2e.Observed, waiter SyncWaiter) {
	waitCtx, cancel := context.WithTimeout(ctx, e2e.SyncTimeout)
	defer cancel()
	stop := waitCtx.Done()
	results := make(chan s28Returned, 2)
	waits := 1
	go func() {
		ok := waiter(stop, obs.Informer.HasSynced)
		results <- s28Returned{at: time.Now(), synced: ok}
	}()
	if obs.Factory != nil {
		waits++
		go func() {
			res := obs.Factory.WaitForCacheSync(stop)
			ok := len(res) > 0
			for _, synced := range res {
				ok = ok && synced
			}
			results <- s28Returned{factory: true, at: time.Now(), synced: ok}
		}()
	}
	// The instrument: when HasSynced turned true, to the millisecond.
	var flipped time.Time
	err := wait.PollUntilContextCancel(waitCtx, time.Millisecond, true, func(context.Context) (bool, error) {
		if obs.Informer.HasSynced() {
			flipped = time.Now()
			return true, nil
		}
		return false, nil
	})
	Expect(err).NotTo(HaveOccurred(), "informer %s synced within %s", obs.Name, e2e.SyncTimeout)
	for range waits {
		r := <-results // each waiter returns by SyncTimeout: stop closes
		Expect(r.synced).To(BeTrue(), "the wait for informer %s's sync reported it synced", obs.Name)
		lat := max(r.at.Sub(flipped), 0)
		what := "cache.WaitForCacheSync"
		if r.factory {
			what = "the factory's WaitForCacheSync"
			l.factory = append(l.factory, lat)
		} else {
			l.free = append(l.free, lat)
		}
		env.RecordBound(fmt.Sprintf("%s returned after informer %s synced", what, obs.Name), flipped, r.at, S28Bound, lat <= S28Bound)
	}
}

// SlowSyncWaiter is a negative control's broken waiter: it looks first a
// second after it was called, then every second.
func SlowSyncWaiter(stop <-chan struct{}, synced ...cache.InformerSynced) bool {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return false
		case <-t.C:
		}
		done := true
		for _, s := range synced {
			done = done && s()
		}
		if done {
			return true
		}
	}
}
