package probe

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Options configure a probe.
type Options struct {
	// Namespace limits the informer (default: all namespaces).
	Namespace string
	// Resync is the factory's resync period (default 0: none).
	Resync time.Duration
	// Informer picks the informer from the factory (default: pods). For
	// the typed stacks only; Resource names it on any stack.
	Informer func(informers.SharedInformerFactory) cache.SharedIndexInformer
	// Stack is how the informer is built (default StackTyped); with
	// Source set it only names the source in reports.
	Stack Stack
	// Source, when set, builds the informers instead of client-go's
	// factories: a downstream's own construction (e2e.Hooks.Informers).
	// Informer and FactoryOptions do not apply to it.
	Source Builder
	// Resource is the informer's resource when Informer is unset (default
	// the stack's, Stack.Resource: pods, or the custom resource on the CRD
	// stacks).
	Resource schema.GroupVersionResource
	// FactoryOptions are passed to the factory. For the typed stacks only:
	// TweakListOptions tweaks the lists and watches on any stack.
	FactoryOptions []informers.SharedInformerOption
	// TweakListOptions changes the options of every list and watch of the
	// informers (informers.WithTweakListOptions on the typed stacks, the
	// filtered factories' tweak on the others). It runs after the
	// reflector set its own options, so it may override them (e.g. the
	// watch's timeoutSeconds).
	TweakListOptions func(*metav1.ListOptions)
	// WrapHandler, when set, wraps the recording handler; negative controls
	// use it to drop events the way a broken controller would.
	WrapHandler func(cache.ResourceEventHandler) cache.ResourceEventHandler
	// NoHandlerCheck leaves the handler calls out of e2e's convergence
	// checks. Only for the negative controls of other assertion families,
	// whose broken handler the handler check would otherwise catch first.
	NoHandlerCheck bool
	// Prepare, when set, is given the informer before it starts, after
	// the recording handler was added: a scenario adds indexers (a slow
	// index function) or a handler of its own there.
	Prepare func(cache.SharedIndexInformer) error
}

// Probe is an informer under observation: built on a SharedInformerFactory
// the way controllers build it, with an instrumented client.
type Probe struct {
	Recorder *Recorder
	// Client is the informer's clientset: requests a spec makes with it are
	// recorded like the informer's own and, on the typed stacks, share the
	// informers' connections (the dynamic and metadata stacks' informers
	// have clients of their own).
	Client kubernetes.Interface
	// Dynamic is the dynamic stacks' informer client (nil on the others):
	// requests a spec makes with it share the informers' connection.
	Dynamic dynamic.Interface
	// Factory is the typed stacks' informer factory (nil on the others:
	// InformerFor works on every stack).
	Factory  informers.SharedInformerFactory
	Informer cache.SharedIndexInformer
	// Stack is the stack the informers are built with.
	Stack Stack
	// Namespace is the namespace the informers watch (Options.Namespace;
	// "" for all).
	Namespace string
	factory   Source
	// HandlerChecked: convergence checks include the handler calls
	// (Options.NoHandlerCheck unset).
	HandlerChecked bool
	// RecordsWatchErrors: the informer's watch error handler records into
	// Recorder (the informers the probe builds; a Source's keep their own).
	RecordsWatchErrors bool
	stop               chan struct{}
	stopOnce           sync.Once
	shutdownDone       chan struct{} // closed when Factory.Shutdown returned

	mu sync.Mutex
	// starters are the goroutines that started the factory's informers,
	// shutdownGoroutine the one waiting in Factory.Shutdown: a StuckError
	// dumps them and the goroutines they started.
	starters          []int64
	shutdownGoroutine int64
}

// Pods picks the pod informer.
func Pods(f informers.SharedInformerFactory) cache.SharedIndexInformer {
	return f.Core().V1().Pods().Informer()
}

// New builds (does not start) a probe on cfg.
func New(cfg *rest.Config, opts Options) (*Probe, error) {
	rec := &Recorder{}
	cfg = Instrument(cfg, rec)
	cs, err := kubernetes.NewForConfig(typedConfig(opts.Stack, cfg))
	if err != nil {
		return nil, fmt.Errorf("probe client: %w", err)
	}
	var (
		src   Source
		typed informers.SharedInformerFactory
		dyn   dynamic.Interface
		stack = opts.Stack
	)
	switch {
	case opts.Source != nil:
		if opts.Informer != nil || len(opts.FactoryOptions) > 0 || opts.TweakListOptions != nil {
			return nil, fmt.Errorf("probe: informer source %s: this spec sets Options.Informer, FactoryOptions or TweakListOptions, which configure client-go's factories: %w", opts.Stack, ErrNotSupported)
		}
		if opts.Prepare != nil {
			// A source may hand out informers it started or configured
			// (controller-runtime's cache sets its own transform).
			return nil, fmt.Errorf("probe: informer source %s: this spec prepares client-go's informer itself before it starts (an index function, a transform, a handler): %w", opts.Stack, ErrNotSupported)
		}
		src, err = opts.Source(SourceInput{Config: cfg, Namespace: opts.Namespace, Resync: opts.Resync})
		if err != nil {
			return nil, fmt.Errorf("probe: informer source %s: %w", opts.Stack, err)
		}
	default:
		if opts.Informer != nil && !opts.Stack.Typed() {
			return nil, fmt.Errorf("probe: Options.Informer picks from a typed factory; on stack %s name the Resource", opts.Stack)
		}
		f, err := newStackFactory(opts.Stack, cfg, cs, opts.Namespace, opts.Resync, slices.Clone(opts.FactoryOptions), opts.TweakListOptions)
		if err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		src, typed, dyn, stack = f, f.typed, f.dynamicClient, f.stack
	}
	var inf cache.SharedIndexInformer
	switch {
	case opts.Informer != nil:
		inf = opts.Informer(typed)
	case opts.Resource.Resource != "":
		inf, err = src.InformerFor(opts.Resource)
	default:
		inf, err = src.InformerFor(stack.Resource())
	}
	if err != nil {
		return nil, fmt.Errorf("probe informer: %w", err)
	}
	h := RecordingHandler(rec)
	if opts.WrapHandler != nil {
		h = opts.WrapHandler(h)
	}
	if hs, ok := src.(HandlerSource); ok {
		err = hs.AddHandler(inf, h)
	} else {
		_, err = inf.AddEventHandler(h)
	}
	if err != nil {
		return nil, fmt.Errorf("probe handler: %w", err)
	}
	if opts.Source == nil {
		// The informers the probe built: their watch errors are recorded
		// (a downstream's own keep their handler).
		if err := inf.SetWatchErrorHandler(recordWatchErrors(rec)); err != nil {
			return nil, fmt.Errorf("probe: watch error handler: %w", err)
		}
	}
	if opts.Prepare != nil {
		if err := opts.Prepare(inf); err != nil {
			return nil, fmt.Errorf("probe: prepare the informer: %w", err)
		}
	}
	return &Probe{Recorder: rec, Client: cs, Dynamic: dyn, Factory: typed, Informer: inf, Stack: stack, Namespace: opts.Namespace, factory: src,
		HandlerChecked: !opts.NoHandlerCheck, RecordsWatchErrors: opts.Source == nil, stop: make(chan struct{})}, nil
}

// InformerFor is the probe stack's shared informer for another resource
// (started by the next Start), its requests recorded with the probe's.
func (p *Probe) InformerFor(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, error) {
	return p.factory.InformerFor(gvr)
}

// Start runs the factory's informers (those added since the last Start
// too). It starts them from a goroutine of its own, so that the goroutines
// of this probe's informers are told apart from any other's in a
// StuckError's dump.
func (p *Probe) Start() {
	p.Recorder.markStarted(time.Now())
	register(p)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.mu.Lock()
		p.starters = append(p.starters, goroutineID())
		p.mu.Unlock()
		p.factory.Start(p.stop)
	}()
	<-done
}

// WaitForSync waits for the first sync until ctx ends and records its time.
// It returns an *InconsistencyError as soon as client-go's consistency
// detector reports the informer (its reflector then never syncs: the
// detector runs before the store is replaced).
func (p *Probe) WaitForSync(ctx context.Context) error {
	synced := cache.WaitForCacheSync(ctx.Done(), func() bool { return p.Informer.HasSynced() || p.Recorder.inconsistent() })
	if err := p.Inconsistent(); err != nil {
		return err
	}
	if !synced {
		return fmt.Errorf("informer did not sync: %w", context.Cause(ctx))
	}
	now := time.Now()
	p.Recorder.MarkSynced(now)
	p.Recorder.addReportedRV(ReportedRV{Time: now, When: RVSynced, Which: "informer", RV: p.Informer.LastSyncResourceVersion()})
	return nil
}

// Stop stops the informers and waits for their goroutines
// (Factory.Shutdown), without a bound: specs use StopWithin. It may be
// called more than once.
func (p *Probe) Stop() { <-p.shutdown() }

// RecordingHandler records every call into rec with what identifies the
// object; New adds one to its informer, a spec may add one to an informer
// of its own (then HandlersConverged checks that informer's handler calls).
func RecordingHandler(rec *Recorder) cache.ResourceEventHandler { return recordingHandler{rec: rec} }

type recordingHandler struct{ rec *Recorder }

func (h recordingHandler) OnAdd(obj any, inInitialList bool) {
	e := eventFor(Add, obj)
	e.InInitialList = inInitialList
	h.rec.addEvent(e)
}

func (h recordingHandler) OnUpdate(oldObj, newObj any) {
	e := eventFor(Update, newObj)
	if m, err := meta.Accessor(oldObj); err == nil {
		e.OldUID, e.OldResourceVersion = string(m.GetUID()), m.GetResourceVersion()
	}
	h.rec.addEvent(e)
}

func (h recordingHandler) OnDelete(obj any) {
	tomb := false
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		tomb, obj = true, t.Obj
	}
	e := eventFor(Delete, obj)
	e.Tombstone = tomb
	h.rec.addEvent(e)
}

func eventFor(kind EventKind, obj any) Event {
	e := Event{Time: time.Now(), Kind: kind}
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		e.Key = key
	}
	if m, err := meta.Accessor(obj); err == nil {
		e.UID, e.ResourceVersion = string(m.GetUID()), m.GetResourceVersion()
	}
	return e
}
