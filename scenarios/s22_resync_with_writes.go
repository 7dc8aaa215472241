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
)

// S22ResyncWrites is S22's value: one handler and three more in both sync
// modes, and its negative controls.
var S22ResyncWrites = Register(Scenario{
	ID: "S22", Title: "resyncs among writes", Labels: []string{"resync"},
	Specs: []Spec{
		{
			Text: "every change reaches the handler as a change and resyncs re-deliver only what it heard", Sample: true,
			Entries: []Entry{{Run: func(ctx context.Context, s e2e.Setup, in Input) {
				ResyncWithWrites(ctx, s, in.Probe())
			}}},
		},
		{
			Text: "three more handlers, resyncing every 1 s, every 3 s and never, each hear every change as a change, and the one that asked for none no resync",
			Entries: []Entry{{Feature: "three more handlers (resync 1 s, 3 s, none)", Run: func(ctx context.Context, s e2e.Setup, in Input) {
				ResyncWithWritesHandlers(ctx, s, in.Probe(), S22MixedHandlers)
			}}},
		},
		{
			Text: "fails when one of several handlers is handed the old object for a change",
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				broken := append([]S22Handler(nil), S22MixedHandlers...)
				broken[2].Wrap = func(h cache.ResourceEventHandler) cache.ResourceEventHandler { return &oldForNew{next: h} }
				ResyncWithWritesHandlers(ctx, s, probe.Options{}, broken)
			},
			Fails: []string{ResyncHidesNothing}, Because: "the S22 assertion catches a change handed over as a resync to one handler of several",
		},
		// Every other real change reaches the handler as Update(old, old):
		// it looks like a resync, and the change is hidden.
		{
			Text: "fails when the handler is handed the old object for a change",
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				wrap := func(h cache.ResourceEventHandler) cache.ResourceEventHandler { return &oldForNew{next: h} }
				ResyncWithWrites(ctx, s, probe.Options{WrapHandler: wrap, NoHandlerCheck: true})
			},
			Fails: []string{ResyncHidesNothing}, Because: "the S22 assertion catches a change handed over as a resync",
		},
		{
			Text: "fails when a handler that asked for no resync is handed resyncs",
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				broken := append([]S22Handler(nil), S22MixedHandlers...)
				broken[0].Wrap = func(h cache.ResourceEventHandler) cache.ResourceEventHandler { return echoUpdates{next: h} }
				ResyncWithWritesHandlers(ctx, s, probe.Options{}, broken)
			},
			Fails: []string{NoResyncUnasked}, Because: "the S22 assertion catches resyncs handed to a handler that asked for none",
		},
	},
})

// ResyncHidesNothing is S22's assertion: resyncs neither hid a change nor
// delivered one the handler had not heard as a change.
const ResyncHidesNothing = "every change reached the handler as a change, and resyncs re-delivered only what it had heard"

// S22Resync is S22's resync period (factory and handler), S22Objects how
// many objects it relabels, S22Rounds how many times each at least: the
// rounds go on until S22ResyncsDuring resync calls were heard during them
// (a fast machine writes 100 in 0.7 s, under one resync period), for at
// most S22WritesBound.
const (
	S22Resync        = time.Second
	S22Objects       = 5
	S22Rounds        = 20
	S22ResyncsDuring = 2 * S22Objects
	S22WritesBound   = 20 * S22Resync
)

// ResyncWithWrites is S22: an informer resyncs every S22Resync while its
// objects are relabelled, S22Rounds times each, round after round (a few
// seconds of writes, several resyncs among them). Every write's
// resourceVersion must reach the handler as a change (an Add or an Update
// whose old and new resourceVersions differ), and every resync (an Update
// with the same resourceVersion on both sides) must carry a
// resourceVersion the handler had already heard of as a change of that
// object: a resync hides no change and announces none.
//
// Expected of client-go v0.31-v0.37: a resync re-delivers the store's
// objects (delta_fifo.go Resync: a Sync delta per key with nothing queued;
// the_real_fifo.go Resync, and with AtomicFIFO one SyncAll delta that
// controller.go processDeltas turns into OnUpdate(obj, obj) for every object
// of the store), and the store holds only what was processed, in order,
// before; shared_informer.go OnUpdate marks an update with equal
// resourceVersions a sync and hands it only to handlers due a resync.
func ResyncWithWrites(ctx context.Context, s e2e.Setup, opts probe.Options) {
	ResyncWithWritesHandlers(ctx, s, opts, nil)
}

// S22Handler is a handler S22 adds to its informer besides the probe's:
// its resync period (0: none) and, in a negative control, a wrapper that
// breaks it.
type S22Handler struct {
	Resync time.Duration
	Wrap   func(cache.ResourceEventHandler) cache.ResourceEventHandler
}

// S22MixedHandlers are the handlers of S22's mixed-periods entry: one that
// asked for no resync, one at the informer's period, one at three times it.
var S22MixedHandlers = []S22Handler{{Resync: 0}, {Resync: S22Resync}, {Resync: 3 * S22Resync}}

// ResyncWithWritesHandlers is S22 with more handlers on the informer, each
// with its own resync period (client-go resyncs each at its own period,
// shared_informer.go processorListener.shouldResync): each handler's view
// is checked as the probe's, and a handler that asked for no resync must
// hear none (shared_informer.go OnUpdate distributes an update with
// unchanged resourceVersions only to the listeners due a resync).
func ResyncWithWritesHandlers(ctx context.Context, s e2e.Setup, opts probe.Options, handlers []S22Handler) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	writer := env.Subjects
	server := writer.Quorum()
	names := make([]string, S22Objects)
	for i := range names {
		names[i] = fmt.Sprintf("resynced-%d", i)
		_, err := writer.Create(ctx, names[i])
		Expect(err).NotTo(HaveOccurred())
	}
	obs, extra := startResyncedInformer(ctx, env, opts, handlers)

	e2e.By(ctx, fmt.Sprintf("relabelling %d objects at least %d times each while the informer resyncs every %s, until %d resync calls came among the writes", S22Objects, S22Rounds, S22Resync, S22ResyncsDuring))
	written := map[string][]string{}
	start := time.Now()
	rounds := 0
	for ; rounds < S22Rounds || countResyncs(obs.Recorder.Snapshot().Events, start) < S22ResyncsDuring; rounds++ {
		if time.Since(start) > S22WritesBound {
			break // the precondition below fails, naming the numbers
		}
		for _, name := range names {
			o, err := writer.SetLabels(ctx, name, map[string]string{"round": fmt.Sprint(rounds)})
			Expect(err).NotTo(HaveOccurred())
			written[o.Key] = append(written[o.Key], o.ResourceVersion)
		}
	}
	end := time.Now()
	// One resync more after the writes, so the last one saw the last
	// changes.
	resyncsAfter := func() int { return countResyncs(obs.Recorder.Snapshot().Events, end) }
	Eventually(resyncsAfter).WithTimeout(e2e.HandlerLagTimeout+S22Resync).Should(BeNumerically(">=", S22Objects), "a resync after the writes")
	recovery := obs.EventuallyConverged(ctx, server)
	n := obs.Report(recovery)

	hidden, announced, during := resyncView(obs.Recorder.Snapshot().Events, written, start, end)
	var unasked []string
	for i, h := range handlers {
		eh, u := extraHandlerView(ctx, fmt.Sprintf("handler %d (resync %s)", i+1, h.Resync), h, extra[i], written, start, end)
		hidden, unasked = append(hidden, eh...), append(unasked, u...)
	}
	env.Note("S22 resyncs", fmt.Sprintf("%d writes in %s; %d resync calls during them; %d changes hidden%s; %d resyncs of something unheard%s; %d extra handlers; %d resyncs to a handler that asked for none%s",
		S22Objects*rounds, end.Sub(start).Round(time.Millisecond), during, len(hidden), firstOf(hidden, 3), len(announced), firstOf(announced, 3), len(handlers), len(unasked), firstOf(unasked, 3)))
	Expect(during).To(BeNumerically(">=", S22ResyncsDuring), "resyncs happened while the objects changed (within %s of writes), else S22 tests nothing; numbers: %s", S22WritesBound, n)
	Expect(append(hidden, announced...)).To(BeEmpty(), ResyncHidesNothing+"; numbers: %s", n)
	Expect(unasked).To(BeEmpty(), NoResyncUnasked)
}

// startResyncedInformer starts S22's informer, resyncing every S22Resync,
// converged, with handlers added each with its own resync period and
// recorder (returned in order).
func startResyncedInformer(ctx context.Context, env *e2e.Env, opts probe.Options, handlers []S22Handler) (*e2e.Observed, []*probe.Recorder) {
	opts.Namespace = env.Namespace
	opts.Resync = S22Resync
	extra := make([]*probe.Recorder, len(handlers))
	if len(handlers) > 0 {
		opts.Prepare = chain(opts.Prepare, func(inf cache.SharedIndexInformer) error {
			for i, h := range handlers {
				extra[i] = &probe.Recorder{}
				var rh cache.ResourceEventHandler = probe.RecordingHandler(extra[i])
				if h.Wrap != nil {
					rh = h.Wrap(rh)
				}
				if _, err := inf.AddEventHandlerWithResyncPeriod(rh, h.Resync); err != nil {
					return err
				}
			}
			return nil
		})
	}
	obs := env.StartProbe(ctx, env.Subjects.Name(), env.User, opts)
	obs.EventuallyConverged(ctx, env.Subjects.Quorum())
	return obs, extra
}

// extraHandlerView is what an added handler, name, missed of written or
// heard announced (hidden), and the resync calls it heard though it asked
// for none (unasked). Each handler has its own queue (shared_informer.go
// processorListener): it gets the same lag as the probe's first.
func extraHandlerView(ctx context.Context, name string, h S22Handler, rec *probe.Recorder, written map[string][]string, start, end time.Time) (hidden, unasked []string) {
	lagging := func() []string {
		h, _, _ := resyncView(rec.Snapshot().Events, written, start, end)
		return h
	}
	// A wait, not the check: what is still missing after it is named
	// with the rest.
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, e2e.HandlerLagTimeout, true, func(context.Context) (bool, error) { return len(lagging()) == 0, nil })
	evs := rec.Snapshot().Events
	eh, ea, _ := resyncView(evs, written, start, end)
	for _, x := range append(eh, ea...) {
		hidden = append(hidden, name+": "+x)
	}
	if h.Resync == 0 {
		if k := countResyncs(evs, time.Time{}); k > 0 {
			unasked = append(unasked, fmt.Sprintf("%s: %d resync calls", name, k))
		}
	}
	return hidden, unasked
}

// NoResyncUnasked is S22's assertion on its mixed-periods entry: a handler
// that asked for no resync heard none.
const NoResyncUnasked = "a handler that asked for no resync heard none"

// resyncView checks one handler's calls against the writes: the changes it
// never heard as changes (hidden), the resyncs of a resourceVersion it had
// not heard as a change (announced), and how many resyncs came between
// start and end.
func resyncView(events []probe.Event, written map[string][]string, start, end time.Time) (hidden, announced []string, during int) {
	heard := map[string]map[string]bool{}
	for _, e := range events {
		resync := e.Resync()
		switch {
		case resync:
			if !e.Time.Before(start) && e.Time.Before(end) {
				during++
			}
			if !heard[e.Key][e.ResourceVersion] {
				announced = append(announced, fmt.Sprintf("resync of %s@%s before any change to it", e.Key, e.ResourceVersion))
			}
		case e.Kind == probe.Add || e.Kind == probe.Update:
			if heard[e.Key] == nil {
				heard[e.Key] = map[string]bool{}
			}
			heard[e.Key][e.ResourceVersion] = true
		}
	}
	for key, rvs := range written {
		for _, rv := range rvs {
			if !heard[key][rv] {
				hidden = append(hidden, fmt.Sprintf("%s@%s never heard as a change", key, rv))
			}
		}
	}
	slices.Sort(hidden)
	return hidden, announced, during
}

// countResyncs counts the resync calls (probe.Event.Resync) at or after
// since.
func countResyncs(events []probe.Event, since time.Time) int {
	k := 0
	for _, e := range events {
		if e.Resync() && !e.Time.Before(since) {
			k++
		}
	}
	return k
}

// echoUpdates hands every update over twice, the second time as a resync
// (the new object on both sides).
type echoUpdates struct{ next cache.ResourceEventHandler }

func (h echoUpdates) OnAdd(obj any, initial bool) { h.next.OnAdd(obj, initial) }
func (h echoUpdates) OnUpdate(old, obj any) {
	h.next.OnUpdate(old, obj)
	h.next.OnUpdate(obj, obj)
}
func (h echoUpdates) OnDelete(obj any) { h.next.OnDelete(obj) }

// oldForNew hands every other update over with its old object on both sides.
type oldForNew struct {
	next  cache.ResourceEventHandler
	calls int
}

func (h *oldForNew) OnAdd(obj any, initial bool) { h.next.OnAdd(obj, initial) }
func (h *oldForNew) OnUpdate(old, obj any) {
	// One goroutine per handler calls this (shared_informer.go
	// processorListener.run): no lock needed.
	if h.calls++; h.calls%2 == 0 {
		obj = old
	}
	h.next.OnUpdate(old, obj)
}
func (h *oldForNew) OnDelete(obj any) { h.next.OnDelete(obj) }
