package probe

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"

	"github.com/informer-conformance/informer-conformance/report"
)

// client-go's metrics hooks are process-global, and most take only their
// first registrant: tools/metrics.Register and workqueue.SetProvider run
// under a sync.Once, cache.SetReflectorMetricsProvider too, and a
// workqueue reads its provider once, when it is built. So the recorders
// here are registered once per process (RegisterMetricsHooks) and only
// record: each metric they hand out forwards nothing and keeps a call only
// for the spec that asked for it (TapMetrics: the rest client's calls for
// its hosts, the metrics of its named workqueues), so the specs of other
// scenarios in the same process neither see nor disturb them.

// The hooks a MetricCall names (MetricCall.Hook). The tools/metrics hooks
// are "tools/metrics." and the RegisterOpts field (ClientHooks), the
// workqueue's "util/workqueue." and the provider method (QueueHooks), the
// reflector's "tools/cache." and the MetricsProvider method.
const (
	HookRequestResult         = "tools/metrics.RequestResult"
	HookRequestRetry          = "tools/metrics.RequestRetry"
	HookRequestLatency        = "tools/metrics.RequestLatency"
	HookRateLimiterLatency    = "tools/metrics.RateLimiterLatency"
	HookRequestSize           = "tools/metrics.RequestSize"
	HookResponseSize          = "tools/metrics.ResponseSize"
	HookTransportCreateCalls  = "tools/metrics.TransportCreateCalls"
	HookTransportCacheEntries = "tools/metrics.TransportCacheEntries"

	HookQueueDepth          = "util/workqueue.NewDepthMetric"
	HookQueueAdds           = "util/workqueue.NewAddsMetric"
	HookQueueLatency        = "util/workqueue.NewLatencyMetric"
	HookQueueWorkDuration   = "util/workqueue.NewWorkDurationMetric"
	HookQueueUnfinishedWork = "util/workqueue.NewUnfinishedWorkSecondsMetric"
	HookQueueLongestRunning = "util/workqueue.NewLongestRunningProcessorSecondsMetric"
	HookQueueRetries        = "util/workqueue.NewRetriesMetric"
)

// ClientHooks are client-go's tools/metrics hooks, the fields of
// metrics.RegisterOpts, in their order: v0.31's twelve, then those later
// versions add (ExecPluginPolicyCalls in v0.35; TransportCAReloads,
// TransportCertRotationGCCalls, TransportCacheGCCalls in v0.36), which
// RegisterMetricsHooks sets through reflection where the client-go in use
// has them.
var ClientHooks = []string{
	"ClientCertExpiry", "ClientCertRotationAge", "RequestLatency", "ResolverLatency", "RequestSize", "ResponseSize",
	"RateLimiterLatency", "RequestResult", "ExecPluginCalls", "RequestRetry", "TransportCacheEntries", "TransportCreateCalls",
	"ExecPluginPolicyCalls", "TransportCAReloads", "TransportCertRotationGCCalls", "TransportCacheGCCalls",
}

// QueueHooks are util/workqueue's MetricsProvider methods (every version
// v0.31-v0.38 has these seven).
var QueueHooks = []string{HookQueueDepth, HookQueueAdds, HookQueueLatency, HookQueueWorkDuration, HookQueueUnfinishedWork, HookQueueLongestRunning, HookQueueRetries}

// ReflectorHooks are tools/cache's reflector MetricsProvider methods.
var ReflectorHooks = []string{"NewListsMetric", "NewListDurationMetric", "NewItemsInListMetric", "NewWatchesMetric",
	"NewShortWatchesMetric", "NewWatchDurationMetric", "NewItemsInWatchMetric", "NewLastResourceVersionMetric"}

// The operations a MetricCall records.
const (
	OpNew     = "new"     // a provider made the metric (workqueue, reflector)
	OpInc     = "inc"     // a counter or gauge went up by one
	OpDec     = "dec"     // a gauge went down by one
	OpSet     = "set"     // a gauge was set to Value
	OpObserve = "observe" // a summary, histogram or latency observed Value
)

// MetricCall is one call of one of client-go's metrics hooks.
type MetricCall struct {
	Time  time.Time
	Hook  string
	Op    string
	Value float64 // what was set or observed (durations in seconds)
	// The rest client's labels: Code (an HTTP status, or "<error>"),
	// Method (the verb of the latency and size hooks), Host (host:port;
	// the host alone for ResolverLatency), URL (the path of the latency
	// hooks' URL template: /api/v1/namespaces/{namespace}/pods).
	Code, Method, Host, URL string
	// Name is a workqueue's or a reflector's name, or the label of a
	// counter that has one (TransportCreateCalls: hit, miss, uncacheable).
	Name string
}

// MetricsHooks is what RegisterMetricsHooks found.
type MetricsHooks struct {
	// NotOurs are the process-global hooks another registrant took first
	// (a downstream's, e.g. controller-runtime's pkg/metrics registers
	// tools/metrics and the workqueue provider in its init): the calls
	// they get are not recorded here.
	NotOurs []string
	// Absent are the ClientHooks this client-go's RegisterOpts lacks.
	Absent []string
	// RegisterFn says whether RegisterOpts has RegisterFn (v0.37+: called
	// once, by metrics.EnsureRegistered, before the first rest client is
	// built after Register): RegisterFnCalls counts its calls.
	RegisterFn bool
	// InformerProvider are the methods of cache.InformerMetricsProvider,
	// the informers' own metrics hook (cache.SetInformerMetricsProvider,
	// SharedIndexInformerOptions.InformerMetricsProvider, v0.36+), nil
	// where this client-go has none. Not registered: its methods take
	// types v0.31 lacks (InformerNameAndResource, HistogramMetric), which
	// code that compiles against v0.31 cannot name, and reflection cannot
	// make a type with methods: the recording provider is built with the
	// tag informermetrics (informermetrics.go).
	InformerProvider []string
	// InformerRegistered: this binary has the informers' recording
	// provider and registered it (InformerProvider is non-nil).
	InformerRegistered bool
}

// RegisterMetricsHooks registers the recording providers with every
// metrics hook of client-go, once per process, and says what took.
func RegisterMetricsHooks() MetricsHooks {
	hooks.once.Do(hooks.register)
	return hooks.state
}

// RegisterFnCalls counts the calls of the RegisterFn RegisterMetricsHooks
// registered (v0.37+), process-wide.
func RegisterFnCalls() int64 { return hooks.registerFnCalls.Load() }

// ReflectorMetricsCalls counts the calls of the reflector metrics provider
// RegisterMetricsHooks registered, process-wide: every version v0.31-v0.38
// stores it and never reads it (reflector metrics were removed in
// kubernetes PR #74636, 2019; tools/cache/reflector_metrics.go keeps the
// hook).
func ReflectorMetricsCalls() int64 { return hooks.reflectorCalls.Load() }

// MetricsTap receives the calls of the process's metrics hooks that
// concern one spec.
type MetricsTap struct {
	hosts  map[string]bool
	queues map[string]bool
	filter func(MetricCall) bool

	mu    sync.Mutex
	calls []MetricCall
}

// TapMetrics starts recording the metrics calls for hosts (host:port, as
// the rest client labels them) and for the workqueues and informers named
// queues, and
// the calls no host or queue names (the transport's, the exec plugin's,
// the reflector's) while it is open. filter, when set, sees every call
// first and drops those it returns false for: a negative control's broken
// metrics adapter. Close it when the spec ends.
func TapMetrics(hosts, queues []string, filter func(MetricCall) bool) *MetricsTap {
	t := &MetricsTap{hosts: map[string]bool{}, queues: map[string]bool{}, filter: filter}
	for _, h := range hosts {
		t.hosts[h] = true
		if name, _, err := net.SplitHostPort(h); err == nil {
			t.hosts[name] = true // ResolverLatency labels the host alone
		}
	}
	for _, q := range queues {
		t.queues[q] = true
	}
	hooks.mu.Lock()
	hooks.taps = append(hooks.taps, t)
	hooks.mu.Unlock()
	return t
}

// Close stops the tap's recording.
func (t *MetricsTap) Close() {
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	hooks.taps = slices.DeleteFunc(hooks.taps, func(o *MetricsTap) bool { return o == t })
}

// Calls is a copy of the calls recorded so far, in order.
func (t *MetricsTap) Calls() []MetricCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.calls)
}

// Watch adds hosts (host:port, or a URL) to those the tap records the
// rest client's calls of.
func (t *MetricsTap) Watch(hosts ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, h := range hosts {
		if u, err := url.Parse(h); err == nil && u.Host != "" {
			h = u.Host
		}
		t.hosts[h] = true
		if name, _, err := net.SplitHostPort(h); err == nil {
			t.hosts[name] = true
		}
	}
}

func (t *MetricsTap) wants(c MetricCall) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case strings.HasPrefix(c.Hook, "util/workqueue."), strings.HasPrefix(c.Hook, "tools/cache.InformerMetricsProvider."):
		return t.queues[c.Name]
	case c.Host != "":
		return t.hosts[c.Host]
	}
	return true
}

func (t *MetricsTap) add(c MetricCall) {
	if t.filter != nil && !t.filter(c) {
		return
	}
	t.mu.Lock()
	t.calls = append(t.calls, c)
	t.mu.Unlock()
}

// Of are the calls of hook (all operations), in order.
func Of(calls []MetricCall, hook string) []MetricCall {
	var out []MetricCall
	for _, c := range calls {
		if c.Hook == hook {
			out = append(out, c)
		}
	}
	return out
}

// GaugeValues is a gauge's value after each of its calls (Inc, Dec, Set),
// from 0: the series a scrape would have sampled.
func GaugeValues(calls []MetricCall) []float64 {
	var v float64
	var out []float64
	for _, c := range calls {
		switch c.Op {
		case OpInc:
			v++
		case OpDec:
			v--
		case OpSet:
			v = c.Value
		default:
			continue
		}
		out = append(out, v)
	}
	return out
}

// Count is how many of calls are op.
func Count(calls []MetricCall, op string) int {
	n := 0
	for _, c := range calls {
		if c.Op == op {
			n++
		}
	}
	return n
}

// metricsHooks is the process's one registration.
type metricsHooks struct {
	once  sync.Once
	state MetricsHooks

	mu   sync.Mutex
	taps []*MetricsTap

	registerFnCalls atomic.Int64
	reflectorCalls  atomic.Int64
	// queuesSeen are the names the workqueue provider made metrics for:
	// how register tells whether its provider took.
	queuesSeen sync.Map
}

var hooks = &metricsHooks{}

func record(c MetricCall) {
	c.Time = time.Now()
	hooks.mu.Lock()
	taps := slices.Clone(hooks.taps)
	hooks.mu.Unlock()
	for _, t := range taps {
		if t.wants(c) {
			t.add(c)
		}
	}
}

// The adapters: one per hook, each a pointer (RegisterMetricsHooks tells
// its own from another registrant's by identity).
var (
	ourCertExpiry      = &expiryHook{"tools/metrics.ClientCertExpiry"}
	ourCertRotationAge = &durationHook{"tools/metrics.ClientCertRotationAge"}
	ourRequestLatency  = &latencyHook{HookRequestLatency}
	ourResolverLatency = &resolverHook{"tools/metrics.ResolverLatency"}
	ourRequestSize     = &sizeHook{HookRequestSize}
	ourResponseSize    = &sizeHook{HookResponseSize}
	ourRateLimiter     = &latencyHook{HookRateLimiterLatency}
	ourRequestResult   = &resultHook{HookRequestResult}
	ourExecPluginCalls = &callsHook{"tools/metrics.ExecPluginCalls"}
	ourRequestRetry    = &resultHook{HookRequestRetry}
	ourCacheEntries    = &intHook{HookTransportCacheEntries}
	ourCreateCalls     = &labelCounterHook{HookTransportCreateCalls}
)

// newerClientHooks are the adapters of the hooks newer than v0.31, by
// RegisterOpts field.
var newerClientHooks = map[string]any{
	"ExecPluginPolicyCalls":        &labelCounterHook{"tools/metrics.ExecPluginPolicyCalls"},
	"TransportCAReloads":           &twoLabelCounterHook{"tools/metrics.TransportCAReloads"},
	"TransportCertRotationGCCalls": &counterHook{"tools/metrics.TransportCertRotationGCCalls"},
	"TransportCacheGCCalls":        &labelCounterHook{"tools/metrics.TransportCacheGCCalls"},
}

func (h *metricsHooks) register() {
	opts := metrics.RegisterOpts{
		ClientCertExpiry:      ourCertExpiry,
		ClientCertRotationAge: ourCertRotationAge,
		RequestLatency:        ourRequestLatency,
		ResolverLatency:       ourResolverLatency,
		RequestSize:           ourRequestSize,
		ResponseSize:          ourResponseSize,
		RateLimiterLatency:    ourRateLimiter,
		RequestResult:         ourRequestResult,
		ExecPluginCalls:       ourExecPluginCalls,
		RequestRetry:          ourRequestRetry,
		TransportCacheEntries: ourCacheEntries,
		TransportCreateCalls:  ourCreateCalls,
	}
	v := reflect.ValueOf(&opts).Elem()
	for _, name := range ClientHooks {
		adapter, newer := newerClientHooks[name]
		if !newer {
			continue
		}
		f := v.FieldByName(name)
		if !f.IsValid() || !reflect.TypeOf(adapter).AssignableTo(f.Type()) {
			h.state.Absent = append(h.state.Absent, name)
			continue
		}
		f.Set(reflect.ValueOf(adapter))
	}
	if f := v.FieldByName("RegisterFn"); f.IsValid() && f.Type() == reflect.TypeOf(func() {}) {
		f.Set(reflect.ValueOf(func() { h.registerFnCalls.Add(1) }))
		h.state.RegisterFn = true
	}
	metrics.Register(opts)
	// Which took: the exported variables Register sets (v0.31's; the newer
	// ones went with them, under the same sync.Once).
	for _, hk := range []struct {
		name      string
		got, ours any
	}{
		{"ClientCertExpiry", metrics.ClientCertExpiry, ourCertExpiry},
		{"ClientCertRotationAge", metrics.ClientCertRotationAge, ourCertRotationAge},
		{"RequestLatency", metrics.RequestLatency, ourRequestLatency},
		{"ResolverLatency", metrics.ResolverLatency, ourResolverLatency},
		{"RequestSize", metrics.RequestSize, ourRequestSize},
		{"ResponseSize", metrics.ResponseSize, ourResponseSize},
		{"RateLimiterLatency", metrics.RateLimiterLatency, ourRateLimiter},
		{"RequestResult", metrics.RequestResult, ourRequestResult},
		{"ExecPluginCalls", metrics.ExecPluginCalls, ourExecPluginCalls},
		{"RequestRetry", metrics.RequestRetry, ourRequestRetry},
		{"TransportCacheEntries", metrics.TransportCacheEntries, ourCacheEntries},
		{"TransportCreateCalls", metrics.TransportCreateCalls, ourCreateCalls},
	} {
		if hk.got != hk.ours {
			h.state.NotOurs = append(h.state.NotOurs, "tools/metrics."+hk.name)
		}
	}

	// The workqueue provider cannot be read back: a named queue built now
	// tells whether it took.
	workqueue.SetProvider(queueProvider{})
	check := fmt.Sprintf("informer-conformance-provider-check-%d", os.Getpid())
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: check})
	q.ShutDown()
	if _, ok := h.queuesSeen.Load(check); !ok {
		h.state.NotOurs = append(h.state.NotOurs, "util/workqueue.SetProvider")
	}

	// Stored, never read (ReflectorMetricsCalls): nothing to check.
	cache.SetReflectorMetricsProvider(reflectorProvider{})

	if f, ok := reflect.TypeOf(cache.SharedIndexInformerOptions{}).FieldByName("InformerMetricsProvider"); ok && f.Type.Kind() == reflect.Interface {
		h.state.InformerProvider = []string{}
		for i := range f.Type.NumMethod() {
			h.state.InformerProvider = append(h.state.InformerProvider, f.Type.Method(i).Name)
		}
		// The recording provider, where this binary has it
		// (informermetrics.go); SetInformerMetricsProvider keeps its first
		// registrant, so a spec tells whether it took by what it records.
		if informerMetrics.register != nil {
			h.state.InformerRegistered = informerMetrics.register()
		}
	}
}

// tools/metrics adapters.

type expiryHook struct{ hook string }

func (h *expiryHook) Set(expiry *time.Time) {
	c := MetricCall{Hook: h.hook, Op: OpSet}
	if expiry != nil {
		c.Value = float64(expiry.Unix())
	}
	record(c)
}

type durationHook struct{ hook string }

func (h *durationHook) Observe(d time.Duration) {
	record(MetricCall{Hook: h.hook, Op: OpObserve, Value: d.Seconds()})
}

type latencyHook struct{ hook string }

func (h *latencyHook) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	record(MetricCall{Hook: h.hook, Op: OpObserve, Method: verb, Host: u.Host, URL: u.Path, Value: latency.Seconds()})
}

type resolverHook struct{ hook string }

func (h *resolverHook) Observe(_ context.Context, host string, latency time.Duration) {
	record(MetricCall{Hook: h.hook, Op: OpObserve, Host: host, Value: latency.Seconds()})
}

type sizeHook struct{ hook string }

func (h *sizeHook) Observe(_ context.Context, verb, host string, size float64) {
	record(MetricCall{Hook: h.hook, Op: OpObserve, Method: verb, Host: host, Value: size})
}

// resultHook is RequestResult (Increment) and RequestRetry (IncrementRetry).
type resultHook struct{ hook string }

func (h *resultHook) Increment(_ context.Context, code, method, host string) {
	record(MetricCall{Hook: h.hook, Op: OpInc, Code: code, Method: method, Host: host})
}

func (h *resultHook) IncrementRetry(_ context.Context, code, method, host string) {
	record(MetricCall{Hook: h.hook, Op: OpInc, Code: code, Method: method, Host: host})
}

type callsHook struct{ hook string }

func (h *callsHook) Increment(exitCode int, callStatus string) {
	record(MetricCall{Hook: h.hook, Op: OpInc, Code: fmt.Sprint(exitCode), Name: callStatus})
}

type intHook struct{ hook string }

func (h *intHook) Observe(value int) {
	record(MetricCall{Hook: h.hook, Op: OpSet, Value: float64(value)})
}

type labelCounterHook struct{ hook string }

func (h *labelCounterHook) Increment(label string) {
	record(MetricCall{Hook: h.hook, Op: OpInc, Name: label})
}

type twoLabelCounterHook struct{ hook string }

func (h *twoLabelCounterHook) Increment(result, reason string) {
	record(MetricCall{Hook: h.hook, Op: OpInc, Name: result + "/" + reason})
}

type counterHook struct{ hook string }

func (h *counterHook) Increment() { record(MetricCall{Hook: h.hook, Op: OpInc}) }

// util/workqueue's provider.

type queueProvider struct{}

func newQueueMetric(hook, name string) *queueMetric {
	hooks.queuesSeen.Store(name, true)
	record(MetricCall{Hook: hook, Op: OpNew, Name: name})
	return &queueMetric{hook: hook, name: name}
}

func (queueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return newQueueMetric(HookQueueDepth, name)
}

func (queueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return newQueueMetric(HookQueueAdds, name)
}

func (queueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return newQueueMetric(HookQueueLatency, name)
}

func (queueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return newQueueMetric(HookQueueWorkDuration, name)
}

func (queueProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return newQueueMetric(HookQueueUnfinishedWork, name)
}

func (queueProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return newQueueMetric(HookQueueLongestRunning, name)
}

func (queueProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return newQueueMetric(HookQueueRetries, name)
}

// queueMetric is every kind of workqueue metric: gauge, counter,
// settable gauge, histogram.
type queueMetric struct{ hook, name string }

func (m *queueMetric) Inc() { record(MetricCall{Hook: m.hook, Op: OpInc, Name: m.name}) }
func (m *queueMetric) Dec() { record(MetricCall{Hook: m.hook, Op: OpDec, Name: m.name}) }
func (m *queueMetric) Set(v float64) {
	record(MetricCall{Hook: m.hook, Op: OpSet, Name: m.name, Value: v})
}
func (m *queueMetric) Observe(v float64) {
	record(MetricCall{Hook: m.hook, Op: OpObserve, Name: m.name, Value: v})
}

// tools/cache's reflector provider.

type reflectorProvider struct{}

func newReflectorMetric(method, name string) *reflectorMetric {
	hooks.reflectorCalls.Add(1)
	hook := "tools/cache." + method
	record(MetricCall{Hook: hook, Op: OpNew, Name: name})
	return &reflectorMetric{hook: hook, name: name}
}

func (reflectorProvider) NewListsMetric(name string) cache.CounterMetric {
	return newReflectorMetric("NewListsMetric", name)
}
func (reflectorProvider) NewListDurationMetric(name string) cache.SummaryMetric {
	return newReflectorMetric("NewListDurationMetric", name)
}
func (reflectorProvider) NewItemsInListMetric(name string) cache.SummaryMetric {
	return newReflectorMetric("NewItemsInListMetric", name)
}
func (reflectorProvider) NewWatchesMetric(name string) cache.CounterMetric {
	return newReflectorMetric("NewWatchesMetric", name)
}
func (reflectorProvider) NewShortWatchesMetric(name string) cache.CounterMetric {
	return newReflectorMetric("NewShortWatchesMetric", name)
}
func (reflectorProvider) NewWatchDurationMetric(name string) cache.SummaryMetric {
	return newReflectorMetric("NewWatchDurationMetric", name)
}
func (reflectorProvider) NewItemsInWatchMetric(name string) cache.SummaryMetric {
	return newReflectorMetric("NewItemsInWatchMetric", name)
}
func (reflectorProvider) NewLastResourceVersionMetric(name string) cache.GaugeMetric {
	return newReflectorMetric("NewLastResourceVersionMetric", name)
}

type reflectorMetric struct{ hook, name string }

func (m *reflectorMetric) Inc() {
	hooks.reflectorCalls.Add(1)
	record(MetricCall{Hook: m.hook, Op: OpInc, Name: m.name})
}
func (m *reflectorMetric) Set(v float64) {
	hooks.reflectorCalls.Add(1)
	record(MetricCall{Hook: m.hook, Op: OpSet, Name: m.name, Value: v})
}
func (m *reflectorMetric) Observe(v float64) {
	hooks.reflectorCalls.Add(1)
	record(MetricCall{Hook: m.hook, Op: OpObserve, Name: m.name, Value: v})
}

// LongThrottle is the wait on the client-side rate limiter from which
// client-go logs "Waited for ... due to client-side throttling"
// (rest/request.go longThrottleLatency): a request held that long waited
// on the limiter, not merely passed it.
const LongThrottle = 50 * time.Millisecond

// LimiterWaits sums the client-side rate limiter's waits among calls (the
// RateLimiterLatency hook's observations: one per request of a client
// with a limiter, rest/request.go tryThrottleWithInfo).
func LimiterWaits(calls []MetricCall) report.LimiterWaits {
	var w report.LimiterWaits
	for _, c := range Of(calls, HookRateLimiterLatency) {
		w.Requests++
		if c.Value >= LongThrottle.Seconds() {
			w.Waited++
			w.TotalSeconds += c.Value
			w.LongestSeconds = max(w.LongestSeconds, c.Value)
		}
	}
	return w
}
