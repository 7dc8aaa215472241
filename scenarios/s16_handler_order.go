package scenarios

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// InServerOrder is S16's assertion: the handler heard of the changes in
// the order the server made them.
const InServerOrder = "the handler heard of the changes in the server's order"

// S16Objects is how many objects S16's burst changes; S16Initial how many
// the informer starts on (2 s of initial list with SlowIndex).
const (
	S16Objects = 10
	S16Initial = 20
)

// S16Order is S16's value: the consumer not slowed, a slow handler and a
// slow index function, and its negative control.
var S16Order = Register(Scenario{
	ID: "S16", Title: "handler order across objects", Labels: []string{"handler-order", "release-sensitive"},
	Specs: []Spec{
		// The consumer not slowed and a slow handler on the typed stack, a
		// slow index function (what reorders a per-object queue) on every
		// stack, each in both sync modes.
		{
			Text: "the handler hears a burst of changes to several objects in the server's order",
			Entries: []Entry{
				{Name: NotSlowed.Name, Sample: true, Run: func(ctx context.Context, s e2e.Setup, in Input) {
					HandlerOrder(ctx, s, in.Probe(), NotSlowed)
				}},
				{Name: SlowHandler.Name, Run: func(ctx context.Context, s e2e.Setup, in Input) {
					HandlerOrder(ctx, s, in.Probe(), SlowHandler)
				}},
				{Name: SlowIndex.Name, Modes: AllStacks, Run: func(ctx context.Context, s e2e.Setup, in Input) {
					HandlerOrder(ctx, s, in.Probe(), SlowIndex)
				}},
			},
		},
		// Each Add reaches the handler only after the call that follows
		// it: the queue's order broken the way a per-object queue breaks it.
		{
			Text: "fails when the handler hears an object's creation after a later change",
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				wrap := func(h cache.ResourceEventHandler) cache.ResourceEventHandler { return &addsLate{next: h} }
				HandlerOrder(ctx, s, probe.Options{WrapHandler: wrap, NoHandlerCheck: true}, NotSlowed)
			},
			Fails: []string{InServerOrder}, Because: "the S16 assertion catches calls out of the server's order",
		},
	},
})

// HandlerOrder is S16, in two phases. (a) The informer starts on
// S16Initial objects and, as soon as its initial list was answered, half of
// them are relabelled and S16Initial/4 created, while the informer is
// still handing the initial list to its handler (with a slow index function
// that takes seconds). (b) Once synced, a burst: S16Objects more objects
// each created, then each relabelled, then each deleted. The handler must
// hear everything in the order the server made it: the initial list as one
// snapshot before any later change, and later changes in increasing
// resourceVersion, call after call.
//
// Expected of client-go, by version (tools/cache/controller.go
// newQueueFIFO): with the InOrderInformers gate on (beta and on by default
// from v0.33, GA and locked from v0.36) the informer's queue is a RealFIFO
// (the_real_fifo.go), a list of deltas popped in arrival order: the initial
// list's deltas first, then the watch's; with batches
// (InOrderInformersBatchProcess, v0.35+) PopBatch never batches past the
// initial population and calls the handlers in the batch's order. Before
// (v0.31, v0.32, or InOrderInformers=false) it is a DeltaFIFO
// (delta_fifo.go): deltas are queued per object and Pop hands over all of
// one object's queued deltas at once, so a watch event for an object still
// queued from the initial list is heard right after that object's initial
// Add, before the initial Adds of the objects queued behind it. Outside an
// initial list or a relist the DeltaFIFO holds its lock while the consumer
// processes (Pop), so the reflector adds one event per pop and phase (b)
// stays in order on every version (measured on v0.31 with a 100 ms index
// function). A slow handler alone never reorders: each handler has its own
// goroutine behind an unbounded buffer, fed in the queue's order.
func HandlerOrder(ctx context.Context, s e2e.Setup, opts probe.Options, slow Slowness) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	writer := env.Subjects
	server := writer.Quorum()
	initial, maxInitial := createS16Initial(ctx, writer)
	opts.Namespace = env.Namespace
	slow.apply(&opts)
	env.Note("S16 consumer", slow.describe())

	e2e.By(ctx, "starting the informer; changes as soon as its initial list was answered")
	obs, phaseA, gap := changeDuringInitialList(ctx, env, opts, initial)
	syncedBefore := gap <= 0
	if slow.IndexDelay > 0 {
		Expect(syncedBefore).To(BeFalse(), "the first change was made before the handler heard the last of the initial list (%s), else S16 tests nothing", gap)
	}

	names := make([]string, S16Objects)
	for i := range names {
		names[i] = fmt.Sprintf("burst-%02d", i)
	}
	e2e.By(ctx, fmt.Sprintf("a burst across %d objects: each created, then each relabelled, then each deleted", len(names)))
	start := time.Now()
	burstOf(ctx, writer, names)
	lastWrite := time.Now()
	burst := lastWrite.Sub(start)
	delivered := obs.EventuallyConverged(ctx, server)
	n := obs.Report(delivered)

	events := obs.Recorder.Snapshot().Events
	var lag time.Duration
	if len(events) > len(phaseA) {
		lag = events[len(events)-1].Time.Sub(lastWrite)
	}
	disorder, err := outOfOrder(events, maxInitial)
	Expect(err).NotTo(HaveOccurred())
	// Nothing lost: EventuallyConverged checked the handler calls add up
	// to the server's state. (A pod's delete is two changes: its deletion
	// timestamp set, then its removal.)
	env.Note("S16 order", fmt.Sprintf("initial list and changes during it: %d handler calls (the initial list fully heard before the first change: %t); burst: %d handler calls for %d writes in %s, the last %s after the last write; %d calls out of the server's order%s",
		len(phaseA), syncedBefore, len(events)-len(phaseA), 3*len(names), burst.Round(time.Millisecond), lag.Round(time.Millisecond), len(disorder), firstOf(disorder, 3)))
	Expect(disorder).To(BeEmpty(), InServerOrder+" (the initial list first, then resourceVersions increasing from call to call), %s; numbers: %s", slow.describe(), n)
}

// createS16Initial creates S16's initial objects, returning their names
// and the newest resource version among them.
func createS16Initial(ctx context.Context, writer *e2e.Subjects) (initial []string, maxInitial uint64) {
	initial = make([]string, S16Initial)
	for i := range initial {
		initial[i] = fmt.Sprintf("initial-%02d", i)
		o, err := writer.Create(ctx, initial[i])
		Expect(err).NotTo(HaveOccurred())
		rv, err := strconv.ParseUint(o.ResourceVersion, 10, 64)
		Expect(err).NotTo(HaveOccurred(), "resourceVersion of %s", o.Key)
		maxInitial = max(maxInitial, rv)
	}
	return initial, maxInitial
}

// changeDuringInitialList starts the informer and, as soon as its initial
// list was answered, relabels half the initial objects and creates a
// quarter more; it returns the informer, synced and converged, its handler
// calls so far, and how long before the handler heard the last of the
// initial list the first change was made (0 or less: only after, and S16
// tested nothing of it).
func changeDuringInitialList(ctx context.Context, env *e2e.Env, opts probe.Options, initial []string) (obs *e2e.Observed, phaseA []probe.Event, gap time.Duration) {
	writer := env.Subjects
	obs = env.StartProbeUnsynced(writer.Name(), env.User, opts)
	Eventually(func() bool { return initialListAnswered(obs.Recorder.Snapshot()) }).WithContext(ctx).WithTimeout(e2e.SyncTimeout).WithPolling(5*time.Millisecond).
		Should(BeTrue(), "the informer's initial list was answered")
	// One change queued behind the initial list is enough for a per-object
	// queue to reorder: the first one must be made before the handler heard
	// the last of the initial list (the rest may come after, on a loaded
	// machine). Timed from outside: the informer's HasSynced takes the
	// queue's lock, which client-go before v0.36 holds while it processes.
	var firstChange time.Time
	for i, name := range initial[S16Initial/2:] {
		_, err := writer.SetLabels(ctx, name, map[string]string{"step": "during-the-initial-list"})
		Expect(err).NotTo(HaveOccurred())
		if i == 0 {
			firstChange = time.Now()
		}
	}
	createNamed(ctx, writer, "during-%02d", S16Initial/4)
	syncCtx, cancel := context.WithTimeout(ctx, e2e.SyncTimeout)
	defer cancel()
	Expect(obs.WaitForSync(syncCtx)).To(Succeed(), "the informer synced")
	obs.EventuallyConverged(ctx, writer.Quorum())
	phaseA = obs.Recorder.Snapshot().Events
	var lastInitial time.Time
	for _, e := range phaseA {
		if e.InInitialList && e.Time.After(lastInitial) {
			lastInitial = e.Time
		}
	}
	return obs, phaseA, lastInitial.Sub(firstChange)
}

// burstOf creates each of names, then relabels each, then deletes each.
func burstOf(ctx context.Context, writer *e2e.Subjects, names []string) {
	for _, name := range names {
		_, err := writer.Create(ctx, name)
		Expect(err).NotTo(HaveOccurred())
	}
	for _, name := range names {
		_, err := writer.SetLabels(ctx, name, map[string]string{"step": "relabelled"})
		Expect(err).NotTo(HaveOccurred())
	}
	for _, name := range names {
		Expect(writer.Delete(ctx, name)).To(Succeed())
	}
}

// initialListAnswered: the informer's first list (a LIST, or a streaming
// list up to its initial-events-end bookmark) has been answered. The probe
// cannot decode every stack's bookmark object (the metadata stack's
// PartialObjectMetadata), so any BOOKMARK counts: a streaming list's first
// is its initial-events-end (kube-apiserver's periodic ones come a minute
// later).
func initialListAnswered(rec probe.Record) bool {
	for _, r := range rec.ObjectRequests() {
		if r.Status == 200 && (!r.Watch || r.SendInitialEvents && (r.InitialEventsEnd || r.EventTypes["BOOKMARK"] > 0)) {
			return true
		}
	}
	return false
}

// outOfOrder lists the handler calls heard out of the server's order: an
// initial-list Add counts as the initial list's snapshot (maxInitial, the
// newest resourceVersion it can hold) and must come before any change newer
// than it; every other call's resourceVersion must be above the call
// before's. resourceVersions are etcd revisions: integers, the server's
// order (the API calls them opaque; every kube-apiserver on etcd writes the
// revision).
func outOfOrder(events []probe.Event, maxInitial uint64) ([]string, error) {
	var out []string
	var last uint64
	lastCall := ""
	for _, e := range events {
		rv, err := strconv.ParseUint(e.ResourceVersion, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s of %s: resourceVersion %q is not an etcd revision: %w", e.Kind, e.Key, e.ResourceVersion, err)
		}
		call := fmt.Sprintf("%s %s@%d", e.Kind, e.Key, rv)
		if e.InInitialList {
			if last > maxInitial {
				out = append(out, fmt.Sprintf("%s (initial list) after %s", call, lastCall))
			}
			continue
		}
		if rv <= last {
			out = append(out, fmt.Sprintf("%s after %s", call, lastCall))
		}
		last, lastCall = rv, call
	}
	return out, nil
}

// firstOf is ": " and the first n of list, "" when it is empty.
func firstOf(list []string, n int) string {
	if len(list) == 0 {
		return ""
	}
	more := ""
	if len(list) > n {
		list, more = list[:n], fmt.Sprintf(", ... (%d more)", len(list)-n)
	}
	s := ": "
	for i, l := range list {
		if i > 0 {
			s += "; "
		}
		s += l
	}
	return s + more
}

// addsLate holds an Add back until the next call arrives, then delivers
// that call first: the creation is heard after a later change (S16's
// negative control).
type addsLate struct {
	next cache.ResourceEventHandler
	mu   sync.Mutex
	held func()
}

func (h *addsLate) deliver(call func(), hold bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	held := h.held
	h.held = nil
	if hold && held == nil {
		h.held = call
		return
	}
	call()
	if held != nil {
		held()
	}
}

func (h *addsLate) OnAdd(obj any, initial bool) {
	h.deliver(func() { h.next.OnAdd(obj, initial) }, !initial)
}
func (h *addsLate) OnUpdate(old, obj any) { h.deliver(func() { h.next.OnUpdate(old, obj) }, false) }
func (h *addsLate) OnDelete(obj any)      { h.deliver(func() { h.next.OnDelete(obj) }, false) }
