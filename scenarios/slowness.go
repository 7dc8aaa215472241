package scenarios

import (
	"fmt"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/probe"
)

// Slowness is how a scenario slows an informer's consumer down, the way a
// controller's own code does: an index function or a handler that takes
// time on every call.
type Slowness struct {
	// Name says it in spec texts and reports.
	Name string
	// IndexDelay is what the informer's extra index function takes per
	// call. client-go calls index functions from the informer's single
	// processing goroutine, inside the indexer's write (thread_safe_store.go
	// updateIndices), so this slows the popping of the informer's queue:
	// events wait in the queue, where an older queue (DeltaFIFO) merges
	// them per object.
	IndexDelay time.Duration
	// HandlerDelay is what the spec's recording handler takes per call.
	// Handlers run on a goroutine of their own, behind an unbounded buffer
	// (shared_informer.go processorListener), so this slows only what the
	// handler hears, not the queue.
	HandlerDelay time.Duration
}

// The slow-downs the scenarios run with.
var (
	NotSlowed = Slowness{Name: "consumer not slowed"}
	// SlowIndex: 100 ms per index call, several times what a write costs
	// the spec's writer (10-30 ms measured on 2 cores), so a burst
	// leaves a backlog in the informer's queue.
	SlowIndex   = Slowness{Name: "slow index function", IndexDelay: 100 * time.Millisecond}
	SlowHandler = Slowness{Name: "slow handler", HandlerDelay: 20 * time.Millisecond}
)

// SlowIndexName is the name of the index a slow index function adds.
const SlowIndexName = "conformance-slow"

// apply adds the slow-down to the probe options.
func (s Slowness) apply(opts *probe.Options) {
	if s.IndexDelay > 0 {
		opts.Prepare = chain(opts.Prepare, func(inf cache.SharedIndexInformer) error {
			d := s.IndexDelay
			return inf.AddIndexers(cache.Indexers{SlowIndexName: func(obj any) ([]string, error) {
				time.Sleep(d)
				return []string{"all"}, nil
			}})
		})
	}
	if s.HandlerDelay > 0 {
		wrap := opts.WrapHandler
		d := s.HandlerDelay
		opts.WrapHandler = func(h cache.ResourceEventHandler) cache.ResourceEventHandler {
			if wrap != nil {
				h = wrap(h)
			}
			return slowHandler{h: h, d: d}
		}
	}
}

// String is the slow-down's name.
func (s Slowness) String() string { return s.Name }

func (s Slowness) describe() string {
	switch {
	case s.IndexDelay > 0:
		return fmt.Sprintf("%s (%s per call)", s.Name, s.IndexDelay)
	case s.HandlerDelay > 0:
		return fmt.Sprintf("%s (%s per call)", s.Name, s.HandlerDelay)
	}
	return s.Name
}

// chain runs a, then b.
func chain(a, b func(cache.SharedIndexInformer) error) func(cache.SharedIndexInformer) error {
	if a == nil {
		return b
	}
	return func(inf cache.SharedIndexInformer) error {
		if err := a(inf); err != nil {
			return err
		}
		return b(inf)
	}
}

type slowHandler struct {
	h cache.ResourceEventHandler
	d time.Duration
}

func (s slowHandler) OnAdd(obj any, initial bool) { time.Sleep(s.d); s.h.OnAdd(obj, initial) }
func (s slowHandler) OnUpdate(old, obj any)       { time.Sleep(s.d); s.h.OnUpdate(old, obj) }
func (s slowHandler) OnDelete(obj any)            { time.Sleep(s.d); s.h.OnDelete(obj) }
