package scenarios

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
)

// S31's assertions, one per point of the scenario, and two that hold at
// every point: no API goes backwards, and the APIs agree.
const (
	RVAtSync         = "after the initial sync each informer's resource-version APIs reported the resourceVersion of its list (of its streaming list's initial-events-end bookmark), and no object in its store is newer"
	RVFollowsWrites  = "after the writes each informer's resource-version APIs reached the newest object's resourceVersion once its watch brought it"
	RVAtRelist       = "after the relist each informer's resource-version APIs reported the resourceVersion of its new list (of its new initial-events-end bookmark)"
	RVAtBookmark     = "after the BOOKMARK each informer's resource-version APIs reported the bookmark's resourceVersion"
	RVNeverBackwards = "no resource-version API went backwards"
	RVAPIsAgree      = "each informer's resource-version APIs agreed with each other, and with the other informers' where the server told them the same"
)

// S31's bounds. S31Bound is how soon after the server's answer (a list, a
// watch event, a bookmark) reached the client's transport every
// resource-version API must report it: the reflector sets its version as
// it hands the answer to its queue (reflector.go list, watchList,
// handleAnyWatch), the store once the queue was processed, so a working
// client needs milliseconds; the rest is slack for a loaded machine.
// S31RelistBound is how soon after the fault the relist's answer must
// come: the reflector waits out its backoff first (reflector.go
// defaultBackoffInit 800 ms, jitter 1.0: at most 1.6 s).
const (
	S31Bound       = 2 * time.Second
	S31RelistBound = 10 * time.Second
	s31Poll        = 5 * time.Millisecond
	// s31Ahead is how far ListsAhead moves a list's resourceVersion.
	s31Ahead = 1_000_000
)

// The resource-version APIs S31 reads, as its observations and report
// name them (a broken reader picks one by name).
const (
	APIInformer           = "SharedIndexInformer.LastSyncResourceVersion"
	APIInformerController = "SharedIndexInformer.GetController().LastSyncResourceVersion"
	APIInformerStore      = "SharedIndexInformer.GetStore().LastStoreSyncResourceVersion"
	APIController         = "Controller.LastSyncResourceVersion"
	APIControllerStore    = "the controller's Indexer.LastStoreSyncResourceVersion"
	APIReflector          = "Reflector.LastSyncResourceVersion"
	APIReflectorStore     = "the reflector's Store.LastStoreSyncResourceVersion"
)

// RVReader wraps the read of one resource-version API (named api, one of
// the API constants): a negative control's broken reader. S31 reads
// each API directly when it is nil.
type RVReader func(api string, read func() string) func() string

// S31ResourceVersions is S31's value: both sync modes, and its negative controls.
var S31ResourceVersions = Register(Scenario{
	ID: "S31", Title: "the informers' resource-version APIs", Labels: []string{"resource-version"},
	Specs: []Spec{
		{
			Text: "report the list's, the newest object's, the relist's and the bookmark's resourceVersion, never going backwards, in agreement", Sample: true,
			Entries: []Entry{{Run: RunWith(ResourceVersionAPIs, nil)}},
		},
		{
			Text: "during a streaming list's initial events report no object's resourceVersion, and a stream cut before its end is retried from the last sync's", Mode: e2e.StreamingList,
			Run: RunWith(RVDuringInitialEvents, InitialEventsInput{}),
		},
		{
			Text: "fails when a reader reports the newest initial object's resourceVersion before the initial-events-end bookmark", Mode: e2e.StreamingList,
			Run:   RunWith(RVDuringInitialEvents, InitialEventsInput{AdvanceOnAdded: true}),
			Fails: []string{RVNotBeforeInitialEventsEnd}, Because: "the S31 window assertion catches a version that advances with the initial ADDED events",
		},
		{
			Text: "fails when the client's lists carry a resourceVersion the server did not send", Mode: e2e.ListWatch,
			Client: ListsAhead,
			Run:    RunWith(ResourceVersionAPIs, nil),
			Fails:  []string{RVAtSync}, Because: "the S31 sync assertion catches a version the list did not carry",
		},
		{
			Text:   "fails when the client's watches lose their events",
			Client: LoseWatchEvents,
			Run:    RunWith(ResourceVersionAPIs, nil),
			Fails:  []string{RVFollowsWrites}, Because: "the S31 writes assertion catches a version that does not follow the watch",
		},
		{
			Text: "fails when the client's relists carry a resourceVersion the server did not send", Mode: e2e.ListWatch,
			Client: RelistsAhead,
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				if src := e2e.InformerSource(); src != "" {
					e2e.Skip(ctx, fmt.Sprintf("under informer source %s the control's rewrite of every informer LIST after the first on its config already reaches the shared informer's initial sync (measured: the sync reported a version its list did not carry): it cannot single out the relist it targets", src))
				}
				ResourceVersionAPIs(ctx, s, nil)
			},
			Fails: []string{RVAtRelist}, Because: "the S31 relist assertion catches a version the new list did not carry",
		},
		{
			Text:   "fails when the client's watches lose their bookmarks",
			Client: DropBookmarks,
			Run:    RunWith(ResourceVersionAPIs, nil),
			Fails:  []string{RVAtBookmark}, Because: "the S31 bookmark assertion catches a version a bookmark does not move",
		},
		{
			Text:   "fails when the client's bookmarks carry an old resourceVersion",
			Client: StaleBookmarks,
			Run:    RunWith(ResourceVersionAPIs, nil),
			Fails:  []string{RVNeverBackwards}, Because: "the S31 assertion catches a version going backwards",
		},
		{
			Text: "fails when a reader keeps the first version the controller reported",
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				// The API the broken reader reads reports nothing unless this
				// gate is on (off by default up to client-go v0.34).
				e2e.UseClientGoGate(ctx, "InformerResourceVersion", true)
				ResourceVersionAPIs(ctx, s, StaleControllerReader)
			},
			Fails: []string{RVAPIsAgree}, Because: "the S31 agreement assertion catches an API that stopped following the informer",
		},
	},
})

// ResourceVersionAPIs is S31: what the resource-version APIs a controller
// reads tell it, after the initial sync, after writes, after a relist and
// after a BOOKMARK, on three informers of the spec's pods watching the
// same namespace, each through a client of its own: a shared informer
// from the factory (SharedIndexInformer.LastSyncResourceVersion, its
// GetController().LastSyncResourceVersion, its store's
// LastStoreSyncResourceVersion), an informer from
// cache.NewInformerWithOptions (Controller.LastSyncResourceVersion, its
// indexer's LastStoreSyncResourceVersion) and a bare cache.NewReflector
// into a cache.NewStore (Reflector.LastSyncResourceVersion, the store's
// LastStoreSyncResourceVersion). The handler registration has none in any
// supported version (ResourceEventHandlerRegistration: HasSynced,
// HasSyncedChecker). What the server told each informer is taken beneath
// any broken client, in order (rvTap): its LISTs' resourceVersions (not
// the watch-list consistency detector's), its streams' initial-events-end
// bookmarks and the watch events after them (the stream injector's
// ObserveEvents), and the BOOKMARK S31 injects.
//
// Every API is read every 5 ms while S31 waits for a point to settle:
//
//  1. after the sync: each informer's own LastSyncResourceVersion is the
//     resourceVersion of its list (LIST+WATCH) or of its streaming list's
//     initial-events-end bookmark, and no object in its store is newer
//     (RVAtSync);
//  2. after two pods are created and one updated: the version of the
//     watch event that brought the update, at least the update's
//     (RVFollowsWrites);
//  3. after a relist (the open watch ends, the next one is answered with
//     an ERROR event 410 Expired; the reflector lists again, or streams
//     again, after its backoff): its new list's or initial-events-end
//     bookmark's (RVAtRelist);
//  4. after a BOOKMARK: the bookmark's (RVAtBookmark);
//
// or, at each point, that of a later answer of the server's (kube-apiserver
// sends BOOKMARKs of its own: about once a minute, 2 s before a watch's
// timeout, k8s.io/apiserver pkg/storage/cacher/cache_watcher.go
// nextBookmarkTime; one was seen within half a second of a streaming
// list's initial events). Each within S31Bound of the answer reaching the
// client (the relist's answer within S31RelistBound of the fault). At
// every read no API goes backwards (RVNeverBackwards), and each
// informer's other APIs report what its own does, an absent one nothing,
// the bare reflector's store the newest list's or object's version
// (RVAPIsAgree): the informers, told the same, report the same. Observed:
// what each API reports at each point, as its relation to what the server
// said.
//
// The BOOKMARK is injected (httpfault.StreamInjector.InjectBookmark) into
// each informer's real, open watch stream, at a valid, current
// resourceVersion: after a ConfigMap write (so it is newer than every pod
// event), a quorum LIST's, with the watch cache made to reach it (a LIST
// at that resourceVersion, NotOlderThan); no pod is written after it. The
// server's own bookmarks come too seldom for the default run (a minute),
// or too early to be told apart (a streaming list's, the initial sync's
// version again), and a short watch timeout would change the informer's
// own watches (what is under test) and move the version only if the watch
// cache moved on, which a spec cannot arrange on every backend.
//
// Expected of client-go v0.31-v0.37 and v0.38.0-alpha.2 (tools/cache):
// the reflector sets lastSyncResourceVersion to the list's after
// replacing its store (reflector.go list: syncWith, then
// setLastSyncResourceVersion), to the initial-events-end bookmark's
// after a streaming list (watchList), to every watch event's, a
// BOOKMARK's included (handleAnyWatch; from
// v0.36 only once past the synthetic ADDED events of a watch started at
// "" or "0", which these informers never start); controller.go
// controller.LastSyncResourceVersion and shared_informer.go
// sharedIndexInformer.LastSyncResourceVersion return the reflector's.
// SharedIndexInformer.GetController() is a dummyController whose
// LastSyncResourceVersion is "" unless the gate InformerResourceVersion
// is on (alpha, off, in v0.31-v0.34; GA, on, from v0.35).
// Store.LastStoreSyncResourceVersion is new in v0.36 (store.go,
// thread_safe_store.go threadSafeMap): "" unless the gate AtomicFIFO is
// on (beta, on, from v0.36); the store takes the list's version on
// Replace, each object's as it is written, and a BOOKMARK's through the
// queue (the_real_fifo.go RealFIFO.Bookmark, controller.go processDeltas)
// when the reflector's store is a ReflectorBookmarkStore (a RealFIFO with
// atomic events): a cache.Store handed straight to a reflector is none
// (its Bookmark has no error result), so the bare reflector's store keeps
// the newest list's or object's version at a bookmark. S31 passes on
// every version: the differences are observations.
//
// s.Client, when set, is the broken client of a negative control, under
// all three informers (above the injectors); reader, when set, wraps
// every read.
func ResourceVersionAPIs(ctx context.Context, s e2e.Setup, reader RVReader) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	if env.Stack() != probe.StackTyped {
		e2e.Skip(ctx, fmt.Sprintf("S31 builds its controller and reflector on the typed pods client; stack %s", env.Stack()))
	}
	if reader == nil {
		reader = func(_ string, read func() string) func() string { return read }
	}
	createNamed(ctx, env.Subjects, "s31-%d", 3)
	c := &s31{env: env}

	e2e.By(ctx, "three informers start: a shared informer, a controller, a reflector")
	c.startInformers(ctx, s.Client, reader)
	c.initialSync(ctx)
	e2e.By(ctx, "writes: two pods created, one of them updated")
	c.writes(ctx)
	e2e.By(ctx, "a relist: each informer's open watch ends, its next one is answered with an ERROR event 410")
	c.relist(ctx)
	e2e.By(ctx, "a BOOKMARK at the current resourceVersion injected into each informer's open watch")
	c.bookmark(ctx)
}

// startInformers starts S31's three informers, each through a client of
// its own (broken by client, when set) and waits until they synced: a
// controller and a bare reflector (startBare) and the probe's shared
// informer. reader wraps every read of their APIs.
func (c *s31) startInformers(ctx context.Context, client func(*rest.Config) *rest.Config, reader RVReader) {
	ctrl, refl := c.startBare(client)
	sharedInf, sharedCfg := c.informer("shared informer")
	obs := c.env.StartProbe(ctx, "s31-informer", sharedCfg, probe.Options{Namespace: c.env.Namespace}) // the set-up's client applied by StartProbe
	sharedInf.store = obs.Informer.GetStore()
	sharedInf.apis = []*rvAPI{
		{name: APIInformer, read: obs.Informer.LastSyncResourceVersion},
		{name: APIInformerController, read: obs.Informer.GetController().LastSyncResourceVersion,
			absent: gateOff("InformerResourceVersion", "shared_informer.go dummyController.LastSyncResourceVersion")},
		storeAPI(APIInformerStore, obs.Informer.GetStore()),
	}
	c.informers = append([]*s31Informer{sharedInf}, c.informers...)
	for _, inf := range c.informers {
		for _, a := range inf.apis {
			a.last = -1
			a.read = reader(a.name, a.read)
		}
	}
	syncCtx, cancel := context.WithTimeout(ctx, e2e.SyncTimeout)
	defer cancel()
	Expect(cache.WaitForCacheSync(syncCtx.Done(), ctrl.HasSynced)).To(BeTrue(), "the controller synced within %s", e2e.SyncTimeout)
	// A bare reflector has no HasSynced: its store is replaced, then its
	// version set.
	Expect(wait.PollUntilContextCancel(syncCtx, s31Poll, true, func(context.Context) (bool, error) {
		return refl.LastSyncResourceVersion() != "", nil
	})).To(Succeed(), "the reflector listed within %s", e2e.SyncTimeout)
}

// startBare starts S31's controller and bare reflector (c.informers' second
// and third), stopped when the spec ends.
func (c *s31) startBare(client func(*rest.Config) *rest.Config) (cache.Controller, *cache.Reflector) {
	ns := c.env.Namespace
	stop := make(chan struct{})
	var running sync.WaitGroup
	c.env.DeferCleanup(0, func(context.Context) error {
		close(stop)
		return c.env.CallWithin("s31", "the controller's and the reflector's Run returning", e2e.ShutdownTimeout, running.Wait)
	})
	podsOf := func(cfg *rest.Config) *cache.ListWatch {
		if client != nil {
			cfg = client(cfg)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		return cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", ns, fields.Everything())
	}

	ctrlInf, ctrlCfg := c.informer("controller")
	indexer, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: podsOf(ctrlCfg),
		ObjectType:    &corev1.Pod{},
		Handler:       cache.ResourceEventHandlerFuncs{},
		Indexers:      cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	ctrlInf.store = indexer
	ctrlInf.apis = []*rvAPI{{name: APIController, read: ctrl.LastSyncResourceVersion}, storeAPI(APIControllerStore, indexer)}

	reflInf, reflCfg := c.informer("reflector")
	reflStore := cache.NewStore(cache.MetaNamespaceKeyFunc)
	refl := cache.NewReflector(podsOf(reflCfg), &corev1.Pod{}, reflStore, 0)
	reflInf.store = reflStore
	reflInf.apis = []*rvAPI{{name: APIReflector, read: refl.LastSyncResourceVersion}, bareStoreAPI(reflStore)}

	running.Add(2)
	go func() { defer running.Done(); ctrl.Run(stop) }()
	go func() { defer running.Done(); refl.Run(stop) }()
	c.informers = []*s31Informer{ctrlInf, reflInf}
	return ctrl, refl
}

// initialSync is S31's first stage: every API reports the initial sync's
// resource version, and no object in a store is newer.
func (c *s31) initialSync(ctx context.Context) {
	c.settle(ctx, s31Stage{
		name: "initial sync", assertion: RVAtSync, serverBound: e2e.SyncTimeout,
		answer: func(inf *s31Informer) (served, bool) { return inf.tap.syncAfter(time.Time{}) },
		check: func(inf *s31Informer) []string {
			newest, key := newestInStore(inf.store)
			if p := inf.primary(); newest > p.last {
				return []string{fmt.Sprintf("%s: %s in its store is at %d, newer than its %s %s", inf.name, key, newest, p.name, p.value)}
			}
			return nil
		},
	})
}

// writes is S31's second stage: two pods created, one updated; every API
// follows to the newest object's resource version.
func (c *s31) writes(ctx context.Context) {
	createNamed(ctx, c.env.Subjects, "s31-new-%d", 2)
	updated, err := c.env.Subjects.SetLabels(ctx, "s31-new-0", map[string]string{"s31": "updated"})
	Expect(err).NotTo(HaveOccurred())
	written := mustRV(updated.ResourceVersion)
	c.settle(ctx, s31Stage{
		name: "writes", assertion: RVFollowsWrites, serverBound: e2e.EventTimeout,
		answer: func(inf *s31Informer) (served, bool) {
			a, ok := inf.tap.eventAtLeast(written)
			a.what = "the newest object's"
			return a, ok
		},
	})
}

// relist is S31's third stage: each informer's open watch ends and its
// next one is answered 410; every API reports the new list's version.
func (c *s31) relist(ctx context.Context) {
	faultAt := time.Now()
	for _, inf := range c.informers {
		c.waitForWatch(inf)
		restore, _ := inf.faults.EndWatchesWithError(httpfault.Watches, 1, http.StatusGone, metav1.StatusReasonExpired, "S31: too old resource version")
		e2e.Defer(ctx, restore)
		Expect(inf.streams.EndStreams(httpfault.WatchStreams)).To(Equal(1), "the %s's open watch ended", inf.name)
	}
	c.settle(ctx, s31Stage{
		name: "relist", assertion: RVAtRelist, serverBound: S31RelistBound,
		answer: func(inf *s31Informer) (served, bool) {
			a, ok := inf.tap.syncAfter(faultAt)
			a.what = "the new " + strings.TrimPrefix(a.what, "the ")
			return a, ok
		},
	})
}

// bookmark is S31's last stage: a BOOKMARK at the current resource
// version, injected into each informer's open watch, reaches every API.
func (c *s31) bookmark(ctx context.Context) {
	ns := c.env.Namespace
	_, err := c.env.Writer.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "s31-bookmark"}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	quorum, err := c.env.Writer.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	bookmarkRV := quorum.ResourceVersion
	_, err = c.env.Writer.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: bookmarkRV, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	Expect(err).NotTo(HaveOccurred(), "the watch cache reached resourceVersion %s", bookmarkRV)
	injectedAt := time.Now()
	for _, inf := range c.informers {
		c.waitForWatch(inf)
		// What the server "sent", first: the client cannot have it before.
		inf.tap.add(served{at: time.Now(), rv: mustRV(bookmarkRV), what: "the bookmark's", bookmark: true})
		Expect(inf.streams.InjectBookmark(httpfault.WatchStreams, s31Bookmark, bookmarkRV)).To(Equal(1), "a BOOKMARK reached the %s's watch", inf.name)
	}
	c.settle(ctx, s31Stage{
		name: "bookmark", assertion: RVAtBookmark,
		answer: func(inf *s31Informer) (served, bool) {
			a, ok := inf.tap.syncOrBookmarkAfter(injectedAt)
			return a, ok && a.bookmark
		},
	})
}

// s31 is one run of S31: its informers and what their APIs did.
type s31 struct {
	env       *e2e.Env
	informers []*s31Informer
	backwards []string
}

// s31Informer is one of S31's informers: its client's instruments, its
// store and its resource-version APIs (the first is its own
// LastSyncResourceVersion: the others must agree with it).
type s31Informer struct {
	name    string
	tap     *rvTap
	faults  *httpfault.Injector
	streams *httpfault.StreamInjector
	store   cache.Store
	apis    []*rvAPI
}

func (inf *s31Informer) primary() *rvAPI { return inf.apis[0] }

// rvAPI is one resource-version API and what S31 last read of it.
type rvAPI struct {
	name string
	read func() string
	// absent says why client-go reports nothing here (no such method in
	// this version, a gate off): "" when the API reports.
	absent string
	// noBookmark: a store no bookmark reaches (the bare reflector's).
	noBookmark bool
	value      string
	last       int64 // value as a number; -1 for ""
	// matched is when the API began to report what the point wants (zero:
	// it does not).
	matched time.Time
}

// storeAPI is the LastStoreSyncResourceVersion of st, where this
// client-go has it (v0.36+), reached through an interface so that S31
// compiles against v0.31.
func storeAPI(name string, st cache.Store) *rvAPI {
	sr, ok := st.(interface{ LastStoreSyncResourceVersion() string })
	if !ok {
		return &rvAPI{name: name, read: func() string { return "" }, absent: "no such method in this client-go (new in v0.36)"}
	}
	return &rvAPI{name: name, read: sr.LastStoreSyncResourceVersion,
		absent: gateOff("AtomicFIFO", "thread_safe_store.go threadSafeMap.LastStoreSyncResourceVersion")}
}

// bareStoreAPI is the LastStoreSyncResourceVersion of a cache.NewStore
// handed to a bare reflector: no BOOKMARK reaches it (reflector.go
// watchHandler passes a bookmark's version only to a
// ReflectorBookmarkStore, whose Bookmark returns an error; the store's
// cache.Bookmark returns nothing), so it stays at the newest list's or
// object's version while the reflector's own moves with the server's
// BOOKMARKs.
func bareStoreAPI(st cache.Store) *rvAPI {
	a := storeAPI(APIReflectorStore, st)
	a.noBookmark = true
	return a
}

// gateOff says why an API reports nothing when client-go's gate is off.
func gateOff(gate, where string) string {
	if on, known := e2e.ClientGoGate(gate); known && !on {
		return "empty: gate " + gate + " off (" + where + ")"
	}
	return ""
}

// informer makes an S31 informer's instruments and the config of its
// client through them: the tap innermost (what the server said), the
// HTTP fault injector, the stream injector (holding every watch so that
// S31 can end it, or inject into it).
func (c *s31) informer(name string) (*s31Informer, *rest.Config) {
	inf := &s31Informer{name: name, tap: &rvTap{}, faults: &httpfault.Injector{Faults: c.env.Faults}, streams: &httpfault.StreamInjector{Faults: c.env.Faults}}
	restorePass := inf.streams.Pass(httpfault.WatchStreams)
	restoreObserve, _ := inf.streams.ObserveEvents(httpfault.WatchStreams, inf.tap.observe)
	c.env.Defer(func() { restoreObserve(); restorePass() })
	return inf, inf.streams.Instrument(inf.faults.Instrument(inf.tap.instrument(c.env.User)))
}

// waitForWatch waits until the informer's watch is open (after a relist,
// the LIST comes first).
func (c *s31) waitForWatch(inf *s31Informer) {
	Eventually(func() int { return inf.streams.OpenStreams(httpfault.WatchStreams) }).WithTimeout(e2e.EventTimeout).WithPolling(10*time.Millisecond).
		Should(Equal(1), "the %s's watch is open", inf.name)
}

// s31Stage is one point of S31.
type s31Stage struct {
	name      string
	assertion string
	// answer is the server's answer the stage is about (false while it has
	// not reached the client); its what names it in the observations.
	answer func(*s31Informer) (served, bool)
	// serverBound bounds the answer's coming, from the stage's start.
	serverBound time.Duration
	// check adds failures of the stage's assertion once it settled.
	check func(*s31Informer) []string
}

// settle reads every API until each reports what the stage wants (want),
// one went backwards, an informer's own version went past every answer
// its server sent (it cannot be right again), or the bounds passed; then
// asserts, records the bound and observes.
func (c *s31) settle(ctx context.Context, st s31Stage) {
	start := time.Now()
	for _, inf := range c.informers {
		for _, a := range inf.apis {
			a.matched = time.Time{}
		}
	}
	Expect(wait.PollUntilContextCancel(ctx, s31Poll, true, func(context.Context) (bool, error) { return c.settled(st, start), nil })).To(Succeed())

	var late, disagree []string
	var longest time.Duration
	var settledFrom, settledAt time.Time
	for _, inf := range c.informers {
		a, ok := st.answer(inf)
		if !ok {
			late = append(late, fmt.Sprintf("%s: the server's answer never reached it within %s", inf.name, st.serverBound))
			continue
		}
		newest := inf.tap.newest()
		f := later(later(start, a.at), later(start, newest.at))
		settledFrom = later(settledFrom, f)
		for i, api := range inf.apis {
			took := api.matched.Sub(f)
			problem := apiProblem(inf, i, a, newest, took)
			switch {
			case problem == "":
				longest = max(longest, took)
				settledAt = later(settledAt, api.matched)
			case i == 0:
				late = append(late, problem)
			default:
				disagree = append(disagree, problem)
			}
		}
		if st.check != nil && len(late) == 0 {
			late = append(late, st.check(inf)...)
		}
	}
	c.observe(st)
	if settledAt.IsZero() {
		settledAt = time.Now()
	}
	c.env.RecordBound(fmt.Sprintf("every resource-version API reported the server's answer (%s)", st.name), settledFrom, settledAt, S31Bound, len(late)+len(disagree)+len(c.backwards) == 0)
	c.env.Observe(report.Seconds("longest time from the server's answer to an API reporting it, "+st.name, longest))

	Expect(c.backwards).To(BeEmpty(), RVNeverBackwards+" (%s)", st.name)
	Expect(late).To(BeEmpty(), st.assertion+" (within %s)", S31Bound)
	Expect(disagree).To(BeEmpty(), RVAPIsAgree+" (%s)", st.name)
}

// settled reads every API once and says whether the stage st, begun at
// start, is over: every API reports what it should, or an informer's own
// version went past its server's newest answer, or one went backwards, or
// the stage's deadline passed (S31Bound after the last answer, or after
// the server's bound for an answer that has not come). It marks when each
// API first reported what it should.
func (c *s31) settled(st s31Stage, start time.Time) bool {
	now := time.Now()
	c.readAll()
	all, past := true, false
	var deadline time.Time
	for _, inf := range c.informers {
		a, ok := st.answer(inf)
		if !ok {
			all = false
			deadline = later(deadline, start.Add(st.serverBound+S31Bound))
			continue
		}
		newest := inf.tap.newest()
		deadline = later(deadline, later(later(start, a.at), later(start, newest.at)).Add(S31Bound))
		for _, api := range inf.apis {
			if c.want(inf, api) {
				if api.matched.IsZero() {
					api.matched = now
				}
			} else {
				api.matched, all = time.Time{}, false
			}
		}
		past = past || inf.primary().last > newest.rv
	}
	return all || past || len(c.backwards) > 0 || now.After(deadline)
}

// apiProblem is what is wrong with the i-th API of inf at the end of a
// stage whose answer was a (newest the newest the server sent it), the API
// having reported it took after the answer reached the client: "" for
// nothing.
func apiProblem(inf *s31Informer, i int, a, newest served, took time.Duration) string {
	api := inf.apis[i]
	switch {
	case api.matched.IsZero() && i == 0:
		return fmt.Sprintf("%s: %s reported %s, want %d, %s", inf.name, api.name, orEmpty(api.value), newest.rv, describe(a, newest))
	case api.matched.IsZero() && api.absent != "":
		return fmt.Sprintf("%s: %s reported %s where client-go's source says it reports nothing (%s)", inf.name, api.name, orEmpty(api.value), api.absent)
	case api.matched.IsZero() && api.noBookmark:
		return fmt.Sprintf("%s: %s reported %s, want %d, the newest list's or object's (no bookmark reaches a store handed to a reflector)", inf.name, api.name, orEmpty(api.value), inf.tap.newestWritten().rv)
	case api.matched.IsZero():
		return fmt.Sprintf("%s: %s reported %s, %s %s", inf.name, api.name, orEmpty(api.value), inf.primary().name, orEmpty(inf.primary().value))
	case took > S31Bound:
		return fmt.Sprintf("%s: %s reported %s only %s after the server's answer reached the client (bound %s)", inf.name, api.name, api.value, took.Round(time.Millisecond), S31Bound)
	}
	return ""
}

// want says whether api reports what it should now: the informer's own
// version the newest answer its server sent it (the stage's, or one
// after it: kube-apiserver sends a BOOKMARK of its own whenever it
// likes), every other the same as it, an absent one nothing, the bare
// reflector's store the newest list's or object's (no bookmark reaches
// it).
func (c *s31) want(inf *s31Informer, api *rvAPI) bool {
	switch {
	case api == inf.primary():
		return api.last == inf.tap.newest().rv
	case api.absent != "":
		return api.value == ""
	case api.noBookmark:
		return api.last == inf.tap.newestWritten().rv
	}
	return api.last == inf.primary().last
}

// describe names what the server sent last, after the stage's answer a.
func describe(a, newest served) string {
	if newest.at.Equal(a.at) && newest.rv == a.rv {
		return a.what
	}
	return fmt.Sprintf("a later %s (after %s, %d)", strings.TrimPrefix(newest.what, "the "), a.what, a.rv)
}

// readAll reads every API once and notes any that went backwards.
func (c *s31) readAll() {
	for _, inf := range c.informers {
		for _, a := range inf.apis {
			v := a.read()
			n, err := parseRV(v)
			Expect(err).NotTo(HaveOccurred(), "%s: %s", inf.name, a.name)
			if n < a.last {
				c.backwards = append(c.backwards, fmt.Sprintf("%s: %s reported %s after %d", inf.name, a.name, orEmpty(v), a.last))
			}
			a.value, a.last = v, n
		}
	}
}

// observe records what each API reported at the stage's end, as its
// relation to what the server said.
func (c *s31) observe(st s31Stage) {
	var lines []string
	for _, inf := range c.informers {
		a, ok := st.answer(inf)
		newest := inf.tap.newest()
		written := inf.tap.newestWritten()
		for _, api := range inf.apis {
			var rel string
			switch {
			case api.absent != "" && api.value == "":
				rel = api.absent
			case api.value == "":
				rel = "empty"
			case !ok:
				rel = "no answer from the server"
			case api.last == a.rv:
				rel = a.what
			case api.last == newest.rv:
				rel = "a later " + strings.TrimPrefix(newest.what, "the ")
			case api.noBookmark && api.last == written.rv:
				rel = "the newest list's or object's"
			case api.last > a.rv:
				rel = "newer than " + a.what
			default:
				rel = "older than " + a.what
			}
			c.env.Observe(report.Value(fmt.Sprintf("%s: %s after the %s", inf.name, api.name, st.name), rel))
			lines = append(lines, fmt.Sprintf("%s: %s = %s (%s)", inf.name, api.name, orEmpty(api.value), rel))
		}
	}
	c.env.Note("S31 after the "+st.name, strings.Join(lines, "\n"))
}

// newestInStore is the newest object of st: its resourceVersion and key.
func newestInStore(st cache.Store) (int64, string) {
	newest, key := int64(-1), ""
	for _, obj := range st.List() {
		m, err := meta.Accessor(obj)
		if err != nil {
			continue
		}
		if n, err := parseRV(m.GetResourceVersion()); err == nil && n > newest {
			newest, key = n, m.GetNamespace()+"/"+m.GetName()
		}
	}
	return newest, key
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func parseRV(v string) (int64, error) {
	if v == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("resourceVersion %q is not a number (kube-apiserver's are etcd revisions)", v)
	}
	return n, nil
}

func mustRV(v string) int64 {
	n, err := parseRV(v)
	Expect(err).NotTo(HaveOccurred())
	return n
}

func orEmpty(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

// served is an answer of the server as it reached the client.
type served struct {
	at time.Time
	rv int64
	// what names it: "the list's", "the initial-events-end bookmark's",
	// "the bookmark's", or its event type.
	what string
	// sync: what an informer syncs to (a LIST, an initial-events-end
	// bookmark); bookmark: a BOOKMARK (not an initial-events-end one).
	sync, bookmark bool
}

// rvTap is S31's view of what the server told one informer, taken beneath
// any broken client, in the order it reached the client: its LISTs (not
// the watch-list consistency detector's), its streams' initial-events-end
// bookmarks, the watch events after them, and the BOOKMARKs S31 injects.
type rvTap struct {
	mu      sync.Mutex
	answers []served
}

func (t *rvTap) add(s served) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.answers = append(t.answers, s)
}

// first is the first answer f accepts.
func (t *rvTap) first(f func(served) bool) (served, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := slices.IndexFunc(t.answers, f)
	if i < 0 {
		return served{}, false
	}
	return t.answers[i], true
}

// syncAfter is the first answer to sync to that reached the client at
// after or later.
func (t *rvTap) syncAfter(after time.Time) (served, bool) {
	return t.first(func(s served) bool { return s.sync && !s.at.Before(after) })
}

// syncOrBookmarkAfter is the first answer to sync to, or BOOKMARK, that
// reached the client at after or later.
func (t *rvTap) syncOrBookmarkAfter(after time.Time) (served, bool) {
	return t.first(func(s served) bool { return (s.sync || s.bookmark) && !s.at.Before(after) })
}

// eventAtLeast is the first watch event at rv or newer.
func (t *rvTap) eventAtLeast(rv int64) (served, bool) {
	return t.first(func(s served) bool { return !s.sync && s.rv >= rv })
}

// newest is the last answer (rv -1 when none).
func (t *rvTap) newest() served {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.answers) == 0 {
		return served{rv: -1}
	}
	return t.answers[len(t.answers)-1]
}

// newestWritten is the last answer that writes a store's version: a list,
// an initial-events-end bookmark (the store is replaced at its version),
// an object's event; not a BOOKMARK.
func (t *rvTap) newestWritten() served {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.answers) - 1; i >= 0; i-- {
		if !t.answers[i].bookmark {
			return t.answers[i]
		}
	}
	return served{rv: -1}
}

// observe is the stream injector's observer: the events after a
// streaming list's initial ones, and its initial-events-end bookmark.
func (t *rvTap) observe(e httpfault.Event) {
	m, err := meta.Accessor(e.Object)
	if err != nil || e.Type == watch.Error || e.Initial {
		return
	}
	rv, err := parseRV(m.GetResourceVersion())
	if err != nil {
		return
	}
	s := served{at: time.Now(), rv: rv, what: string(e.Type), bookmark: e.Type == watch.Bookmark && !e.InitialEventsEnd}
	if e.InitialEventsEnd {
		s.what, s.sync = "the initial-events-end bookmark's", true
	}
	t.add(s)
}

// instrument wraps cfg's transport with the tap's LIST recorder.
func (t *rvTap) instrument(cfg *rest.Config) *rest.Config {
	return httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || !isInformerList(req, resp) {
			return resp, err
		}
		body, err := readBody(resp)
		if err != nil {
			return nil, err
		}
		if list, err := decodeList(resp, body); err == nil {
			if rv, err := parseRV(list.(metav1.ListInterface).GetResourceVersion()); err == nil {
				t.add(served{at: time.Now(), rv: rv, what: "the list's", sync: true})
			}
		}
		return resp, nil
	})
}

// isInformerList says whether resp answers an informer's LIST with 200
// (not the watch-list consistency detector's).
func isInformerList(req *http.Request, resp *http.Response) bool {
	return httpfault.Lists(req) && !probe.IsConsistencyCheck(req.Method, req.URL.Query()) && resp.StatusCode == http.StatusOK
}

// readBody reads resp's body whole and puts the bytes back for its reader.
func readBody(resp *http.Response) ([]byte, error) {
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// decodeList decodes a list answer with the serializer of its
// Content-Type (protobuf, JSON); the object is a metav1.ListInterface.
func decodeList(resp *http.Response, body []byte) (runtime.Object, error) {
	info, err := serializerOf(resp)
	if err != nil {
		return nil, err
	}
	obj, gvk, err := info.Serializer.Decode(body, nil, nil)
	if err != nil {
		return nil, err
	}
	if _, ok := obj.(metav1.ListInterface); !ok {
		return nil, fmt.Errorf("%T is no list", obj)
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	return obj, nil
}

func serializerOf(resp *http.Response) (runtime.SerializerInfo, error) {
	mediaType, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return runtime.SerializerInfo{}, err
	}
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		return runtime.SerializerInfo{}, fmt.Errorf("no serializer for %s", mediaType)
	}
	return info, nil
}

// ListsAhead is a negative control's broken client: every LIST answer
// reaches client-go with its resourceVersion moved far ahead (a proxy
// that rewrites it), so the informer syncs at a version the server never
// gave it.
func ListsAhead(cfg *rest.Config) *rest.Config { return listsAheadAfter(0)(cfg) }

// RelistsAhead is ListsAhead from the second LIST of each client on: the
// initial sync is the server's, the relist's version is not.
func RelistsAhead(cfg *rest.Config) *rest.Config { return listsAheadAfter(1)(cfg) }

func listsAheadAfter(after int) func(*rest.Config) *rest.Config {
	return func(cfg *rest.Config) *rest.Config {
		var mu sync.Mutex
		lists := 0
		cfg = httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err != nil || !isInformerList(req, resp) {
				return resp, err
			}
			mu.Lock()
			lists++
			pass := lists <= after
			mu.Unlock()
			if pass {
				return resp, nil
			}
			return rewriteList(resp, func(l metav1.ListInterface) {
				if rv, err := parseRV(l.GetResourceVersion()); err == nil {
					l.SetResourceVersion(strconv.FormatInt(rv+s31Ahead, 10))
				}
			})
		})
		return cfg
	}
}

// rewriteList is resp, a LIST's answer, with its list changed by rewrite
// and encoded again as the server encoded it: a broken client's proxy
// (an answer it cannot decode passes unchanged).
func rewriteList(resp *http.Response, rewrite func(metav1.ListInterface)) (*http.Response, error) {
	body, err := readBody(resp)
	if err != nil {
		return nil, err
	}
	list, err := decodeList(resp, body)
	if err != nil {
		return resp, nil
	}
	rewrite(list.(metav1.ListInterface))
	info, _ := serializerOf(resp)
	var buf bytes.Buffer
	if err := info.Serializer.Encode(list, &buf); err != nil {
		return nil, fmt.Errorf("broken client: re-encode the list: %w", err)
	}
	resp.Body, resp.ContentLength = io.NopCloser(&buf), int64(buf.Len())
	resp.Header.Set("Content-Length", strconv.Itoa(buf.Len()))
	return resp, nil
}

// brokenStream is a broken client whose watch streams pass through a
// rewrite of its own per client (newRewrite's: one that may remember what
// its watches brought), in a stream injector of its own, recording no
// fault: it is the client under test.
func brokenStream(newRewrite func() func(*httpfault.Event) bool) func(*rest.Config) *rest.Config {
	return func(cfg *rest.Config) *rest.Config {
		s := &httpfault.StreamInjector{}
		s.RewriteEvents(httpfault.WatchStreams, newRewrite())
		return s.Instrument(cfg)
	}
}

// S31InjectedAnnotation marks the BOOKMARK S31 injects (its object's
// annotation), which the server's own never carry.
const S31InjectedAnnotation = "conformance.informer-conformance.io/s31-bookmark"

// s31Bookmark is the object of the BOOKMARK S31 injects: a pod marked
// S31InjectedAnnotation (the injector sets its resourceVersion).
func s31Bookmark() runtime.Object {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{S31InjectedAnnotation: "true"}}}
}

// LoseWatchEvents is a negative control's broken client: from the first
// object event after its initial ones (a streaming list's), its watches
// lose every event but an ERROR (a proxy that stops passing them on):
// BOOKMARKs too, which would otherwise move the version past the writes.
// What came before passes: kube-apiserver sends a BOOKMARK soon after a
// streaming list's initial events, at a version other namespaces' writes
// may have moved on (a shared cluster's), and losing it would fail the
// initial sync's assertion before the writes' one.
var LoseWatchEvents = brokenStream(func() func(*httpfault.Event) bool {
	var losing atomic.Bool
	return func(e *httpfault.Event) bool {
		if !e.Initial && e.Type != watch.Bookmark && e.Type != watch.Error {
			losing.Store(true)
		}
		return !losing.Load() || e.Initial || e.InitialEventsEnd || e.Type == watch.Error
	}
})

// DropBookmarks is a negative control's broken client: its watches lose
// the BOOKMARK S31 injects and every BOOKMARK after it.
var DropBookmarks = brokenStream(fromInjectedBookmark(func(metav1.Object) bool { return false }))

// StaleBookmarks is a negative control's broken client: the BOOKMARK S31
// injects and every BOOKMARK after it reach client-go at resourceVersion 1
// (a proxy replaying an old one).
var StaleBookmarks = brokenStream(fromInjectedBookmark(func(m metav1.Object) bool {
	m.SetResourceVersion("1")
	return true
}))

// fromInjectedBookmark is the rewrite of a bookmark control: from the
// BOOKMARK S31 injects on, each BOOKMARK (but a streaming list's
// initial-events-end one) goes through broken, which may change it and
// says whether it passes. The server's own BOOKMARKs before it pass as
// they are: one comes soon after a streaming list's initial events, and
// on a shared cluster (the existing backend) at a version other
// namespaces' writes moved on, so breaking it fails an earlier assertion
// than the control's (measured on the existing backend with every
// BOOKMARK stale: the APIs went from "" straight to 1, and the initial
// sync's assertion failed before the backwards one).
func fromInjectedBookmark(broken func(m metav1.Object) bool) func() func(*httpfault.Event) bool {
	return func() func(*httpfault.Event) bool {
		var on atomic.Bool
		return func(e *httpfault.Event) bool {
			if e.Type != watch.Bookmark || e.InitialEventsEnd {
				return true
			}
			m, err := meta.Accessor(e.Object)
			if err != nil {
				return true
			}
			if m.GetAnnotations()[S31InjectedAnnotation] != "" {
				on.Store(true)
			}
			return !on.Load() || broken(m)
		}
	}
}

// StaleControllerReader is a negative control's broken reader: it reads
// SharedIndexInformer.GetController().LastSyncResourceVersion until it
// reports something, then keeps that (a controller caching the version).
func StaleControllerReader(api string, read func() string) func() string {
	if api != APIInformerController {
		return read
	}
	var kept string
	return func() string {
		if kept == "" {
			kept = read()
		}
		return kept
	}
}
