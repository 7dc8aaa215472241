package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S31's assertions of a streaming list's initial events.
const (
	RVNotBeforeInitialEventsEnd = "while a streaming list's initial events arrived no resource-version API reported an object's resourceVersion: each reported nothing (or the last sync's) until the initial-events-end bookmark reached the client"
	RVResumeFromLastSync        = "a streaming list cut before its initial-events-end bookmark was retried from the last sync's resourceVersion, not from one of its objects'"
)

// The shape of S31's initial-events window: S31WindowObjects pods, each
// initial event held s31EventDelay on its way to the client (a slow
// server or network: the window lasts about S31WindowObjects x
// s31EventDelay), the first streaming list cut after half of them.
const (
	S31WindowObjects = 20
	s31EventDelay    = 20 * time.Millisecond
)

// InitialEventsInput configures one run of RVDuringInitialEvents.
type InitialEventsInput struct {
	// AdvanceOnAdded: the negative control's broken reader, which reports
	// the resourceVersion of the newest initial object the client got
	// while the API itself reports nothing: a client that advances its
	// version with every ADDED event of the initial ones.
	AdvanceOnAdded bool
}

// RVDuringInitialEvents is S31's streaming-list window (streaming-list
// mode): the informers' resource-version APIs while a streaming list's
// initial events arrive. The objects come in no resourceVersion order, and
// only the initial-events-end bookmark's resourceVersion is a point the
// server promised to resume from (its watch-list contract, KEP-3157): a
// client that reports, or resumes from, an object's version before it
// resumes from a point never promised, and may miss every change between
// the objects' versions and the list's.
//
// Two informers of the spec's pods, each through a client of its own: a
// shared informer (SharedIndexInformer.LastSyncResourceVersion, its
// GetController()'s, its store's LastStoreSyncResourceVersion) and a bare
// cache.NewReflector into a cache.NewStore (Reflector.LastSyncResourceVersion,
// the store's). Their streaming lists are slowed (each initial event held
// s31EventDelay) and the first is cut after half of the initial objects
// (httpfault.StreamInjector CutInitialEvents: the client reads an error,
// as from a broken connection). Every API is read every 5 ms from before
// the informers start until they synced: no read that ended before the
// initial-events-end bookmark reached the client may report anything but
// "" (there was no sync before), and the retry after the cut must ask
// from "" too (RVResumeFromLastSync). After the sync each API reports the
// bookmark's version within S31Bound (RVAtSync).
//
// Expected of client-go v0.31-v0.37 (tools/cache/reflector.go watchList):
// the initial events go into a temporary store, the version they carry
// into a local variable (handleListWatch's setter), and only after the
// initial-events-end bookmark the store is replaced and
// setLastSyncResourceVersion called; a streaming list that ends before it
// returns an error and the next one starts from
// r.relistResourceVersion(), the last sync's (here ""). The shared
// informer's store is replaced at the bookmark's version
// (LastStoreSyncResourceVersion, v0.36+ with AtomicFIFO).
func RVDuringInitialEvents(ctx context.Context, s e2e.Setup, in InitialEventsInput) {
	Expect(s.Mode.Streaming).To(BeTrue(), "S31's initial-events window is a streaming list's, not %s's", s.Mode)
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	if env.Stack() != probe.StackTyped {
		e2e.Skip(ctx, fmt.Sprintf("S31 builds its reflector on the typed pods client; stack %s", env.Stack()))
	}
	createNamed(ctx, env.Subjects, "s31w-%02d", S31WindowObjects)
	c := &s31{env: env}
	w := &rvWindow{}
	e2e.By(ctx, fmt.Sprintf("two informers start; each initial event of their streaming lists held %s, the first streaming list cut after %d objects", s31EventDelay, S31WindowObjects/2))
	infs := w.start(ctx, c, s.Client, in)
	stop := w.sample(infs)
	for _, inf := range infs {
		w.waitForSync(ctx, inf)
	}
	stop()
	w.report(env, infs)
	for _, inf := range infs {
		// Else the assertions below test nothing.
		Expect(w.readsBeforeEnd(inf)).To(BeNumerically(">=", S31WindowObjects/2), "S31 read %s's APIs during its initial events", inf.name)
		Expect(len(w.retriesFrom(inf))).To(BeNumerically(">=", 2), "%s's first streaming list was cut and retried", inf.name)
	}
	for _, inf := range infs {
		early := w.early(inf)
		Expect(len(early)).To(BeZero(), RVNotBeforeInitialEventsEnd+" (%s%s)", inf.name, firstOf(early, 3))
	}
	for _, inf := range infs {
		Expect(w.retriesFrom(inf)).To(HaveEach(""), RVResumeFromLastSync+" (%s: the streaming lists' resourceVersions, in order)", inf.name)
	}
	c.informers = infs
	c.initialSync(ctx)
}

// rvWindow is what RVDuringInitialEvents saw of each informer.
type rvWindow struct {
	mu sync.Mutex
	// newestInitial is the resourceVersion of the newest initial object each
	// informer's client got (the negative control reports it).
	newestInitial map[string]string
	// firstInitial is when each informer's client got its first initial
	// event.
	firstInitial map[string]time.Time
	// streams are the resourceVersions each informer's streaming lists
	// asked from, in order.
	streams map[string][]string
	// reads are the APIs' reads that reported something, with when the
	// read ended; rounds are when each round of reads ended.
	reads  []rvRead
	rounds []time.Time
}

type rvRead struct {
	informer, api, value string
	at                   time.Time
}

// start makes the shared informer's and the bare reflector's instruments
// (S31's, then the slowed, cut streams and the window's own taps), starts
// them unsynced and returns them with their APIs.
func (w *rvWindow) start(ctx context.Context, c *s31, client func(*rest.Config) *rest.Config, in InitialEventsInput) []*s31Informer {
	w.newestInitial, w.firstInitial, w.streams = map[string]string{}, map[string]time.Time{}, map[string][]string{}
	shared, sharedCfg := w.informer(c, "shared informer")
	refl, reflCfg := w.informer(c, "reflector")
	if client != nil {
		reflCfg = client(reflCfg) // the shared informer's: StartProbe applies the set-up's
	}
	cs, err := kubernetes.NewForConfig(reflCfg)
	Expect(err).NotTo(HaveOccurred())
	reflStore := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := cache.NewReflector(cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", c.env.Namespace, fields.Everything()), &corev1.Pod{}, reflStore, 0)
	refl.store = reflStore
	refl.apis = []*rvAPI{{name: APIReflector, read: r.LastSyncResourceVersion}, bareStoreAPI(reflStore)}
	stopRefl := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); r.Run(stopRefl) }()
	c.env.DeferCleanup(0, func(context.Context) error {
		close(stopRefl)
		return c.env.CallWithin("s31", "the reflector's Run returning", e2e.ShutdownTimeout, func() { <-done })
	})

	obs := c.env.StartProbeUnsynced("s31-informer", sharedCfg, probe.Options{Namespace: c.env.Namespace})
	shared.store = obs.Informer.GetStore()
	shared.apis = []*rvAPI{
		{name: APIInformer, read: obs.Informer.LastSyncResourceVersion},
		{name: APIInformerController, read: obs.Informer.GetController().LastSyncResourceVersion,
			absent: gateOff("InformerResourceVersion", "shared_informer.go dummyController.LastSyncResourceVersion")},
		storeAPI(APIInformerStore, obs.Informer.GetStore()),
	}
	infs := []*s31Informer{shared, refl}
	for _, inf := range infs {
		for _, a := range inf.apis {
			a.last = -1
			if in.AdvanceOnAdded {
				a.read = w.advancingOnAdded(inf.name, a.read)
			}
		}
	}
	return infs
}

// informer is S31's informer of that name with the window's faults and
// taps on its streaming lists: each initial event held s31EventDelay, the
// first stream cut after half of them, the newest initial object's
// resourceVersion and each streaming list's own recorded.
func (w *rvWindow) informer(c *s31, name string) (*s31Informer, *rest.Config) {
	inf, cfg := c.informer(name)
	restoreSlow, _ := inf.streams.RewriteEvents(httpfault.StreamingLists, func(e *httpfault.Event) bool {
		if e.Initial {
			time.Sleep(s31EventDelay)
			if m, err := meta.Accessor(e.Object); err == nil && e.Type == watch.Added {
				w.mu.Lock()
				w.newestInitial[name] = newerRV(w.newestInitial[name], m.GetResourceVersion())
				if w.firstInitial[name].IsZero() {
					w.firstInitial[name] = time.Now()
				}
				w.mu.Unlock()
			}
		}
		return true
	})
	restoreCut, _ := inf.streams.CutInitialEvents(httpfault.StreamingLists, S31WindowObjects/2, 1)
	c.env.Defer(func() { restoreCut(); restoreSlow() })
	return inf, httpfault.Intercept(cfg, func(next http.RoundTripper, req *http.Request) (*http.Response, error) {
		if httpfault.StreamingLists(req) {
			w.mu.Lock()
			w.streams[name] = append(w.streams[name], req.URL.Query().Get("resourceVersion"))
			w.mu.Unlock()
		}
		return next.RoundTrip(req)
	})
}

// newerRV is the newer of two resourceVersions ("" for none).
func newerRV(a, b string) string {
	if a == "" || mustRV(b) > mustRV(a) {
		return b
	}
	return a
}

// advancingOnAdded is the negative control's broken read: what read
// reports, or, while it reports nothing, the newest initial object's
// resourceVersion.
func (w *rvWindow) advancingOnAdded(informer string, read func() string) func() string {
	return func() string {
		if v := read(); v != "" {
			return v
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.newestInitial[informer]
	}
}

// sample reads every API of infs every s31Poll until the func it returns
// is called, keeping each read that reported something with when it
// ended.
func (w *rvWindow) sample(infs []*s31Informer) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(s31Poll)
		defer t.Stop()
		for {
			for _, inf := range infs {
				for _, a := range inf.apis {
					if v := a.read(); v != "" {
						w.mu.Lock()
						w.reads = append(w.reads, rvRead{informer: inf.name, api: a.name, value: v, at: time.Now()})
						w.mu.Unlock()
					}
				}
			}
			w.mu.Lock()
			w.rounds = append(w.rounds, time.Now())
			w.mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// waitForSync waits until inf's initial-events-end bookmark reached the
// client and its primary API reports the bookmark's version or a later
// one: on a shared cluster (the existing backend) other namespaces' writes
// move the server on, and its next BOOKMARK can reach the client before
// this wait reads the initial-events-end one's (measured: 282 read where
// the bookmark's was 275, and the wait ran out). What each API reported
// is asserted after the window, from the served answers (initialSync).
func (w *rvWindow) waitForSync(ctx context.Context, inf *s31Informer) {
	Eventually(ctx, func() error {
		end, ok := inf.tap.syncAfter(time.Time{})
		if !ok {
			return fmt.Errorf("%s: no initial-events-end bookmark yet (streaming lists from %q)", inf.name, w.retriesFrom(inf))
		}
		if v := inf.primary().read(); !atLeastRV(v, end.rv) {
			return fmt.Errorf("%s: %s reports %q, the bookmark's is %d", inf.name, inf.primary().name, v, end.rv)
		}
		return nil
	}).WithTimeout(e2e.SyncTimeout).WithPolling(s31Poll).Should(Succeed(), "%s synced to its initial-events-end bookmark", inf.name)
}

// atLeastRV says whether v is a resourceVersion at rv or later.
func atLeastRV(v string, rv int64) bool {
	n, err := parseRV(v)
	return err == nil && n >= rv
}

// early are the reads of inf's APIs that reported something before its
// initial-events-end bookmark reached the client.
func (w *rvWindow) early(inf *s31Informer) []string {
	end, _ := inf.tap.syncAfter(time.Time{})
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, r := range w.reads {
		if r.informer == inf.name && r.at.Before(end.at) {
			out = append(out, fmt.Sprintf("%s reported %s %s before the bookmark (at %d)", r.api, r.value, end.at.Sub(r.at).Round(time.Millisecond), end.rv))
		}
	}
	return out
}

// readsBeforeEnd is how many rounds of reads ended before inf's
// initial-events-end bookmark reached the client, after its first
// initial event did.
func (w *rvWindow) readsBeforeEnd(inf *s31Informer) int {
	end, _ := inf.tap.syncAfter(time.Time{})
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, t := range w.rounds {
		if t.Before(end.at) && !w.firstInitial[inf.name].IsZero() && t.After(w.firstInitial[inf.name]) {
			n++
		}
	}
	return n
}

// retriesFrom are the resourceVersions inf's streaming lists asked from.
func (w *rvWindow) retriesFrom(inf *s31Informer) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.streams[inf.name]...)
}

// report notes, per informer, its streaming lists and what its APIs
// reported before the bookmark.
func (w *rvWindow) report(env *e2e.Env, infs []*s31Informer) {
	for _, inf := range infs {
		end, _ := inf.tap.syncAfter(time.Time{})
		env.Note("S31 initial events: "+inf.name, fmt.Sprintf("streaming lists from %q; the initial-events-end bookmark at %d; %d rounds of reads during the initial events, %d reads reporting a version before the bookmark",
			w.retriesFrom(inf), end.rv, w.readsBeforeEnd(inf), len(w.early(inf))))
	}
}
