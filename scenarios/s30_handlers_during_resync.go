package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
)

// S30's assertions: the watchdog on the calls that add and remove handlers
// on the running informer, what an existing or added handler must hear,
// and what a removed one must not.
const (
	HandlerCallsReturn         = "every AddEventHandler, RemoveEventHandler and HasSynced call on the running informer returned within its bound"
	HandlersHearAll            = "every handler heard an Add for each object present when it was added, by the time its registration synced, and then every change"
	RemovedHandlersHearNothing = "a removed handler heard no change made after its RemoveEventHandler returned, and nothing once it had stopped"
)

// S30's numbers.
//
// S30Resync is the informer's resync period, and so its resync check
// period: client-go's smallest (shared_informer.go minimumResyncPeriod, 1 s;
// a handler added after the start asking for less than the check period
// gets the check period, AddEventHandlerWithResyncPeriod). S30Objects
// objects exist throughout; S30Churn is how long handlers are added and
// removed while the objects are written (at least S30ResyncsDuring resyncs
// must fire in it), a round every S30RoundGap and one at each resync.
//
// S30CallBound is the watchdog's bound on each AddEventHandler,
// RemoveEventHandler and registration HasSynced call (and, where client-go
// has it, on a removed handler's stop): the first two wait for blockDeltas, which the informer holds while
// it processes one delta or batch (milliseconds here: S30IndexDelay per
// index call, a resync of a few dozen calls at most), and listenersLock,
// held for map operations only; a call still running after a second waits
// on something that will not let go. S30SyncBound bounds an added
// handler's registration's HasSynced: its initial Adds are queued before
// the call returns and a slow handler (S30SlowCall per call) works through
// a dozen (and what it heard meanwhile) in 200 ms.
const (
	S30Resync        = time.Second
	S30Objects       = 8
	S30Churn         = 2500 * time.Millisecond
	S30RoundGap      = 200 * time.Millisecond
	S30ResyncsDuring = 2
	S30CallBound     = time.Second
	S30SyncBound     = 2 * time.Second
	S30SlowCall      = 10 * time.Millisecond
	S30IndexDelay    = 2 * time.Millisecond
	// S30WriteGap paces the writer: at most a write every 8 ms (about 300
	// in the 2.5 s). Unpaced, a fast apiserver took 650-800 writes, more
	// than the informer's index calls (S30IndexDelay each) keep up with:
	// the resync's delta (v0.36+: one SyncAll, controller.go
	// processDeltas) then queued behind them past the 2.5 s, S30 saw one
	// resync and tested nothing (found by a server matrix run, 3 columns
	// of 6).
	S30WriteGap = 8 * time.Millisecond
)

// s30Index is S30's index function: S30IndexDelay per call, so that a
// resync queued one delta per object (DeltaFIFO, RealFIFO without
// AtomicFIFO) is processed over tens of milliseconds, wide enough for an
// add to land between two of its deltas.
var s30Index = Slowness{Name: "S30 index function", IndexDelay: S30IndexDelay}

// s30Kind is a handler of S30: its resync period and how long each of its
// calls takes.
type s30Kind struct {
	name   string
	resync time.Duration
	slow   time.Duration
}

// s30Existing are the handlers on the informer before it starts: the first
// one's resync calls start a round of adds (the trigger).
var s30Existing = []s30Kind{
	{"resync 1 s, the trigger", time.Second, 0},
	{"resync 1 s, slow", time.Second, S30SlowCall},
	{"no resync", 0, 0},
}

// s30Added are the handlers S30 adds while the informer runs, two of each
// kind in turn: the odd-numbered stay to the end, the even-numbered are
// removed a round after they synced.
var s30Added = []s30Kind{
	{"resync 1 s", time.Second, 0},
	{"no resync", 0, 0},
	{"resync 1 s, slow", time.Second, S30SlowCall},
	{"resync 2 s", 2 * time.Second, 0},
}

// S30Controller is how S30 adds and removes handlers on its running
// informer: client-go's own calls (the zero value), or a negative
// control's broken controller.
type S30Controller struct {
	// Add adds h with its resync period (default
	// inf.AddEventHandlerWithResyncPeriod).
	Add func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error)
	// Remove removes a handler Add added (default inf.RemoveEventHandler).
	Remove func(inf cache.SharedIndexInformer, reg cache.ResourceEventHandlerRegistration) error
	// Wrap, when set, wraps each of S30's handlers: those on the informer
	// before it starts (existing, numbered 1-3) and those added while it
	// runs (numbered from 1).
	Wrap func(h cache.ResourceEventHandler, existing bool, n int) cache.ResourceEventHandler
	// Release, when set, is called when S30 returns, failed or not,
	// before its informer stops: a negative control lets go of what it
	// blocked.
	Release func()
}

// S30HandlersDuringResync is S30's value: one sync mode, and its negative controls.
var S30HandlersDuringResync = Register(Scenario{
	ID: "S30", Title: "handlers added and removed while resyncs fire", Labels: []string{"handlers-during-resync"},
	Specs: []Spec{
		// Adding a handler does not involve the reflector: one sync mode.
		{
			Text: "every add and remove returns within its bound; added handlers hear every object, then every change; removed ones nothing after",
			Mode: e2e.ListWatch, Sample: true, Feature: ModeAlone,
			Run: func(ctx context.Context, s e2e.Setup, in Input) {
				var c S30Controller
				if in.Handler != nil {
					c.Wrap = func(h cache.ResourceEventHandler, _ bool, _ int) cache.ResourceEventHandler { return in.Handler(h) }
				}
				HandlersDuringResync(ctx, s, in.Probe(), c)
			},
		},
		{
			Text: "fails when a handler stuck in a resync holds the lock its controller adds handlers under",
			// A closure: the broken controller's state is the spec's own, made
			// when it runs.
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				HandlersDuringResync(ctx, s, probe.Options{}, S30StuckInResync())
			},
			Fails: []string{HandlerCallsReturn}, Because: "the S30 watchdog catches an AddEventHandler that does not return",
		},
		{
			Text:  "fails when an added handler loses a delete",
			Run:   RunWith2(HandlersDuringResync, probe.Options{}, S30LosesADelete()),
			Fails: []string{HandlersHearAll}, Because: "the S30 assertion catches a handler that missed a change",
		},
		{
			Text:  "fails when a registration reports the informer's sync instead of its handler's",
			Run:   RunWith2(HandlersDuringResync, probe.Options{}, S30InformerSynced()),
			Fails: []string{HandlersHearAll}, Because: "the S30 assertion catches a handler taken for synced before it heard its initial Adds",
		},
		{
			Text:  "fails when the controller never removes the handler",
			Run:   RunWith2(HandlersDuringResync, probe.Options{}, S30NeverRemoves()),
			Fails: []string{RemovedHandlersHearNothing}, Because: "the S30 assertion catches a handler still told of changes after its removal",
		},
	},
})

// HandlersDuringResync is S30: one typed pod informer resyncing every
// S30Resync, with three handlers of its own (resync 1 s; resync 1 s and
// slow; no resync) besides the probe's, on S30Objects objects. For S30Churn
// a writer relabels them and creates and deletes others, while rounds of
// calls (every S30RoundGap, and at once when the first existing handler
// hears a resync) each add two handlers and remove one, concurrently,
// through c: the added handlers resync every 1 s, never, every 1 s and
// slowly, or every 2 s; the even-numbered are removed a round after their
// registration synced, the odd-numbered stay.
//
// Asserted: each call into the informer, AddEventHandler,
// RemoveEventHandler and the registrations' HasSynced, returns within
// S30CallBound (the watchdog: the call runs on a goroutine of its own and
// the spec stops waiting at the bound, naming the call and where it waits,
// with a goroutine dump); each added
// handler's registration reports HasSynced within S30SyncBound, by which
// time the handler heard an Add of every object that existed throughout;
// every existing and every remaining added handler heard every write begun
// after its AddEventHandler returned (the write's resourceVersion, or the
// delete) and its calls add up to the server's state; a removed handler
// heard no write begun after its RemoveEventHandler returned and, where
// client-go lets one wait for it (v0.37+), stopped within S30CallBound and
// heard nothing after. Observed: the longest add, remove and time to
// HasSynced, whether the initial Adds are marked isInInitialList, the
// resync calls added handlers heard before any was due, the calls removed
// handlers heard after RemoveEventHandler returned, the resync calls of the
// existing handler that asked for none.
//
// Expected of client-go (tools/cache/shared_informer.go), v0.31-v0.37 and
// v0.38.0-alpha.2: AddEventHandlerWithResyncPeriod (v0.33+ through
// AddEventHandlerWithOptions) takes startedLock, then, on a started
// informer, blockDeltas, which HandleDeltas (v0.35+ also
// HandleBatchDeltas) holds while it processes a delta or batch; under it
// sharedProcessor.addListener (listenersLock) adds the listener, marked
// due a resync (listeners[l] = true), starts its run and pop goroutines,
// and the handler is sent an Add with isInInitialList true for every
// object of the indexer before the call returns: no delta is processed in
// between, so the handler hears each object once, then every later change.
// A resync (controller.go, reflector.go startResync) first asks
// sharedProcessor.shouldResync, which recomputes every listener's mark
// under listenersLock, then queues the resync; OnUpdate with an unchanged
// resourceVersion goes to the marked listeners only (distribute). A
// listener added between shouldResync and the resync's last delta is
// marked and hears the rest of that resync, even one that asked for none.
// How much that is depends on the queue: per object on v0.31-v0.34
// (DeltaFIFO; RealFIFO with InOrderInformers, v0.33+), so an add lands
// between two of the resync's deltas; in one batch with
// InOrderInformersBatchProcess (v0.35, RealFIFO.PopBatch), one SyncAll
// delta with AtomicFIFO (v0.36+, processDeltas), during which the add
// waits. distribute never waits on a handler: processorListener.add hands
// the notification to pop, which buffers without bound. RemoveEventHandler
// takes startedLock and blockDeltas, and removeListener deletes the
// listener and closes its addCh: no notification distributed after reaches
// it, but the one pop holds and the call in flight may still be handed to
// the handler after the call returned (v0.37 documents this:
// "RemoveEventHandler is asynchronous"); v0.37 added
// cache.ShutDownEventHandler and the registration's ShutdownChan, closed
// when its run goroutine returned (kubernetes PR #139755). v0.36's
// deadlock fixes (PR #136509, distribute waiting on listenersRCond until
// the listeners started; PR #137296, watchSynced started only by a started
// processor) concern an informer still starting, not S30's.
func HandlersDuringResync(ctx context.Context, s e2e.Setup, opts probe.Options, c S30Controller) {
	c = c.withDefaults()
	if c.Release != nil {
		// Deferred: also when an assertion fails (a panic), before the
		// informer stops at the spec's clean-up.
		defer c.Release()
	}
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	r, obs := startS30(ctx, env, opts, c)

	e2e.By(ctx, fmt.Sprintf("for %s: writes, resyncs every %s, and rounds adding two handlers and removing one, concurrently, each call bounded by %s", S30Churn, S30Resync, S30CallBound))
	w := &s30Writer{subjects: env.Subjects, stable: r.stable}
	start, churnEnd := r.churn(ctx, w)

	e2e.By(ctx, "the last writes: every object the writer created deleted, every object relabelled; then every remaining handler must have heard them")
	sentinel := w.finish(ctx)
	Expect(w.err).NotTo(HaveOccurred(), "S30's last writes")
	live := r.live()
	heardSentinel := func() bool {
		for _, h := range live {
			if !heard(h.rec.Snapshot().Events, sentinel) {
				return false
			}
		}
		return true
	}
	// The store first, then the handlers, given the time handler calls may
	// trail the store (e2e.HandlerLagTimeout): a wait, not the check, what
	// a handler missed is named below.
	server := env.Subjects.Quorum()
	recovery := obs.EventuallyConverged(ctx, server)
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, e2e.HandlerLagTimeout, true, func(context.Context) (bool, error) { return heardSentinel(), nil })
	n := obs.Report(recovery)

	writes := w.snapshot()
	unheard, afterRemoval, callsAfterRemoval := r.misses(ctx, live, writes, server)
	r.observe(churnStats{start: start, end: churnEnd, writes: w.during, callsAfterRemoval: callsAfterRemoval})
	resyncs := resyncRounds(r.existing[0].rec.Snapshot().Events, start, churnEnd)
	Expect(resyncs).To(BeNumerically(">=", S30ResyncsDuring), "at least %d resyncs fired during the %s of adds, removes and writes, else S30 tests nothing; numbers: %s", S30ResyncsDuring, S30Churn, n)
	Expect(w.during).To(BeNumerically(">=", 6), "a create, a delete and relabels during the %s of adds and removes, else S30 tests little; numbers: %s", S30Churn, n)
	Expect(len(afterRemoval)).To(BeZero(), RemovedHandlersHearNothing+" (violations%s)", firstOf(afterRemoval, 10))
	Expect(len(unheard)).To(BeZero(), HandlersHearAll+" (misses%s); numbers: %s", firstOf(unheard, 10), n)
}

// withDefaults is c with client-go's own AddEventHandlerWithResyncPeriod
// and RemoveEventHandler where it sets none.
func (c S30Controller) withDefaults() S30Controller {
	if c.Add == nil {
		c.Add = func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
			return inf.AddEventHandlerWithResyncPeriod(h, resync)
		}
	}
	if c.Remove == nil {
		c.Remove = func(inf cache.SharedIndexInformer, reg cache.ResourceEventHandlerRegistration) error {
			return inf.RemoveEventHandler(reg)
		}
	}
	return c
}

// startS30 creates S30's objects and starts its informer with the existing
// handlers (s30Existing), converged.
func startS30(ctx context.Context, env *e2e.Env, opts probe.Options, c S30Controller) (*s30Run, *e2e.Observed) {
	writer := env.Subjects
	r := &s30Run{env: env, c: c, trigger: make(chan struct{}, 1)}
	for i := range S30Objects {
		name := fmt.Sprintf("s30-%d", i)
		_, err := writer.Create(ctx, name)
		Expect(err).NotTo(HaveOccurred())
		r.stable = append(r.stable, writer.Key(name))
	}
	opts.Namespace = env.Namespace
	opts.Resync = S30Resync
	s30Index.apply(&opts)
	opts.Prepare = chain(opts.Prepare, func(inf cache.SharedIndexInformer) error {
		for i, k := range s30Existing {
			h := &s30Handler{n: i + 1, kind: k, existing: true, rec: &probe.Recorder{}}
			h.name = fmt.Sprintf("existing handler %d (%s)", h.n, k.name)
			var trigger chan<- struct{}
			if i == 0 {
				trigger = r.trigger
			}
			if _, err := inf.AddEventHandlerWithResyncPeriod(h.chain(c, trigger), k.resync); err != nil {
				return err
			}
			r.existing = append(r.existing, h)
		}
		return nil
	})
	obs := env.StartProbe(ctx, writer.Name(), env.User, opts)
	r.inf = obs.Informer
	obs.EventuallyConverged(ctx, writer.Quorum())
	return r, obs
}

// churn runs S30Churn of writes (w, in the background), resyncs and rounds
// of adding two handlers and removing one (a round at each resync too),
// each handler synced within its bound; it returns when the churn started
// and ended, once the handlers added last synced.
func (r *s30Run) churn(ctx context.Context, w *s30Writer) (start, end time.Time) {
	writeCtx, cancelWrites := context.WithCancel(ctx)
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		w.run(writeCtx, stop)
	}()
	stopWriter := sync.OnceFunc(func() { close(stop); <-writerDone })
	defer func() {
		// On a failure, the write in flight is cancelled.
		cancelWrites()
		stopWriter()
	}()
	start = time.Now()
	deadline := start.Add(S30Churn)
	round := time.NewTimer(0)
	defer round.Stop()
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			Expect(ctx.Err()).NotTo(HaveOccurred(), "S30's rounds")
		case <-poll.C:
			r.expectSynced()
			continue
		case <-r.trigger:
			r.resyncRounds++
		case <-round.C:
		}
		r.round()
		r.expectSynced()
		round.Reset(S30RoundGap)
	}
	stopWriter()
	end = time.Now()
	Expect(w.err).NotTo(HaveOccurred(), "S30's writes")
	// The handlers added last sync within their bound, or fail it.
	for r.unsynced() {
		<-poll.C
		r.expectSynced()
	}
	return start, end
}

// misses are what the live handlers did not hear of writes (or of the
// server's objects), and what removed handlers heard after their removal
// (and how many calls).
func (r *s30Run) misses(ctx context.Context, live []*s30Handler, writes []s30Write, server probe.Lister) (unheard, afterRemoval []string, callsAfterRemoval int) {
	for _, h := range live {
		unheard = append(unheard, h.unheard(writes)...)
		if err := probe.HandlersConverged(ctx, h.rec.Snapshot(), server); err != nil {
			unheard = append(unheard, h.name+": "+err.Error())
		}
	}
	for _, h := range r.added {
		if !h.removed.IsZero() {
			v, k := h.heardAfterRemoval(writes)
			afterRemoval = append(afterRemoval, v...)
			callsAfterRemoval += k
		}
	}
	return unheard, afterRemoval, callsAfterRemoval
}

// s30Run is the state of one S30 run.
type s30Run struct {
	env      *e2e.Env
	c        S30Controller
	inf      cache.SharedIndexInformer
	stable   []string // keys of the objects that exist throughout
	existing []*s30Handler
	added    []*s30Handler
	trigger  chan struct{}
	// rounds and resyncRounds count the rounds of calls, those a resync
	// started among them.
	rounds, resyncRounds int
}

// s30Handler is one of S30's handlers and what became of it.
type s30Handler struct {
	n        int
	name     string
	kind     s30Kind
	existing bool
	rec      *probe.Recorder
	reg      cache.ResourceEventHandlerRegistration
	// addBegun and added: the AddEventHandler call (zero for an existing
	// handler, there before the informer started).
	addBegun, added time.Time
	// synced is when its registration's HasSynced was seen true, atSync
	// its calls then.
	synced time.Time
	atSync []probe.Event
	// removeBegun and removed: its RemoveEventHandler call; stoppable
	// that the registration has ShutdownChan (v0.37+), stopped when it
	// closed.
	removing                      bool
	removeBegun, removed, stopped time.Time
	stoppable                     bool
}

// chain is the handler given to client-go: c's wrapper, then the trigger
// (when set), the slowness, and the recording handler. A slow handler
// records each call first, then takes its time: the record is when the
// call began.
func (h *s30Handler) chain(c S30Controller, trigger chan<- struct{}) cache.ResourceEventHandler {
	var rh cache.ResourceEventHandler = probe.RecordingHandler(h.rec)
	if h.kind.slow > 0 {
		rh = slowAfter{next: rh, d: h.kind.slow}
	}
	if trigger != nil {
		rh = resyncTrigger{next: rh, trigger: trigger}
	}
	if c.Wrap != nil {
		rh = c.Wrap(rh, h.existing, h.n)
	}
	return rh
}

// callResult is the outcome of one round's call.
type callResult struct {
	what  string
	err   error // client-go's
	stuck error // the watchdog's
	// notStopped: a removed handler with ShutdownChan that did not close
	// within the bound.
	notStopped string
}

// round adds two handlers and removes the oldest even-numbered one that
// synced, the three calls at once, each through the watchdog, and fails
// the spec naming any call that did not return within S30CallBound.
func (r *s30Run) round() {
	r.rounds++
	var calls []func() callResult
	for range 2 {
		n := len(r.added) + 1
		k := s30Added[(n-1)/2%len(s30Added)]
		h := &s30Handler{n: n, kind: k, rec: &probe.Recorder{}}
		h.name = fmt.Sprintf("added handler %d (%s)", n, k.name)
		r.added = append(r.added, h)
		calls = append(calls, func() callResult { return r.add(h) })
	}
	for _, h := range r.added {
		if h.n%2 == 0 && !h.synced.IsZero() && !h.removing {
			h.removing = true
			calls = append(calls, func() callResult { return r.remove(h) })
			break
		}
	}
	results := make([]callResult, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = call()
		}()
	}
	// Each call returns by its bound (the watchdog), a removal's stop
	// wait by another.
	wg.Wait()
	var stuck, failed, notStopped []string
	for _, res := range results {
		switch {
		case res.stuck != nil:
			stuck = append(stuck, res.stuck.Error())
		case res.err != nil:
			failed = append(failed, fmt.Sprintf("%s: %v", res.what, res.err))
		case res.notStopped != "":
			notStopped = append(notStopped, res.notStopped)
		}
	}
	Expect(stuck).To(BeEmpty(), HandlerCallsReturn+" (%s): round %d's calls", S30CallBound, r.rounds)
	Expect(failed).To(BeEmpty(), "S30's calls succeeded")
	Expect(notStopped).To(BeEmpty(), RemovedHandlersHearNothing+": it stopped (its registration's ShutdownChan closed) within %s of RemoveEventHandler", S30CallBound)
}

// add adds h through the controller, bounded by the watchdog.
func (r *s30Run) add(h *s30Handler) callResult {
	what := fmt.Sprintf("AddEventHandlerWithResyncPeriod(%s, %s)", h.name, h.kind.resync)
	rh := h.chain(r.c, nil)
	var (
		reg      cache.ResourceEventHandlerRegistration
		err      error
		returned time.Time
	)
	begun := time.Now()
	stuck := r.env.CallWithin(fmt.Sprintf("s30-add-%d", h.n), what, S30CallBound, func() {
		reg, err = r.c.Add(r.inf, rh, h.kind.resync)
		returned = time.Now()
	})
	if stuck != nil {
		// reg and err belong to the call still running.
		r.env.RecordBound(what+" returned", begun, time.Now(), S30CallBound, false)
		return callResult{what: what, stuck: stuck}
	}
	h.addBegun, h.added, h.reg = begun, returned, reg
	return callResult{what: what, err: err}
}

// remove removes h through the controller, bounded by the watchdog, and
// where the registration has ShutdownChan (client-go v0.37+, what
// cache.ShutDownEventHandler waits on) waits for it within S30CallBound.
func (r *s30Run) remove(h *s30Handler) callResult {
	what := fmt.Sprintf("RemoveEventHandler(%s)", h.name)
	var (
		err      error
		returned time.Time
	)
	begun := time.Now()
	stuck := r.env.CallWithin(fmt.Sprintf("s30-remove-%d", h.n), what, S30CallBound, func() {
		err = r.c.Remove(r.inf, h.reg)
		returned = time.Now()
	})
	if stuck != nil {
		r.env.RecordBound(what+" returned", begun, time.Now(), S30CallBound, false)
		return callResult{what: what, stuck: stuck}
	}
	h.removeBegun, h.removed = begun, returned
	if err != nil {
		return callResult{what: what, err: err}
	}
	if s, ok := h.reg.(interface{ ShutdownChan() <-chan struct{} }); ok {
		h.stoppable = true
		t := time.NewTimer(S30CallBound)
		defer t.Stop()
		select {
		case <-s.ShutdownChan():
			h.stopped = time.Now()
		case <-t.C:
			return callResult{what: what, notStopped: fmt.Sprintf("%s: not stopped %s after RemoveEventHandler returned", h.name, S30CallBound)}
		}
	}
	return callResult{what: what}
}

// expectSynced looks at the added handlers not yet seen synced: one whose
// registration reports HasSynced must have heard an Add of every object
// that exists throughout; one that does not, S30SyncBound after it was
// added, fails the spec. HasSynced goes through the watchdog too: up to
// v0.35 it takes the informer's startedLock and its queue's lock
// (shared_informer.go sharedIndexInformer.HasSynced), which the queue
// holds while a delta is processed.
func (r *s30Run) expectSynced() {
	var bad []string
	for _, h := range r.added {
		if h.reg == nil || !h.synced.IsZero() {
			continue
		}
		var synced bool
		what := fmt.Sprintf("HasSynced() of %s's registration", h.name)
		if stuck := r.env.CallWithin(fmt.Sprintf("s30-synced-%d", h.n), what, S30CallBound, func() { synced = h.reg.HasSynced() }); stuck != nil {
			// synced belongs to the call still running.
			Expect(stuck).NotTo(HaveOccurred(), HandlerCallsReturn+" (%s)", S30CallBound)
		}
		if synced {
			h.synced = time.Now()
			h.atSync = h.rec.Snapshot().Events
			if missing := missingAdds(h.atSync, r.stable); len(missing) > 0 {
				bad = append(bad, fmt.Sprintf("%s: its registration synced %s after it was added, when it had heard no Add of %s", h.name, h.synced.Sub(h.added).Round(time.Millisecond), strings.Join(missing, ", ")))
			}
			continue
		}
		if since := time.Since(h.added); since > S30SyncBound {
			bad = append(bad, fmt.Sprintf("%s: its registration not synced %s after it was added (bound %s)", h.name, since.Round(time.Millisecond), S30SyncBound))
		}
	}
	Expect(bad).To(BeEmpty(), HandlersHearAll)
}

// unsynced says whether an added handler's registration has not been seen
// synced yet.
func (r *s30Run) unsynced() bool {
	for _, h := range r.added {
		if h.reg != nil && h.synced.IsZero() {
			return true
		}
	}
	return false
}

// live are the handlers still on the informer: the existing ones, and the
// added ones not removed.
func (r *s30Run) live() []*s30Handler {
	out := slices.Clone(r.existing)
	for _, h := range r.added {
		if h.reg != nil && !h.removing {
			out = append(out, h)
		}
	}
	return out
}

// unheard are the writes begun after h was added (every write for an
// existing handler) that h did not hear: a create or an update whose
// resourceVersion it never got, a delete it was not told of.
func (h *s30Handler) unheard(writes []s30Write) []string {
	got, deleted := heardOf(h.rec.Snapshot().Events)
	var out []string
	for _, w := range writes {
		if !w.begun.After(h.added) {
			continue
		}
		when := "while it was there from the start"
		if !h.existing {
			when = fmt.Sprintf("%s after it was added", w.begun.Sub(h.added).Round(time.Millisecond))
		}
		switch {
		case w.kind == probe.Delete && !deleted[w.key]:
			out = append(out, fmt.Sprintf("%s: no Delete of %s, deleted %s", h.name, w.key, when))
		case w.kind != probe.Delete && !got[w.key+"@"+w.rv]:
			out = append(out, fmt.Sprintf("%s: no %s of %s@%s, written %s", h.name, w.kind, w.key, w.rv, when))
		}
	}
	return out
}

// heardAfterRemoval are the violations of a removed handler: a write begun
// after its RemoveEventHandler returned that reached it (its event was
// distributed after the listener was gone), a call after it stopped; and
// how many calls it heard after RemoveEventHandler returned at all (the
// notification pop held and the call in flight may come after).
func (h *s30Handler) heardAfterRemoval(writes []s30Write) ([]string, int) {
	evs := h.rec.Snapshot().Events
	got, deleted := heardOf(evs)
	var out []string
	for _, w := range writes {
		if !w.begun.After(h.removed) {
			continue
		}
		switch {
		case w.kind == probe.Delete && deleted[w.key]:
			out = append(out, fmt.Sprintf("%s: heard the Delete of %s, deleted %s after RemoveEventHandler returned", h.name, w.key, w.begun.Sub(h.removed).Round(time.Millisecond)))
		case w.kind != probe.Delete && got[w.key+"@"+w.rv]:
			out = append(out, fmt.Sprintf("%s: heard %s@%s, written %s after RemoveEventHandler returned", h.name, w.key, w.rv, w.begun.Sub(h.removed).Round(time.Millisecond)))
		}
	}
	after := 0
	for _, e := range evs {
		if e.Time.After(h.removed) {
			after++
		}
		if !h.stopped.IsZero() && e.Time.After(h.stopped) {
			out = append(out, fmt.Sprintf("%s: a call (%s of %s@%s) %s after it stopped (ShutdownChan closed)", h.name, e.Kind, e.Key, e.ResourceVersion, e.Time.Sub(h.stopped).Round(time.Millisecond)))
		}
	}
	return out, after
}

// churnStats are the numbers of the churn the observations report.
type churnStats struct {
	start, end        time.Time
	writes            int
	callsAfterRemoval int
}

// observe records what S30 saw, as observations, bound rows and report
// entries.
func (r *s30Run) observe(st churnStats) {
	env := r.env
	cs := r.addedStats()
	unasked := 0
	for _, h := range r.existing {
		evs := h.rec.Snapshot().Events
		k := countResyncs(evs, st.start) - countResyncs(evs, st.end)
		if h.kind.resync == 0 {
			unasked += countResyncs(evs, time.Time{})
		}
		cs.lines = append(cs.lines, fmt.Sprintf("%s: %d calls, %d resync calls during the writes", h.name, len(evs), k))
	}
	mark, waitable := cs.mark(), cs.waitable()
	env.Observe(report.Seconds("AddEventHandler on the running informer: longest call", cs.add.took()))
	env.Observe(report.Seconds("RemoveEventHandler: longest call", cs.remove.took()))
	env.Observe(report.Seconds("an added handler's registration: longest time to HasSynced", cs.synced.took()))
	env.Observe(report.Value("an added handler's initial Adds are marked isInInitialList", mark))
	// How many depends on when a resync met an add (12-31 over runs of
	// the same code): compared between series only; whether any came, always.
	env.Observe(report.Value("resync calls to added handlers before any was due", map[bool]string{true: "some", false: "none"}[cs.early > 0]))
	env.Observe(report.Calls("resync calls to added handlers before any was due: how many", cs.early).Varying())
	// Calls already handed over when the removal returned (measured 0-3
	// over runs of the same code): compared between series only.
	env.Observe(report.Calls("calls removed handlers heard after RemoveEventHandler returned", st.callsAfterRemoval).Varying())
	env.Observe(report.Value("a removed handler's end can be waited for", waitable))
	env.Observe(report.Calls("existing handler that asked for no resync: resync calls", unasked))
	if cs.adds > 0 {
		env.RecordBound("the slowest AddEventHandler returned: "+cs.add.what, cs.add.from, cs.add.to, S30CallBound, true)
		env.RecordBound("the slowest added handler's registration synced: "+cs.synced.what, cs.synced.from, cs.synced.to, S30SyncBound, !cs.synced.to.IsZero())
	}
	if cs.removes > 0 {
		env.RecordBound("the slowest RemoveEventHandler returned: "+cs.remove.what, cs.remove.from, cs.remove.to, S30CallBound, true)
	}
	env.Note("S30 calls", fmt.Sprintf("%d rounds in %s (%d started by a resync), %d writes: %d adds (longest %s), %d removes (longest %s), registrations synced within %s; initial Adds marked isInInitialList: %s; %d resync calls to added handlers before any was due; removed handlers heard %d calls after RemoveEventHandler returned; a removed handler's end can be waited for: %s",
		r.rounds, st.end.Sub(st.start).Round(time.Millisecond), r.resyncRounds, st.writes, cs.adds, cs.add.took().Round(time.Microsecond), cs.removes, cs.remove.took().Round(time.Microsecond), cs.synced.took().Round(time.Millisecond), mark, cs.early, st.callsAfterRemoval, waitable))
	env.Note("S30 handlers", strings.Join(cs.lines, "\n"))
}

// s30Span is the slowest call of a kind, as it happened.
type s30Span struct {
	from, to time.Time
	what     string
}

// longer makes s the call from-to of what if it took at least as long.
func (s *s30Span) longer(from, to time.Time, what string) {
	if to.Sub(from) >= s.to.Sub(s.from) {
		*s = s30Span{from, to, what}
	}
}

func (s s30Span) took() time.Duration { return s.to.Sub(s.from) }

// s30CallStats is what the added handlers' calls did: the slowest add,
// removal and sync, the initial Adds marked isInInitialList or not, the
// resync calls before any was due, the handlers' lines for the report.
type s30CallStats struct {
	add, remove, synced     s30Span
	marked, unmarked, early int
	adds, removes           int
	stoppable               bool
	lines                   []string
}

// mark says whether the added handlers' initial Adds were marked
// isInInitialList: all, some or none.
func (cs s30CallStats) mark() string {
	switch {
	case cs.marked > 0 && cs.unmarked == 0:
		return "all"
	case cs.marked > 0:
		return "some"
	}
	return "none"
}

// waitable says whether a removed handler's end can be waited for.
func (cs s30CallStats) waitable() string {
	if cs.stoppable {
		return "yes (the registration's ShutdownChan)"
	}
	return "no (RemoveEventHandler is asynchronous)"
}

// addedStats are the added handlers' call statistics.
func (r *s30Run) addedStats() s30CallStats {
	var cs s30CallStats
	for _, h := range r.added {
		if h.reg == nil {
			continue
		}
		cs.adds++
		cs.add.longer(h.addBegun, h.added, h.name)
		if !h.synced.IsZero() {
			cs.synced.longer(h.added, h.synced, h.name)
		}
		marked, unmarked := h.initialAddMarks(r.stable)
		cs.marked += marked
		cs.unmarked += unmarked
		evs := h.rec.Snapshot().Events
		resyncs, undue := h.resyncCalls(evs)
		cs.early += undue
		line := fmt.Sprintf("%s: added in %s, synced %s later; %d calls, %d resync calls (%d before any was due)",
			h.name, h.added.Sub(h.addBegun).Round(time.Microsecond), h.synced.Sub(h.added).Round(time.Millisecond), len(evs), resyncs, undue)
		if !h.removed.IsZero() {
			cs.removes++
			cs.remove.longer(h.removeBegun, h.removed, h.name)
			line += fmt.Sprintf("; removed in %s", h.removed.Sub(h.removeBegun).Round(time.Microsecond))
			if h.stoppable {
				cs.stoppable = true
				line += fmt.Sprintf(", stopped %s after RemoveEventHandler returned", h.stopped.Sub(h.removed).Round(time.Microsecond))
			}
		}
		cs.lines = append(cs.lines, line)
	}
	return cs
}

// initialAddMarks counts the handler's initial Adds marked isInInitialList
// and not: the first Add of each object that existed throughout (stable)
// is one of them (objects created later come as plain Adds).
func (h *s30Handler) initialAddMarks(stable []string) (marked, unmarked int) {
	first := map[string]bool{}
	for _, e := range h.atSync {
		if e.Kind != probe.Add || first[e.Key] || !slices.Contains(stable, e.Key) {
			continue
		}
		first[e.Key] = true
		if e.InInitialList {
			marked++
		} else {
			unmarked++
		}
	}
	return marked, unmarked
}

// resyncCalls counts the handler's resync calls in evs, and those before
// any was due: a listener is created after its add began and first due a
// resync its period later (shared_informer.go newProcessListener,
// determineNextResync; never when it asked for none): a resync call before
// that is one of a resync the listener was marked for when it was added
// (addListener).
func (h *s30Handler) resyncCalls(evs []probe.Event) (resyncs, undue int) {
	for _, e := range evs {
		if !e.Resync() {
			continue
		}
		resyncs++
		if h.kind.resync == 0 || e.Time.Before(h.addBegun.Add(h.kind.resync)) {
			undue++
		}
	}
	return resyncs, undue
}

// missingAdds are the keys of stable that events hold no Add of.
func missingAdds(events []probe.Event, stable []string) []string {
	added := map[string]bool{}
	for _, e := range events {
		if e.Kind == probe.Add {
			added[e.Key] = true
		}
	}
	var out []string
	for _, k := range stable {
		if !added[k] {
			out = append(out, k)
		}
	}
	return out
}

// heardOf indexes a handler's calls: key@resourceVersion of its Adds and
// Updates, the keys of its Deletes.
func heardOf(events []probe.Event) (got, deleted map[string]bool) {
	got, deleted = map[string]bool{}, map[string]bool{}
	for _, e := range events {
		switch e.Kind {
		case probe.Add, probe.Update:
			got[e.Key+"@"+e.ResourceVersion] = true
		case probe.Delete:
			deleted[e.Key] = true
		}
	}
	return got, deleted
}

// heard says whether events hold the write w (an update's
// resourceVersion).
func heard(events []probe.Event, w s30Write) bool {
	for i := len(events) - 1; i >= 0; i-- {
		if e := events[i]; e.Key == w.key && e.ResourceVersion == w.rv && e.Kind != probe.Delete {
			return true
		}
	}
	return false
}

// resyncRounds counts the resyncs a handler heard between start and end:
// its resync calls, those less than half a resync period apart counted as
// one resync.
func resyncRounds(events []probe.Event, start, end time.Time) int {
	k := 0
	var last time.Time
	for _, e := range events {
		if !e.Resync() || e.Time.Before(start) || e.Time.After(end) {
			continue
		}
		if last.IsZero() || e.Time.Sub(last) > S30Resync/2 {
			k++
		}
		last = e.Time
	}
	return k
}

// s30Write is one of S30's writes.
type s30Write struct {
	kind  probe.EventKind // Add (a create), Update (a relabel), Delete
	key   string
	rv    string // the written object's; "" for a delete
	begun time.Time
}

// s30Writer writes S30's objects: a relabel of an object that exists
// throughout, a create and a delete of others in turn.
type s30Writer struct {
	subjects *e2e.Subjects
	stable   []string // keys
	mu       sync.Mutex
	writes   []s30Write
	created  []string // names created and not yet deleted
	next     int
	during   int
	err      error
}

// run writes until stop closes (between two writes) or ctx ends (also
// inside one).
func (w *s30Writer) run(ctx context.Context, stop <-chan struct{}) {
	pace := time.NewTicker(S30WriteGap)
	defer pace.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-pace.C:
		}
		if err := w.write(ctx, i); err != nil {
			if ctx.Err() == nil {
				w.err = err
			}
			return
		}
		w.during++
	}
}

// write is the writer's i-th write: every sixth a create, three later a
// delete of the oldest object it created, a relabel otherwise.
func (w *s30Writer) write(ctx context.Context, i int) error {
	switch {
	case i%6 == 0:
		name := fmt.Sprintf("s30-new-%03d", w.next)
		w.next++
		begun := time.Now()
		o, err := w.subjects.Create(ctx, name)
		if err != nil {
			return err
		}
		w.created = append(w.created, name)
		w.record(s30Write{kind: probe.Add, key: o.Key, rv: o.ResourceVersion, begun: begun})
	case i%6 == 3 && len(w.created) > 0:
		name := w.created[0]
		w.created = w.created[1:]
		return w.delete(ctx, name)
	default:
		_, err := w.relabel(ctx, w.stable[i%len(w.stable)], fmt.Sprint(i))
		return err
	}
	return nil
}

func (w *s30Writer) delete(ctx context.Context, name string) error {
	begun := time.Now()
	if err := w.subjects.Delete(ctx, name); err != nil {
		return err
	}
	w.record(s30Write{kind: probe.Delete, key: w.subjects.Key(name), begun: begun})
	return nil
}

func (w *s30Writer) relabel(ctx context.Context, key, value string) (s30Write, error) {
	name := key[strings.IndexByte(key, '/')+1:]
	begun := time.Now()
	o, err := w.subjects.SetLabels(ctx, name, map[string]string{"write": value})
	if err != nil {
		return s30Write{}, err
	}
	wr := s30Write{kind: probe.Update, key: o.Key, rv: o.ResourceVersion, begun: begun}
	w.record(wr)
	return wr, nil
}

// finish, once run returned, deletes what the writer created and relabels
// every stable object; the last relabel is the sentinel: a handler that
// heard it heard every write before it.
func (w *s30Writer) finish(ctx context.Context) s30Write {
	for _, name := range w.created {
		if err := w.delete(ctx, name); err != nil {
			w.err = err
			return s30Write{}
		}
	}
	w.created = nil
	var last s30Write
	for _, key := range w.stable {
		wr, err := w.relabel(ctx, key, "last")
		if err != nil {
			w.err = err
			return s30Write{}
		}
		last = wr
	}
	return last
}

func (w *s30Writer) record(wr s30Write) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, wr)
}

func (w *s30Writer) snapshot() []s30Write {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.writes)
}

// slowAfter passes each call on, then takes d: the record is when the call
// began, the handler's goroutine is busy for d.
type slowAfter struct {
	next cache.ResourceEventHandler
	d    time.Duration
}

func (s slowAfter) OnAdd(obj any, initial bool) { s.next.OnAdd(obj, initial); time.Sleep(s.d) }
func (s slowAfter) OnUpdate(old, obj any)       { s.next.OnUpdate(old, obj); time.Sleep(s.d) }
func (s slowAfter) OnDelete(obj any)            { s.next.OnDelete(obj); time.Sleep(s.d) }

// resyncTrigger passes each call on and, on a resync call (an update with
// an unchanged resourceVersion), signals trigger without waiting.
type resyncTrigger struct {
	next    cache.ResourceEventHandler
	trigger chan<- struct{}
}

func (t resyncTrigger) OnAdd(obj any, initial bool) { t.next.OnAdd(obj, initial) }
func (t resyncTrigger) OnUpdate(old, obj any) {
	t.next.OnUpdate(old, obj)
	if sameResourceVersion(old, obj) {
		select {
		case t.trigger <- struct{}{}:
		default:
		}
	}
}
func (t resyncTrigger) OnDelete(obj any) { t.next.OnDelete(obj) }

// sameResourceVersion says whether an update's old and new objects have one
// resourceVersion: a resync (shared_informer.go OnUpdate's isSync).
func sameResourceVersion(old, obj any) bool {
	mo, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	mn, err := meta.Accessor(obj)
	return err == nil && mo.GetResourceVersion() == mn.GetResourceVersion()
}

// S30StuckInResync is a negative control's broken controller: it adds and
// removes handlers under a lock of its own, which its existing handler 1
// (not the slow one: behind its backlog, handler 2 reached no resync within
// the 2.5 s when the writes outran it) takes in its first resync call and
// holds, blocked, until S30 returns
// (Release). The next AddEventHandler never gets to client-go: a deadlock
// of the controller's making, the shape of one inside client-go, which the
// watchdog must report.
func S30StuckInResync() S30Controller {
	var mu sync.Mutex
	release := make(chan struct{})
	return S30Controller{
		Add: func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
			mu.Lock()
			defer mu.Unlock()
			return inf.AddEventHandlerWithResyncPeriod(h, resync)
		},
		Remove: func(inf cache.SharedIndexInformer, reg cache.ResourceEventHandlerRegistration) error {
			mu.Lock()
			defer mu.Unlock()
			return inf.RemoveEventHandler(reg)
		},
		Wrap: func(h cache.ResourceEventHandler, existing bool, n int) cache.ResourceEventHandler {
			if existing && n == 1 {
				return &stuckInResync{next: h, mu: &mu, release: release}
			}
			return h
		},
		Release: sync.OnceFunc(func() { close(release) }),
	}
}

// stuckInResync takes mu in its first resync call and holds it until
// release closes.
type stuckInResync struct {
	next    cache.ResourceEventHandler
	mu      *sync.Mutex
	release <-chan struct{}
	stuck   bool // one goroutine calls a handler (processorListener.run)
}

func (h *stuckInResync) OnAdd(obj any, initial bool) { h.next.OnAdd(obj, initial) }
func (h *stuckInResync) OnUpdate(old, obj any) {
	if !h.stuck && sameResourceVersion(old, obj) {
		h.stuck = true
		h.mu.Lock()
		<-h.release
		h.mu.Unlock()
	}
	h.next.OnUpdate(old, obj)
}
func (h *stuckInResync) OnDelete(obj any) { h.next.OnDelete(obj) }

// S30LosesADelete is a negative control's broken controller: its added
// handler 1 (one that stays) never hears the first delete it is told of.
func S30LosesADelete() S30Controller {
	return S30Controller{Wrap: func(h cache.ResourceEventHandler, existing bool, n int) cache.ResourceEventHandler {
		if !existing && n == 1 {
			return &dropFirstDelete{next: h}
		}
		return h
	}}
}

type dropFirstDelete struct {
	next    cache.ResourceEventHandler
	dropped bool // one goroutine calls a handler
}

func (h *dropFirstDelete) OnAdd(obj any, initial bool) { h.next.OnAdd(obj, initial) }
func (h *dropFirstDelete) OnUpdate(old, obj any)       { h.next.OnUpdate(old, obj) }
func (h *dropFirstDelete) OnDelete(obj any) {
	if !h.dropped {
		h.dropped = true
		return
	}
	h.next.OnDelete(obj)
}

// S30InformerSynced is a negative control's broken controller: the
// registrations it hands back report the informer's HasSynced, not the
// handler's (what controllers waited on before registrations had one,
// client-go v0.27), so a handler is taken for synced before it heard its
// initial Adds (S30 looks as soon as the add returned: even a fast handler
// has not heard them yet).
func S30InformerSynced() S30Controller {
	return S30Controller{
		Add: func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
			reg, err := inf.AddEventHandlerWithResyncPeriod(h, resync)
			return informerSynced{ResourceEventHandlerRegistration: reg, informer: inf}, err
		},
		Remove: func(inf cache.SharedIndexInformer, reg cache.ResourceEventHandlerRegistration) error {
			if r, ok := reg.(informerSynced); ok {
				reg = r.ResourceEventHandlerRegistration
			}
			return inf.RemoveEventHandler(reg)
		},
	}
}

type informerSynced struct {
	cache.ResourceEventHandlerRegistration
	informer cache.SharedIndexInformer
}

func (r informerSynced) HasSynced() bool { return r.informer.HasSynced() }

// S30NeverRemoves is a negative control's broken controller: its Remove
// returns without removing the handler (a controller that lost the
// registration).
func S30NeverRemoves() S30Controller {
	return S30Controller{Remove: func(cache.SharedIndexInformer, cache.ResourceEventHandlerRegistration) error { return nil }}
}
