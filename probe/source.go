package probe

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Source is where a probe's informers come from when they are not built by
// one of client-go's factories (Stacks): a downstream's own factory
// wrapper, a controller-runtime cache. The probe records what the informers
// it returns do through the instrumented config its Builder gets, and judges
// them like any other.
type Source interface {
	// InformerFor is the source's shared informer for gvr, the same one
	// each time, started by the next Start if it was not running.
	InformerFor(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, error)
	// Start starts the informers without blocking; closing stop stops
	// them.
	Start(stop <-chan struct{})
	// Shutdown returns once every goroutine the informers started has
	// ended (after stop was closed), like SharedInformerFactory.Shutdown.
	Shutdown()
}

// HandlerSource is a Source that hands events to a controller's handlers
// through a layer of its own (controller-runtime's event handler, which
// unwraps tombstones into DeleteEvent.DeleteStateUnknown). The probe adds
// its recording handler through AddHandler, so that what it records, and
// the specs judge, is what such a controller's handlers are told.
type HandlerSource interface {
	Source
	// AddHandler delivers inf's events to h; a delete whose final state
	// the layer reports unknown arrives as a cache.DeletedFinalStateUnknown.
	AddHandler(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error
}

// SourceInput is what a Builder builds a Source from.
type SourceInput struct {
	// Config is instrumented: every request and dial of a client built
	// from it is recorded. A Source must build its clients from it (a
	// copy, with its own settings added, is fine).
	Config *rest.Config
	// Namespace limits the informers ("" for all namespaces).
	Namespace string
	// Resync is the spec's resync period (0: none).
	Resync time.Duration
}

// Builder builds a Source for one probe.
type Builder func(SourceInput) (Source, error)

// ErrNotSupported is wrapped by a Builder's error for a spec it cannot
// serve (a list option it has no way to set): the spec is skipped with the
// error's text instead of failing.
var ErrNotSupported = errors.New("not supported by this informer source")

// The client-go factories (stackFactory) are a Source too.
var _ Source = (*stackFactory)(nil)

// InformerFor implements Source.
func (f *stackFactory) InformerFor(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, error) {
	return f.informerFor(gvr)
}

// Start implements Source.
func (f *stackFactory) Start(stop <-chan struct{}) { f.factory().Start(stop) }

// Shutdown implements Source.
func (f *stackFactory) Shutdown() { f.factory().Shutdown() }
