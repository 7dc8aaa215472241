package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// ServerHadView is S17's assertion: from inside every handler call of a
// relist, the informer's own store showed a state the server had.
const ServerHadView = "every handler call of the relist saw a store the server once had"

// s17Index slows S17's informer down: 20 ms per index call keeps a relist
// applied item by item visible from the handlers, at 40 calls a relist.
var s17Index = Slowness{Name: "slow index function", IndexDelay: 20 * time.Millisecond}

// S17Objects is how many objects S17 replaces while the informer is cut off.
const S17Objects = 20

// S17View is S17's value: every informer stack in both sync modes, and its
// negative control (client-go v0.36+).
var S17View = Register(Scenario{
	ID: "S17", Title: "what a handler sees of the store during a relist", Labels: []string{"relist-view", "compaction", "release-sensitive"},
	Needs: []cluster.Capability{cluster.CapabilityEtcdCompaction}, Disruptive: true,
	Specs: []Spec{
		{
			Text: "every handler call of a relist after a 410 sees a store the server once had", Sample: true,
			Entries: []Entry{{Modes: AllStacks, Run: func(ctx context.Context, s e2e.Setup, in Input) {
				RelistView(ctx, s, in.Probe())
			}}},
		},
		// client-go's own queue of v0.33/v0.34: the relist queued as one
		// delta per object, each applied just before its handler call
		// (tools/cache/controller.go newQueueFIFO, the_real_fifo.go
		// Replace). Both gates: batches alone (PopBatch, up to 1000
		// distinct objects in one store transaction) already apply a
		// relist this small at once.
		{
			Text: "fails when the relist is applied item by item (AtomicFIFO=false, InOrderInformersBatchProcess=false)", Mode: e2e.StreamingList, ClientGo: ">= 0.36.0",
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				e2e.UseClientGoGate(ctx, "AtomicFIFO", false)
				e2e.UseClientGoGate(ctx, "InOrderInformersBatchProcess", false)
				RelistView(ctx, s, probe.Options{})
			},
			Fails: []string{ServerHadView}, Because: "the S17 assertion catches a relist applied item by item",
		},
	},
})

// RelistView is S17: while an informer is cut off, its objects are
// replaced one by one, each deleted and then a successor created
// (old-00 deleted, new-00 created, old-01 deleted, ...), and etcd is
// compacted; without the watch cache (RelistProfile) the informer's resume
// is answered 410 and it must relist and apply the difference in one go. A handler of the informer's looks at the
// informer's own store (its indexer, as a controller's lister does) from
// inside every call the relist makes; each look must be a state the server
// had: one of the 2N+1 states of the history above. Partly applied, the
// relist shows states the server never had: deletions first, old-01 is
// gone while new-00 is not there yet (though new-00 was created before
// old-01 was deleted); additions first, old-00 is still there beside
// new-00, its successor. The informer's processing is slowed with a slow
// index function (s17Index), as a controller's index functions do.
//
// Expected of client-go, by version (tools/cache/controller.go
// newQueueFIFO and processReplacedAllInfo): with the AtomicFIFO gate (beta
// and on by default from v0.36) a relist is one ReplacedAll delta: the
// store is replaced at once ("Replace the client state first so the store
// reflects the events handlers are given"), then the handlers are told of
// the deletions and additions: every look sees the final state. Without it
// the relist is queued as one delta per object (the_real_fifo.go Replace:
// deletions first; delta_fifo.go Replace, the queue before
// InOrderInformers: additions first). With InOrderInformersBatchProcess
// (beta, on from v0.35) the queue is popped in batches of up to 1000
// distinct objects (the_real_fifo.go PopBatch), each applied in one store
// transaction before its handler calls (controller.go
// processDeltasInBatch): a relist of S17's size is applied at once too.
// Otherwise (v0.31-v0.34; later with both gates off) each delta is applied
// to the store just before its handler call, and the handler's looks see
// the store half replaced. The report says which the informer did, with
// the gates in effect.
func RelistView(ctx context.Context, s e2e.Setup, opts probe.Options) {
	env, ctx, c := startRelistEnv(ctx, s)
	writer := env.Subjects
	server := writer.Quorum()

	olds, news := make([]string, S17Objects), make([]string, S17Objects)
	for i := range olds {
		olds[i], news[i] = fmt.Sprintf("old-%02d", i), fmt.Sprintf("new-%02d", i)
		_, err := writer.Create(ctx, olds[i])
		Expect(err).NotTo(HaveOccurred())
	}
	// The server's history of the informer's key sets, in order.
	history := newStateHistory()
	for _, name := range olds {
		history.add(writer.Key(name))
	}
	history.record()
	obs, looks := startLookingInformer(ctx, env, opts)

	changeWhileCutOff(ctx, env.Proxy, c, fmt.Sprintf("replacing the %d objects one by one (each deleted, then its successor created)", S17Objects), func() {
		for i := range olds {
			Expect(writer.Delete(ctx, olds[i])).To(Succeed())
			history.remove(writer.Key(olds[i]))
			history.record()
			_, err := writer.Create(ctx, news[i])
			Expect(err).NotTo(HaveOccurred())
			history.add(writer.Key(news[i]))
			history.record()
		}
	})
	recovery := obs.EventuallyConverged(ctx, server)
	n := obs.Report(recovery)
	// 2N calls: the deletes of the old objects and the adds of the new ones.
	Eventually(looks.armedCalls).WithTimeout(e2e.HandlerLagTimeout).Should(BeNumerically(">=", 2*S17Objects),
		"the looking handler heard the relist's %d deletes and adds", 2*S17Objects)
	// A relist, not a resumed watch: the old objects' ends reach the
	// handlers as tombstones (DeletedFinalStateUnknown).
	tombstones := 0
	for _, e := range obs.Recorder.Snapshot().Events {
		if e.Kind == probe.Delete && e.Tombstone {
			tombstones++
		}
	}
	Expect(tombstones).To(Equal(S17Objects), "the informer relisted (the %d deletes reach the handler as tombstones), else S17 tests nothing; numbers: %s", S17Objects, n)
	expectOnlyViewsTheServerHad(env, looks.snapshot(), history, n)
}

// startLookingInformer starts S17's informer, converged, with a handler
// that looks at the store at each call (armed once it heard the initial
// list).
func startLookingInformer(ctx context.Context, env *e2e.Env, opts probe.Options) (*e2e.Observed, *storeLooks) {
	looks := &storeLooks{}
	opts.Namespace = env.Namespace
	s17Index.apply(&opts)
	opts.Prepare = chain(opts.Prepare, func(inf cache.SharedIndexInformer) error {
		_, err := inf.AddEventHandler(looks.handler(inf.GetIndexer()))
		return err
	})
	env.Note("S17 consumer", s17Index.describe())
	obs := env.StartProbe(ctx, env.Subjects.Name(), env.User, opts)
	obs.EventuallyConverged(ctx, env.Subjects.Quorum())
	// The looking handler is a listener of its own: wait until it heard
	// the initial list before looking at what the relist shows.
	Eventually(looks.calls).WithTimeout(e2e.HandlerLagTimeout).Should(BeNumerically(">=", S17Objects), "the looking handler heard the initial list")
	looks.arm()
	return obs, looks
}

// expectOnlyViewsTheServerHad: every look of the handler saw a state the
// server had (history); noted with how the store was replaced.
func expectOnlyViewsTheServerHad(env *e2e.Env, all []storeLook, history *stateHistory, n e2e.Numbers) {
	var never []string
	final := 0
	for _, l := range all {
		if !history.had(l.keys) {
			never = append(never, l.String())
		}
		if history.isLast(l.keys) {
			final++
		}
	}
	gate := relistGates()
	behaviour := "the store was replaced at once: every look saw the final state"
	if final < len(all) {
		behaviour = fmt.Sprintf("the store was replaced item by item: %d of %d looks saw an intermediate state, %d one the server never had", len(all)-final, len(all), len(never))
	}
	env.Note("S17 handler view", fmt.Sprintf("%s (%s); %d looks%s", behaviour, gate, len(all), firstOf(never, 3)))
	Expect(never).To(BeEmpty(), ServerHadView+" (%s); numbers: %s", gate, n)
}

// relistGates says how this client-go applies a relist: its gates that
// decide it (AtomicFIFO, InOrderInformersBatchProcess, InOrderInformers).
func relistGates() string {
	var out []string
	for _, g := range []string{"AtomicFIFO", "InOrderInformersBatchProcess", "InOrderInformers"} {
		if on, known := e2e.ClientGoGate(g); known {
			out = append(out, fmt.Sprintf("%s=%t", g, on))
		} else {
			out = append(out, "no "+g+" gate")
		}
	}
	return e2e.ClientGoName() + ": " + strings.Join(out, ", ")
}

// stateHistory is the sequence of key sets the server had.
type stateHistory struct {
	now    map[string]bool
	states map[string]bool
	last   string
}

func newStateHistory() *stateHistory {
	return &stateHistory{now: map[string]bool{}, states: map[string]bool{}}
}

func (h *stateHistory) add(key string)    { h.now[key] = true }
func (h *stateHistory) remove(key string) { delete(h.now, key) }

func (h *stateHistory) record() {
	keys := make([]string, 0, len(h.now))
	for k := range h.now {
		keys = append(keys, k)
	}
	h.last = setKey(keys)
	h.states[h.last] = true
}

func (h *stateHistory) had(keys []string) bool    { return h.states[setKey(keys)] }
func (h *stateHistory) isLast(keys []string) bool { return setKey(keys) == h.last }

func setKey(keys []string) string {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

// storeLooks records what a handler saw of the informer's store.
type storeLooks struct {
	mu     sync.Mutex
	n      int
	armed  bool
	looks  []storeLook
	nArmed int
}

type storeLook struct {
	call string
	keys []string
	at   time.Time
}

// String names the call and what it saw, shortened.
func (l storeLook) String() string {
	keys := slices.Clone(l.keys)
	slices.Sort(keys)
	for i, k := range keys {
		if _, name, ok := strings.Cut(k, "/"); ok {
			keys[i] = name
		}
	}
	return fmt.Sprintf("%s saw %d objects [%s]", l.call, len(keys), strings.Join(keys, " "))
}

func (s *storeLooks) handler(store cache.Store) cache.ResourceEventHandler {
	look := func(kind probe.EventKind, obj any) {
		keys := store.ListKeys()
		key := keyOf(obj)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.n++
		if s.armed {
			s.nArmed++
			s.looks = append(s.looks, storeLook{call: fmt.Sprintf("%s %s", kind, key), keys: keys, at: time.Now()})
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { look(probe.Add, obj) },
		UpdateFunc: func(_, obj any) { look(probe.Update, obj) },
		DeleteFunc: func(obj any) { look(probe.Delete, obj) },
	}
}

func (s *storeLooks) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = true
}

func (s *storeLooks) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *storeLooks) armedCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nArmed
}

func (s *storeLooks) snapshot() []storeLook {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.looks)
}
