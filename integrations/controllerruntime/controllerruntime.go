// Package controllerruntime builds the informers under test from a
// controller-runtime cache (sigs.k8s.io/controller-runtime/pkg/cache), the
// way an operator's manager does, and hands their events to the probe
// through controller-runtime's own event handler: the specs judge what a
// reconciler's event handlers are told, DeleteEvent.DeleteStateUnknown
// included. Plug it into the suite with
//
//	e2e.SetHooks(e2e.Hooks{Informers: controllerruntime.Informers(), InformersName: controllerruntime.Name})
//
// A module of its own: controller-runtime v0.25 needs client-go v0.37,
// newer than the main module's client-go floor (v0.31, the matrix's).
package controllerruntime

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/informer-conformance/informer-conformance/probe"
)

// Name names this source in reports.
const Name = "controller-runtime"

// Option configures Informers.
type Option func(*options)

type options struct {
	scheme *runtime.Scheme
	tune   func(*crcache.Options)
}

// WithScheme sets the scheme the cache decodes with (default client-go's,
// with the built-in types).
func WithScheme(s *runtime.Scheme) Option { return func(o *options) { o.scheme = s } }

// WithCacheOptions lets the caller change the cache's options after this
// package set its own (scheme, mapper, HTTP client, namespace, sync
// period): a transform, a label selector, what the operator sets.
func WithCacheOptions(f func(*crcache.Options)) Option { return func(o *options) { o.tune = f } }

// Informers is a probe.Builder: each probe gets a cache.Cache of its own,
// built as controller-runtime's manager builds its cluster's (one HTTP
// client for the cache and its dynamic REST mapper), limited to the spec's
// namespace, with the spec's resync as its SyncPeriod.
func Informers(opts ...Option) probe.Builder {
	o := options{scheme: clientgoscheme.Scheme}
	for _, f := range opts {
		f(&o)
	}
	return func(in probe.SourceInput) (probe.Source, error) {
		httpClient, err := rest.HTTPClientFor(in.Config)
		if err != nil {
			return nil, fmt.Errorf("controller-runtime http client: %w", err)
		}
		mapper, err := apiutil.NewDynamicRESTMapper(in.Config, httpClient)
		if err != nil {
			return nil, fmt.Errorf("controller-runtime rest mapper: %w", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		src := &cacheSource{scheme: o.scheme, mapper: mapper, http: httpClient, ctx: ctx, cancel: cancel,
			queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()),
			created: map[schema.GroupVersionKind][]toolscache.SharedIndexInformer{}, wrapped: map[toolscache.SharedIndexInformer]crcache.Informer{}}
		co := crcache.Options{HTTPClient: httpClient, Scheme: o.scheme, Mapper: mapper, NewInformer: src.newInformer}
		if in.Namespace != "" {
			co.DefaultNamespaces = map[string]crcache.Config{in.Namespace: {}}
		}
		if in.Resync > 0 {
			co.SyncPeriod = &in.Resync
		}
		if o.tune != nil {
			o.tune(&co)
		}
		src.cache, err = crcache.New(in.Config, co)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("controller-runtime cache: %w", err)
		}
		return src, nil
	}
}

// cacheSource is a probe.HandlerSource over one controller-runtime cache.
type cacheSource struct {
	cache  crcache.Cache
	scheme *runtime.Scheme
	mapper meta.RESTMapper
	http   *http.Client
	// ctx ends when the probe's stop channel closes; the cache and the
	// event handlers run under it.
	ctx    context.Context
	cancel context.CancelFunc
	// queue is the work queue controller-runtime's event handler is given;
	// the probe's handlers do not enqueue, so it stays empty.
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]

	mu sync.Mutex
	// created are the client-go informers the cache built, by kind
	// (newInformer); wrapped maps each to the controller-runtime Informer
	// the cache hands out for it.
	created map[schema.GroupVersionKind][]toolscache.SharedIndexInformer
	wrapped map[toolscache.SharedIndexInformer]crcache.Informer

	startOnce sync.Once
	done      chan struct{} // closed when cache.Start returned
	startErr  error
}

var _ probe.HandlerSource = (*cacheSource)(nil)

// newInformer is the cache's informer constructor
// (cache.Options.NewInformer): controller-runtime's default,
// toolscache.NewSharedIndexInformer (pkg/cache/internal/informers.go,
// NewInformers), remembering what it built. A cache limited to namespaces
// hands out a wrapper over one such informer per namespace
// (multi_namespace_cache.go, multiNamespaceInformer), which has no store or
// resourceVersion of its own: the probe reads those from the informer
// built here.
func (s *cacheSource) newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	inf := toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	if gvk, err := apiutil.GVKForObject(obj, s.scheme); err == nil {
		s.mu.Lock()
		s.created[gvk] = append(s.created[gvk], inf)
		s.mu.Unlock()
	}
	return inf
}

// InformerFor implements probe.Source: the client-go informer under the
// cache's informer for the kind the cache's REST mapper finds for gvr.
func (s *cacheSource) InformerFor(gvr schema.GroupVersionResource) (toolscache.SharedIndexInformer, error) {
	gvk, err := s.mapper.KindFor(gvr)
	if err != nil && !meta.IsNoMatchError(err) {
		// The dynamic REST mapper reads discovery first: with the
		// apiserver unreachable (S9) there is no informer to build yet. A
		// controller's source.Kind retries GetInformer every 10 s until it
		// works (pkg/internal/source/kind.go, Kind.Start); the probe builds
		// its informer at once and does not model that wait.
		return nil, fmt.Errorf("controller-runtime: kind of %s: its REST mapper needs discovery, which failed (a controller's source.Kind would retry every 10 s): %w: %w", gvr, err, probe.ErrNotSupported)
	}
	if err != nil {
		return nil, fmt.Errorf("controller-runtime: kind of %s: %w", gvr, err)
	}
	// Not blocking until synced: the probe waits for the sync itself,
	// bounded, and an informer asked for after Start starts at once.
	i, err := s.cache.GetInformerForKind(s.ctx, gvk, crcache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("controller-runtime: informer for %s: %w", gvk, err)
	}
	if inf, ok := i.(toolscache.SharedIndexInformer); ok {
		s.mu.Lock()
		s.wrapped[inf] = i
		s.mu.Unlock()
		return inf, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.created[gvk]); n != 1 {
		return nil, fmt.Errorf("controller-runtime: the cache's informer for %s (%T) wraps %d informers, the probe reads one: %w", gvk, i, n, probe.ErrNotSupported)
	}
	inf := s.created[gvk][0]
	s.wrapped[inf] = i
	return inf, nil
}

// Start implements probe.Source: cache.Start blocks until its context
// ends, so it runs on a goroutine of its own; the cache starts informers
// asked for later by itself, so a second Start has nothing to do.
func (s *cacheSource) Start(stop <-chan struct{}) {
	s.startOnce.Do(func() {
		s.done = make(chan struct{})
		go func() {
			select {
			case <-stop:
				s.cancel()
			case <-s.ctx.Done():
			}
		}()
		go func() {
			defer close(s.done)
			s.startErr = s.cache.Start(s.ctx)
		}()
	})
}

// Shutdown implements probe.Source: cache.Start returns once every
// informer it ran has stopped (pkg/cache/internal/informers.go,
// Informers.Start waits on its wait group).
func (s *cacheSource) Shutdown() {
	s.cancel()
	if s.done != nil {
		<-s.done
	}
	s.queue.ShutDown()
	s.http.CloseIdleConnections()
}

// AddHandler implements probe.HandlerSource: h hears inf's events through
// the cache's Informer for it and controller-runtime's event handler
// (source.Informer; source.Kind, what a controller's Watches builds, wraps
// the same internal EventHandler), which turns a tombstone into a DeleteEvent
// with DeleteStateUnknown set (pkg/internal/source/event_handler.go,
// EventHandler.OnDelete); h gets such a delete back as a
// cache.DeletedFinalStateUnknown, so the probe counts it as a tombstone.
func (s *cacheSource) AddHandler(inf toolscache.SharedIndexInformer, h toolscache.ResourceEventHandler) error {
	s.mu.Lock()
	i, ok := s.wrapped[inf]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("controller-runtime: an informer the cache did not hand out (%T)", inf)
	}
	src := &source.Informer{Informer: i, Handler: handlerFuncs(h)}
	return src.Start(s.ctx, s.queue)
}

func handlerFuncs(h toolscache.ResourceEventHandler) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.OnAdd(e.Object, e.IsInInitialList)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.OnUpdate(e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if !e.DeleteStateUnknown {
				h.OnDelete(e.Object)
				return
			}
			key, _ := toolscache.MetaNamespaceKeyFunc(e.Object)
			h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: key, Obj: e.Object})
		},
	}
}
