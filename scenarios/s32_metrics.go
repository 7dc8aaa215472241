package scenarios

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
)

// S32's assertions: the metrics of the named workqueue (util/workqueue's
// provider) were made and moved with its work; the rest client's metrics
// (tools/metrics' hooks) counted the requests of the informer and of the
// worker as they went over the wire.
const (
	QueueMetricsMove   = "the named workqueue's metrics (workqueue.SetProvider) were made for it and moved with its work"
	ClientMetricsCount = "the rest client's metrics (tools/metrics.Register) counted the informer's and the worker's requests as they went over the wire"
	// InformerMetricsMove holds where the binary has the informers' own
	// recording provider (probe.InformerMetricsBuilt: the tag
	// informermetrics, client-go v0.36+).
	InformerMetricsMove = "the informer's own metrics (cache.SetInformerMetricsProvider: queued items, processing latency) were emitted for its reserved name and its queued-items gauge moved with the work"
)

// S32's numbers: how many objects it creates (then changes once each);
// how soon the workqueue's unfinished-work gauges must report an item the
// worker holds, and report 0 again once it is done: they are set every
// 500 ms (util/workqueue/queue.go defaultUnfinishedWorkUpdatePeriod,
// updateUnfinishedWorkLoop), so two periods and slack for a loaded
// machine.
const (
	S32Objects         = 3
	S32UnfinishedBound = 2 * time.Second
)

// S32SettleBound is how long after the work the rest client's metrics may
// trail the wire: client-go counts an attempt as soon as the transport
// returned it (rest/with_retry.go After), so only scheduling stands
// between them.
const S32SettleBound = time.Second

// S32Breaks is what a negative control breaks in S32's stack.
type S32Breaks struct {
	// UnnamedQueue builds the workqueue without a name: client-go makes no
	// metrics for it (util/workqueue/metrics.go newQueueMetrics: "if
	// len(name) == 0 ... return noMetrics").
	UnnamedQueue bool
	// Adapter, when set, sees every metrics call meant for the spec and
	// drops those it returns false for: a broken metrics adapter.
	Adapter func(probe.MetricCall) bool
}

var s32Queues atomic.Int64

// S32Metrics is S32's value: both sync modes, and its negative controls.
var S32Metrics = Register(Scenario{
	ID: "S32", Title: "informer metrics through client-go's metrics provider hooks", Labels: []string{"metrics"},
	Specs: []Spec{
		{
			Text: "the workqueue's and the rest client's metrics are emitted and move with the informer's work", Sample: true,
			Entries: []Entry{{Run: func(ctx context.Context, s e2e.Setup, in Input) {
				InformerMetrics(ctx, s, in.Probe(), S32Breaks{})
			}}},
		},
		{
			Text:  "fails when the workqueue has no name",
			Run:   RunWith2(InformerMetrics, probe.Options{}, S32Breaks{UnnamedQueue: true}),
			Fails: []string{QueueMetricsMove}, Because: "the S32 queue assertion catches a queue that emits nothing",
		},
		{
			Text: "fails when the metrics adapter drops calls",
			// A closure: the broken controller's state is the spec's own, made
			// when it runs.
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				InformerMetrics(ctx, s, probe.Options{}, S32Breaks{Adapter: DropEveryOtherResult()})
			},
			Fails: []string{ClientMetricsCount}, Because: "the S32 client assertion catches an adapter that drops every other request result",
		},
		{
			Text: "fails when the informer's queued-items gauge never moves",
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				if !probe.InformerMetricsBuilt() {
					e2e.Skip(ctx, "this binary has no recording provider for the informers' own metrics (client-go v0.36+, built with the tag informermetrics: make e2e sets it): the control has nothing to break")
				}
				InformerMetrics(ctx, s, probe.Options{}, S32Breaks{Adapter: FreezeQueuedItemsGauge()})
			},
			Fails: []string{InformerMetricsMove}, Because: "the S32 informer assertion catches a queued-items gauge that keeps its first value",
		},
	},
})

// InformerMetrics is S32: what a controller exports through client-go's
// metrics hooks, on a real cluster. Recording providers are registered
// with every hook once per process (probe.RegisterMetricsHooks: the hooks
// are process-global and take their first registrant) and keep only the
// calls of this spec's client host and queue name (probe.TapMetrics); the
// spec skips when another registrant took a hook first (controller-runtime's
// pkg/metrics does, at init). A pod informer syncs on S32Objects pods
// (its first request answered 429 with Retry-After: 0 once, so that the
// REST client retries it); its handler feeds a named rate-limiting
// workqueue, whose worker starts once the initial Adds are queued and
// reads each object back (a live GET, through a clientset of the
// informer's config: same host, same wire).
// Then every pod is relabelled once: the worker holds the first item it
// gets until the longest-running-processor gauge reports it, and hands
// the second back once (AddRateLimited, a retry).
//
// Asserted, QueueMetricsMove: the provider made all seven metrics for the
// queue's name; depth rose to S32Objects before the worker started and is
// 0 at the end; adds count the handler's Adds and the requeue; queue
// latency and work duration were observed once per item got, the held
// item's work duration at least its hold; retries count the requeue; the
// longest-running-processor and unfinished-work gauges reported the held
// item within S32UnfinishedBound and 0 again within it once the queue
// was drained. ClientMetricsCount: RequestResult counts every attempt of
// the informer's client by status and method exactly as the wire saw them
// (the informer's LIST or streaming WATCH, the 429, its WATCH, the
// consistency detector's LIST, the worker's GETs); RequestRetry counts the
// retried attempt; RequestLatency observes each call of the non-watch
// requests once (a retried call once), on the URL template;
// RateLimiterLatency each such call and each retry (a watch's too);
// RequestSize and ResponseSize are observed; TransportCreateCalls counted
// the transports built for the informer's client; all of it within
// S32SettleBound of the work. Observed (report
// observations): each hook, "emitted" or "not emitted" in this spec, or
// "no such hook" where this client-go lacks it.
//
// Expected of client-go (read in v0.31.14, v0.32.13, v0.33.13, v0.34.13,
// v0.35.10, v0.36.6, v0.37.2, v0.38.0-alpha.2):
//   - util/workqueue (metrics.go, queue.go, delaying_queue.go): the same
//     on every version. A queue reads the provider when it is built
//     (newQueueWithConfig: the global one unless TypedQueueConfig names its
//     own) and makes no metrics without a name; Add counts adds and raises
//     depth unless the item is already queued (dirty); Get lowers depth and
//     observes the latency since the add; Done observes the work duration;
//     updateUnfinishedWorkLoop sets both unfinished-work gauges every
//     500 ms; AddAfter (AddRateLimited) counts a retry. v0.32 made the
//     metrics generic and SetProvider's sync.Once a package variable
//     (setGlobalMetricsProviderOnce): no change in what is emitted.
//   - tools/metrics (metrics.go Register; rest/request.go, with_retry.go,
//     transport/cache.go): Register is a sync.Once on every version.
//     RequestResult is incremented after every attempt (withRetry.After,
//     for Do and Watch alike), RequestRetry after every attempt but the
//     first; RequestLatency once per call (Request.request's defer: Do,
//     DoRaw, not Watch); RateLimiterLatency at the first attempt of a call
//     (request's tryThrottle) and before every retry (withRetry.Before,
//     Watch's too), if the client has a rate limiter; RequestSize per
//     attempt, ResponseSize per Do; TransportCreateCalls whenever a
//     transport is asked of the TLS cache (tlsTransportCache.get: hit,
//     miss, uncacheable; "miss-gc" from v0.36). Added hooks:
//     ExecPluginPolicyCalls (v0.35: the exec plugin's policy; Register
//     drops it on v0.35 and v0.36, assigning ExecPluginCalls instead, fixed
//     in v0.37), TransportCAReloads, TransportCertRotationGCCalls,
//     TransportCacheGCCalls (v0.36, transport/ca_rotation.go, cache.go),
//     RegisterOpts.RegisterFn (v0.37, kubernetes PR #138914: called once by
//     metrics.EnsureRegistered, which rest.RESTClientFor, HTTPClientFor and
//     transport.New call).
//   - tools/cache: SetReflectorMetricsProvider (reflector_metrics.go) stores
//     the provider on every version and nothing reads it (the reflector's
//     metrics were removed in kubernetes PR #74636): no reflector metric,
//     no reflector resourceVersion metric. From v0.36 the informers have
//     their own hook, SetInformerMetricsProvider (fifo_metrics.go, renamed
//     informer_metrics.go in v0.37; kubernetes PRs #135782, #137419): the
//     RealFIFO's queued items and processing latency (the_real_fifo.go) and
//     the store's resourceVersion (thread_safe_store.go), only for an
//     informer given a reserved cache.InformerNameAndResource
//     (informers.WithInformerName, cache.NewInformerName). Its methods take
//     types v0.31 lacks, so its recording provider is built apart, with the
//     tag informermetrics (probe/informermetrics.go; make e2e sets it on
//     the pinned client-go): there S32 names its informer and asserts that
//     the queued items and the processing latency are emitted and the
//     queued-items gauge moves (InformerMetricsMove); the store's
//     resourceVersion metric is never emitted through this hook in v0.36
//     (store.go WithStoreMetrics: only with a per-informer provider, which
//     the factories never set; v0.37 falls back to this hook's, kubernetes
//     PR #139143), reported as an upstream limitation;
//     without the tag the report says the hook is present and not
//     registered.
func InformerMetrics(ctx context.Context, s e2e.Setup, opts probe.Options, breaks S32Breaks) {
	hooks := probe.RegisterMetricsHooks()
	if len(hooks.NotOurs) > 0 {
		e2e.Skip(ctx, fmt.Sprintf("S32 observes client-go's process-global metrics hooks, and another registrant took %s first (sync.Once; controller-runtime's pkg/metrics registers at init): its calls cannot be recorded here", strings.Join(hooks.NotOurs, ", ")))
	}
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	r := startS32(ctx, env, breaks)
	r.startInformer(ctx, opts, hooks.InformerRegistered)

	e2e.By(ctx, "the worker drains the initial objects")
	r.startWorker(ctx)
	Eventually(r.drained(S32Objects)).WithTimeout(e2e.HandlerLagTimeout).Should(Succeed(), "the worker drained the queue")

	e2e.By(ctx, "relabelling every object once: the worker holds the first item and requeues the second")
	g := r.holdOneItem(ctx)

	// Every request has been answered: the rest client's calls settle with
	// the wire's within S32SettleBound.
	expect := s32ExpectedClient(r.wire(), r.throttled(), r.rateLimited)
	var clientProblems []string
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, S32SettleBound, true, func(context.Context) (bool, error) {
		clientProblems = expect.check(r.tap.Calls(), r.buildStart, r.built)
		return len(clientProblems) == 0, nil
	})
	calls := r.tap.Calls()
	queueProblems := append(s32QueueProblems(calls, r.handlerAdds.Load(), r.worker, g.heldFor), g.problems()...)

	informerProblems := r.informerProblems(calls)

	s32Observe(env, hooks, calls, r.buildStart, r.built, r.named)
	env.Note("S32 metrics", fmt.Sprintf("queue %q: %s; rest client (host %s): %s; wire: %s; held item %s; worker GET errors %d; problems: queue %d%s, client %d%s",
		r.queueName, s32QueueSummary(calls), r.host, s32ClientSummary(calls), expect, g.heldFor.Round(time.Millisecond), r.worker.getErrors.Load(),
		len(queueProblems), firstOf(queueProblems, 5), len(clientProblems), firstOf(clientProblems, 5)))
	Expect(queueProblems).To(BeEmpty(), QueueMetricsMove)
	Expect(clientProblems).To(BeEmpty(), ClientMetricsCount)
	Expect(informerProblems).To(BeEmpty(), InformerMetricsMove)
}

// s32ObserveInformerHook records the informers' own metrics hook: absent,
// present and not registered (this binary lacks its provider), registered
// for an informer that could not be named, or registered with what each of
// its metrics did (emitted says).
func s32ObserveInformerHook(env *e2e.Env, hooks probe.MetricsHooks, named bool, emitted func(string) string) {
	informer := s32NoSuchHook
	switch {
	case hooks.InformerProvider != nil && !hooks.InformerRegistered:
		informer = "present, not registered: this binary lacks the tag informermetrics (" + strings.Join(hooks.InformerProvider, ", ") + ")"
	case hooks.InformerProvider != nil && !named:
		informer = "registered; the informer not named (its stack or informer source is not client-go's typed factory)"
	case hooks.InformerProvider != nil:
		informer = "registered"
		for _, h := range probe.InformerHooks {
			v := emitted(h)
			if h == probe.HookInformerStoreRV && v == s32NotEmitted {
				v += " (upstream limitation: tools/cache/store.go NewIndexer applies the store's metrics only with a per-informer provider, which the informer factories never set)"
			}
			env.Observe(report.Value("client-go metrics hook "+h, v))
		}
	}
	env.Observe(report.Value("client-go metrics hook tools/cache.SetInformerMetricsProvider", informer))
}

// informerProblems is what is wrong with the informer's own metrics, where
// it has them (r.named): the queued items and the processing latency
// emitted (a call besides the metric's making), the queued-items gauge set
// to more than one value (the relabels queued and drained). The store's
// resourceVersion metric is no problem when absent: client-go v0.36 never
// emits it through SetInformerMetricsProvider (tools/cache/store.go
// WithStoreMetrics applies the store's metrics only with a per-informer
// provider, SharedIndexInformerOptions.InformerMetricsProvider, which the
// informer factories never set; v0.37 falls back to the hook's, kubernetes
// PR #139143); when it comes, it must move too.
func (r *s32Run) informerProblems(calls []probe.MetricCall) []string {
	if !r.named {
		return nil
	}
	var problems []string
	for _, h := range probe.InformerHooks {
		values := map[float64]bool{}
		for _, c := range probe.Of(calls, h) {
			if c.Op != probe.OpNew {
				values[c.Value] = true
			}
		}
		switch {
		case len(values) == 0 && h != probe.HookInformerStoreRV:
			problems = append(problems, h+": never emitted for informer "+r.informerName)
		case h != probe.HookInformerProcessingLatency && len(values) == 1:
			problems = append(problems, fmt.Sprintf("%s: set to one value only, though the informer worked through %d relabels", h, S32Objects))
		}
	}
	return problems
}

// s32Run is one run of S32: its objects, the informer's client (throttled
// once, its wire recorded), the metrics tap, the queue and its worker.
type s32Run struct {
	env         *e2e.Env
	names       []string
	cfg         *rest.Config
	host        string
	rateLimited bool
	throttled   func() int
	wire        func() []s32Attempt
	queueName   string
	// informerName is the informer's reserved name for its own metrics;
	// named says the informer got it (the informers' provider is in this
	// binary and registered, and the probe's factory built the informer).
	informerName string
	named        bool
	tap          *probe.MetricsTap
	queue        workqueue.TypedRateLimitingInterface[string]
	handlerAdds  atomic.Int64
	worker       *s32Worker
	// buildStart and built bound the informer's construction (the client
	// metrics it causes).
	buildStart, built time.Time
}

// startS32 creates S32's objects and readies the informer's client, the
// metrics tap and the named work queue.
func startS32(ctx context.Context, env *e2e.Env, breaks S32Breaks) *s32Run {
	r := &s32Run{env: env, names: make([]string, S32Objects)}
	for i := range r.names {
		r.names[i] = fmt.Sprintf("s32-%d", i)
		_, err := env.Subjects.Create(ctx, r.names[i])
		Expect(err).NotTo(HaveOccurred())
	}

	// The informer's first request (its LIST, or its streaming list) is
	// answered 429 with Retry-After: 0, once: the REST client retries it.
	in := &httpfault.Injector{Faults: env.Faults}
	firstRequest := func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pods")
	}
	restoreThrottle, throttled := in.FailRequestsRetryAfter(firstRequest, 1, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "S32: throttled once", 0)
	e2e.Defer(ctx, restoreThrottle)
	r.throttled = throttled
	r.cfg, r.wire = s32Wire(in.Instrument(rest.CopyConfig(env.User)))
	r.host = r.cfg.Host
	if u, err := url.Parse(r.cfg.Host); err == nil && u.Host != "" {
		r.host = u.Host
	}
	// The client has a rate limiter unless its config turns it off
	// (rest.RESTClientFor: QPS 0 is the default 5).
	r.rateLimited = r.cfg.RateLimiter != nil || r.cfg.QPS >= 0

	r.queueName = fmt.Sprintf("s32-%s-%d", env.Namespace, s32Queues.Add(1))
	r.informerName = r.queueName + "-informer"
	r.tap = probe.TapMetrics([]string{r.host}, []string{r.queueName, r.informerName}, breaks.Adapter)
	e2e.Defer(ctx, r.tap.Close)
	qcfg := workqueue.TypedRateLimitingQueueConfig[string]{Name: r.queueName}
	if breaks.UnnamedQueue {
		qcfg.Name = ""
	}
	r.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), qcfg)
	e2e.Defer(ctx, r.queue.ShutDown)
	return r
}

// startInformer starts the informer, its handler queueing every object's
// key, and waits until it converged and queued the initial objects.
func (r *s32Run) startInformer(ctx context.Context, opts probe.Options, registered bool) {
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			r.handlerAdds.Add(1)
			r.queue.Add(key)
		}
	}
	opts.Namespace = r.env.Namespace
	if registered && r.env.Stack().Typed() && r.env.InformerSource() == "" {
		opt, release, ok, err := probe.NamedInformers(r.informerName)
		Expect(err).NotTo(HaveOccurred(), "reserve the informer name %s", r.informerName)
		if ok {
			opts.FactoryOptions = append(slices.Clone(opts.FactoryOptions), opt)
			r.named = true
			e2e.Defer(ctx, release)
		}
	}
	opts.Prepare = chain(opts.Prepare, func(inf cache.SharedIndexInformer) error {
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    enqueue,
			UpdateFunc: func(_, obj any) { enqueue(obj) },
			DeleteFunc: enqueue,
		})
		return err
	})
	r.buildStart = time.Now()
	obs := r.env.StartProbe(ctx, r.env.Subjects.Name(), r.cfg, opts)
	r.built = time.Now()
	obs.EventuallyConverged(ctx, r.env.Subjects.Quorum())
	Eventually(r.handlerAdds.Load).WithTimeout(e2e.HandlerLagTimeout).Should(BeEquivalentTo(S32Objects), "the handler queued the initial objects")
}

// startWorker starts the queue's worker, stopped when the spec ends.
func (r *s32Run) startWorker(ctx context.Context) {
	// The worker's clientset is the informer's config's own (its requests
	// are the rest client's on the same host, counted on the same wire),
	// not the probe's: the probe would take its GETs for the informer's.
	workerClient, err := kubernetes.NewForConfig(r.cfg)
	Expect(err).NotTo(HaveOccurred())
	ns := r.env.Namespace
	w := &s32Worker{queue: r.queue, get: func(ctx context.Context, key string) error {
		_, name, err := cache.SplitMetaNamespaceKey(key)
		if err != nil {
			return err
		}
		_, err = workerClient.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	}, held: make(chan time.Time, 1), release: make(chan struct{})}
	r.worker = w
	workerDone := make(chan struct{})
	go func() { defer close(workerDone); w.run(ctx) }()
	e2e.Defer(ctx, func() {
		w.releaseHeld()
		r.queue.ShutDown()
		<-workerDone // Get returns once the queue shuts down
	})
}

// drained checks that the worker processed want items and nothing is
// queued.
func (r *s32Run) drained(want int64) func() error {
	return func() error {
		if got := r.worker.processed.Load(); got != want || r.queue.Len() != 0 {
			return fmt.Errorf("%d of %d items processed, %d queued", got, want, r.queue.Len())
		}
		return nil
	}
}

// s32Gauges is what the queue's gauges did while the worker held an item:
// whether the longest-running-processor gauge reported it, and whether the
// unfinished-work gauges came back to 0 after the drain.
type s32Gauges struct {
	heldFor              time.Duration
	reported, backToZero bool
}

// problems are the gauges' failures, as S32's queue problems.
func (g s32Gauges) problems() []string {
	switch {
	case !g.reported:
		return []string{fmt.Sprintf("the longest-running-processor gauge did not report the held item within %s", S32UnfinishedBound)}
	case !g.backToZero:
		return []string{fmt.Sprintf("the unfinished-work gauges were not 0 within %s of the queue's drain", S32UnfinishedBound)}
	}
	return nil
}

// holdOneItem relabels every object: the worker holds the first item it
// gets until the longest-running-processor gauge reports it (or
// S32UnfinishedBound passes) and requeues the second; then the queue
// drains and the gauges must come back to 0.
func (r *s32Run) holdOneItem(ctx context.Context) s32Gauges {
	r.worker.phaseB.Store(true)
	for _, name := range r.names {
		_, err := r.env.Subjects.SetLabels(ctx, name, map[string]string{"s32": "changed"})
		Expect(err).NotTo(HaveOccurred())
	}
	var heldAt time.Time
	select {
	case heldAt = <-r.worker.held:
	case <-time.After(e2e.EventTimeout):
		e2e.Fail(ctx, fmt.Sprintf("the worker got no item within %s of the writes", e2e.EventTimeout))
	case <-ctx.Done():
		e2e.Fail(ctx, "the spec ended before the worker got an item")
	}
	// The gauge is read at the tap: what a scrape would have sampled.
	longest := func() float64 {
		v := probe.GaugeValues(probe.Of(r.tap.Calls(), probe.HookQueueLongestRunning))
		if len(v) == 0 {
			return 0
		}
		return v[len(v)-1]
	}
	// A queue the provider made no such gauge for has nothing to wait for.
	made := probe.Count(probe.Of(r.tap.Calls(), probe.HookQueueLongestRunning), probe.OpNew) > 0
	var g s32Gauges
	g.reported = made && wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, S32UnfinishedBound, true, func(context.Context) (bool, error) {
		return longest() > 0, nil
	}) == nil
	r.env.RecordBound("the longest-running-processor gauge reported the held item", heldAt, time.Now(), S32UnfinishedBound, g.reported)
	g.heldFor = time.Since(heldAt) // before the release: the queue's work duration covers it
	r.worker.releaseHeld()
	wantProcessed := int64(2*S32Objects + 1) // the requeued item twice
	Eventually(r.drained(wantProcessed)).WithTimeout(e2e.HandlerLagTimeout).Should(Succeed(), "the worker drained the queue after the writes")
	Eventually(r.handlerAdds.Load).WithTimeout(e2e.HandlerLagTimeout).Should(BeEquivalentTo(2*S32Objects), "the handler queued every change")
	doneAt := time.Now()
	g.backToZero = g.reported && wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, S32UnfinishedBound, true, func(context.Context) (bool, error) {
		return r.gaugesZero(), nil
	}) == nil
	r.env.RecordBound("the unfinished-work gauges reported 0 once the queue was drained", doneAt, time.Now(), S32UnfinishedBound, g.backToZero)
	return g
}

// gaugesZero says whether the queue's longest-running and unfinished-work
// gauges last reported 0.
func (r *s32Run) gaugesZero() bool {
	calls := r.tap.Calls()
	for _, h := range []string{probe.HookQueueLongestRunning, probe.HookQueueUnfinishedWork} {
		v := probe.GaugeValues(probe.Of(calls, h))
		if len(v) == 0 || v[len(v)-1] != 0 {
			return false
		}
	}
	return true
}

// s32Worker is S32's controller worker: it reads each item back from the
// server; in the second phase it holds the first item
// it gets until released, and hands the second back once
// (AddRateLimited).
type s32Worker struct {
	queue     workqueue.TypedRateLimitingInterface[string]
	get       func(context.Context, string) error
	phaseB    atomic.Bool
	processed atomic.Int64
	// gets counts the items got in the second phase.
	gets      int
	held      chan time.Time
	release   chan struct{}
	closeOnce sync.Once
	requeued  atomic.Int64
	getErrors atomic.Int64
}

func (w *s32Worker) releaseHeld() { w.closeOnce.Do(func() { close(w.release) }) }

func (w *s32Worker) run(ctx context.Context) {
	for {
		key, shutdown := w.queue.Get()
		if shutdown {
			return
		}
		w.process(ctx, key)
	}
}

func (w *s32Worker) process(ctx context.Context, key string) {
	defer w.queue.Done(key)
	defer w.processed.Add(1)
	if err := w.get(ctx, key); err != nil {
		w.getErrors.Add(1)
	}
	if !w.phaseB.Load() {
		w.queue.Forget(key)
		return
	}
	w.gets++
	switch w.gets {
	case 1:
		w.held <- time.Now()
		select {
		case <-w.release:
		case <-ctx.Done():
		}
	case 2:
		w.requeued.Add(1)
		w.queue.AddRateLimited(key)
		return
	}
	w.queue.Forget(key)
}

// s32QueueProblems checks the queue's metrics calls against the work.
func s32QueueProblems(calls []probe.MetricCall, handlerAdds int64, w *s32Worker, heldFor time.Duration) []string {
	var problems []string
	for _, h := range probe.QueueHooks {
		if probe.Count(probe.Of(calls, h), probe.OpNew) == 0 {
			problems = append(problems, fmt.Sprintf("%s was not called for the queue", h))
		}
	}
	depth := probe.GaugeValues(probe.Of(calls, probe.HookQueueDepth))
	switch {
	case len(depth) == 0:
		problems = append(problems, "depth never moved")
	case slices.Max(depth) < S32Objects:
		problems = append(problems, fmt.Sprintf("depth rose to %g, want %d (the initial Adds before the worker started)", slices.Max(depth), S32Objects))
	case depth[len(depth)-1] != 0:
		problems = append(problems, fmt.Sprintf("depth is %g after the queue drained, want 0", depth[len(depth)-1]))
	}
	got := w.processed.Load()
	if n := int64(probe.Count(probe.Of(calls, probe.HookQueueAdds), probe.OpInc)); n != handlerAdds+w.requeued.Load() {
		problems = append(problems, fmt.Sprintf("adds counted %d, want %d (%d handler Adds, %d requeued)", n, handlerAdds+w.requeued.Load(), handlerAdds, w.requeued.Load()))
	}
	for _, h := range []string{probe.HookQueueLatency, probe.HookQueueWorkDuration} {
		if n := int64(probe.Count(probe.Of(calls, h), probe.OpObserve)); n != got {
			problems = append(problems, fmt.Sprintf("%s observed %d times, want %d (items got)", h, n, got))
		}
	}
	var longestWork float64
	for _, c := range probe.Of(calls, probe.HookQueueWorkDuration) {
		if c.Op == probe.OpObserve {
			longestWork = max(longestWork, c.Value)
		}
	}
	if longestWork < heldFor.Seconds() {
		problems = append(problems, fmt.Sprintf("the longest work duration observed is %.3f s, the worker held an item %.3f s", longestWork, heldFor.Seconds()))
	}
	if n := int64(probe.Count(probe.Of(calls, probe.HookQueueRetries), probe.OpInc)); n != w.requeued.Load() {
		problems = append(problems, fmt.Sprintf("retries counted %d, want %d (AddRateLimited calls)", n, w.requeued.Load()))
	}
	return problems
}

// s32Attempt is one request of the informer's config as it came back to
// the rest client.
type s32Attempt struct {
	Method string
	Status int // 0: no response (a transport error)
	Watch  bool
}

// s32Wire wraps cfg's transport to record every attempt as the rest client
// gets it back (outside the fault injector, which cfg already has), the
// informer's and the worker's alike.
func s32Wire(cfg *rest.Config) (*rest.Config, func() []s32Attempt) {
	var mu sync.Mutex
	var attempts []s32Attempt
	cfg = httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		a := s32Attempt{Method: req.Method, Watch: req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1"}
		if err == nil {
			a.Status = resp.StatusCode
		}
		mu.Lock()
		attempts = append(attempts, a)
		mu.Unlock()
		return resp, err
	})
	return cfg, func() []s32Attempt {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(attempts)
	}
}

// s32Client is what the rest client's metrics must say of the requests
// the wire saw.
type s32Client struct {
	results     map[string]int // "code method" -> attempts
	retries     int            // attempts the REST client retried (the 429s)
	calls       int            // non-watch calls (attempts less the retried)
	rateLimiter int            // calls and retries, if rate limited
	rateLimited bool
}

// s32ExpectedClient derives from the wire (every attempt of the
// informer's client, the consistency detector's LISTs and the worker's
// GETs too) what the rest client's metrics must count, as client-go's source says
// (InformerMetrics' doc).
func s32ExpectedClient(wire []s32Attempt, retried int, rateLimited bool) s32Client {
	e := s32Client{results: map[string]int{}, retries: retried, rateLimited: rateLimited}
	for _, r := range wire {
		code := "<error>"
		if r.Status != 0 {
			code = fmt.Sprint(r.Status)
		}
		e.results[code+" "+r.Method]++
		// A retried attempt (a 429 with Retry-After) is not a call of its
		// own.
		if !r.Watch && r.Status != http.StatusTooManyRequests {
			e.calls++
		}
	}
	if rateLimited {
		e.rateLimiter = e.calls + retried
	}
	return e
}

func (e s32Client) String() string {
	return fmt.Sprintf("results %v, %d retried, %d non-watch calls, rate limited %t", e.results, e.retries, e.calls, e.rateLimited)
}

// check compares the tap's calls with the expectation; the transports
// built between buildStart and built are the informer's.
func (e s32Client) check(calls []probe.MetricCall, buildStart, built time.Time) []string {
	var problems []string
	results := map[string]int{}
	for _, c := range probe.Of(calls, probe.HookRequestResult) {
		results[c.Code+" "+c.Method]++
	}
	if !maps.Equal(results, e.results) {
		problems = append(problems, fmt.Sprintf("RequestResult counted %v, the wire saw %v", results, e.results))
	}
	if n := len(probe.Of(calls, probe.HookRequestRetry)); n != e.retries {
		problems = append(problems, fmt.Sprintf("RequestRetry counted %d, the REST client retried %d", n, e.retries))
	}
	latency := probe.Of(calls, probe.HookRequestLatency)
	if len(latency) != e.calls {
		problems = append(problems, fmt.Sprintf("RequestLatency observed %d calls, want %d (non-watch calls)", len(latency), e.calls))
	}
	for _, c := range latency {
		if !strings.Contains(c.URL, "{namespace}") {
			problems = append(problems, fmt.Sprintf("RequestLatency observed %s %s: not the URL template", c.Method, c.URL))
			break
		}
	}
	if n := len(probe.Of(calls, probe.HookRateLimiterLatency)); n != e.rateLimiter {
		problems = append(problems, fmt.Sprintf("RateLimiterLatency observed %d, want %d (non-watch calls and retries, rate limited %t)", n, e.rateLimiter, e.rateLimited))
	}
	for _, h := range []string{probe.HookRequestSize, probe.HookResponseSize} {
		if e.calls > 0 && len(probe.Of(calls, h)) == 0 {
			problems = append(problems, h+" observed nothing")
		}
	}
	transports := 0
	for _, c := range probe.Of(calls, probe.HookTransportCreateCalls) {
		if !c.Time.Before(buildStart) && !c.Time.After(built) {
			transports++
		}
	}
	if transports == 0 {
		problems = append(problems, "TransportCreateCalls counted no transport while the informer's client was built")
	}
	return problems
}

func s32QueueSummary(calls []probe.MetricCall) string {
	depth := probe.GaugeValues(probe.Of(calls, probe.HookQueueDepth))
	peak := 0.0
	if len(depth) > 0 {
		peak = slices.Max(depth)
	}
	return fmt.Sprintf("%d metrics made, adds %d, depth peak %g, latency %d, work duration %d, retries %d",
		probe.Count(calls, probe.OpNew), probe.Count(probe.Of(calls, probe.HookQueueAdds), probe.OpInc), peak,
		probe.Count(probe.Of(calls, probe.HookQueueLatency), probe.OpObserve), probe.Count(probe.Of(calls, probe.HookQueueWorkDuration), probe.OpObserve),
		probe.Count(probe.Of(calls, probe.HookQueueRetries), probe.OpInc))
}

func s32ClientSummary(calls []probe.MetricCall) string {
	results := map[string]int{}
	for _, c := range probe.Of(calls, probe.HookRequestResult) {
		results[c.Code+" "+c.Method]++
	}
	return fmt.Sprintf("RequestResult %v, RequestRetry %d, RequestLatency %d, RateLimiterLatency %d, RequestSize %d, ResponseSize %d, TransportCreateCalls %d",
		results, len(probe.Of(calls, probe.HookRequestRetry)), len(probe.Of(calls, probe.HookRequestLatency)),
		len(probe.Of(calls, probe.HookRateLimiterLatency)), len(probe.Of(calls, probe.HookRequestSize)),
		len(probe.Of(calls, probe.HookResponseSize)), len(probe.Of(calls, probe.HookTransportCreateCalls)))
}

// The values of S32's per-hook observations.
const (
	s32Emitted    = "emitted"
	s32NotEmitted = "not emitted"
	// s32Present: the hook exists, its emission observed apart.
	s32Present    = "present"
	s32NoSuchHook = "no such hook"
)

// s32Observe records, per hook, whether this spec's work emitted it, or
// that this client-go lacks it: the verdicts list what a release adds.
func s32Observe(env *e2e.Env, hooks probe.MetricsHooks, calls []probe.MetricCall, buildStart, built time.Time, named bool) {
	emitted := func(hook string) string {
		for _, c := range probe.Of(calls, hook) {
			if c.Op != probe.OpNew {
				return s32Emitted
			}
		}
		return s32NotEmitted
	}
	for _, h := range probe.ClientHooks {
		v := emitted("tools/metrics." + h)
		switch {
		case slices.Contains(hooks.Absent, h):
			v = s32NoSuchHook
		case strings.HasSuffix(h, "GCCalls"):
			// The TLS cache's clean-ups run on their own timer
			// (transport/cache.go): whether one fell in this spec varies
			// between runs of the same code (measured: emitted in some of
			// five, not in the others). The hook's presence is what a
			// release changes; its emission is compared between series.
			env.Observe(report.Value("client-go metrics hook tools/metrics."+h+": emitted in this spec", v).Varying())
			v = s32Present
		}
		env.Observe(report.Value("client-go metrics hook tools/metrics."+h, v))
	}
	fn := s32NoSuchHook
	if hooks.RegisterFn {
		fn = fmt.Sprintf("called %d time(s)", probe.RegisterFnCalls())
	}
	env.Observe(report.Value("client-go metrics hook tools/metrics.RegisterOpts.RegisterFn", fn))
	for _, h := range probe.QueueHooks {
		env.Observe(report.Value("client-go metrics hook "+h, emitted(h)))
	}
	reflector := s32NotEmitted
	if probe.ReflectorMetricsCalls() > 0 {
		reflector = s32Emitted
	}
	env.Observe(report.Value("client-go metrics hook tools/cache.SetReflectorMetricsProvider", reflector))
	s32ObserveInformerHook(env, hooks, named, emitted)
	for _, h := range []string{probe.HookRequestResult, probe.HookRequestLatency, probe.HookRateLimiterLatency} {
		env.Observe(report.Calls("calls of "+h, len(probe.Of(calls, h))))
	}
	var results []string
	for _, c := range probe.Of(calls, probe.HookTransportCreateCalls) {
		if c.Time.Before(buildStart) || c.Time.After(built) {
			continue
		}
		if !slices.Contains(results, c.Name) {
			results = append(results, c.Name)
		}
	}
	slices.Sort(results)
	env.Observe(report.Value("tools/metrics.TransportCreateCalls results while the informer's client was built", strings.Join(results, ", ")))
}

// DropEveryOtherResult is a negative control's broken metrics adapter: it
// passes on every other call of the rest client's request-result hook (a
// sampling adapter) and drops the rest.
// FreezeQueuedItemsGauge is a negative control's broken metrics adapter:
// it passes the informers' queued-items gauge's first value and drops
// every later one (a gauge that never moves).
func FreezeQueuedItemsGauge() func(probe.MetricCall) bool {
	var sets atomic.Int64
	return func(c probe.MetricCall) bool {
		if c.Hook != probe.HookInformerQueuedItems || c.Op != probe.OpSet {
			return true
		}
		return sets.Add(1) == 1
	}
}

func DropEveryOtherResult() func(probe.MetricCall) bool {
	var n atomic.Int64
	return func(c probe.MetricCall) bool {
		if c.Hook != probe.HookRequestResult {
			return true
		}
		return n.Add(1)%2 == 1
	}
}
