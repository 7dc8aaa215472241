package probe

import (
	"k8s.io/client-go/informers"
)

// The informers' own metrics hook (tools/cache SetInformerMetricsProvider,
// client-go v0.36+) takes a provider whose methods name types v0.31 lacks
// (cache.InformerNameAndResource, cache.HistogramMetric): code that
// compiles against v0.31 cannot implement it, and reflection cannot make
// a type with methods. Its recording provider is in a file of its own,
// built with the tag informermetrics (go test -tags informermetrics, on
// client-go v0.36 or newer; make e2e sets it where the pinned client-go
// has the hook). It fills informerMetrics from its init; without the tag
// the hook is reported present and not registered.
const (
	HookInformerQueuedItems       = "tools/cache.InformerMetricsProvider.NewQueuedItemMetric"
	HookInformerProcessingLatency = "tools/cache.InformerMetricsProvider.NewProcessingLatencyMetric"
	HookInformerStoreRV           = "tools/cache.InformerMetricsProvider.NewStoreResourceVersionMetric"
)

// InformerHooks are the informers' metrics, as MetricCall.Hook names them.
var InformerHooks = []string{HookInformerQueuedItems, HookInformerProcessingLatency, HookInformerStoreRV}

// informerMetrics is what the tagged file provides, set once from its
// init: register installs the recording provider (cache.SetInformerMetricsProvider);
// named is the factory option that gives a factory's informers a reserved
// informer name (cache.NewInformerName, informers.WithInformerName), and
// its release.
var informerMetrics struct {
	register func() bool
	named    func(name string) (informers.SharedInformerOption, func(), error)
}

// InformerMetricsBuilt says whether this binary has the informers'
// recording metrics provider (built with the tag informermetrics).
func InformerMetricsBuilt() bool { return informerMetrics.register != nil }

// NamedInformers is the factory option that names a factory's informers
// name for the informers' metrics (only a named informer emits them), and
// the func that releases the name; ok is false where this binary has no
// provider (InformerMetricsBuilt).
func NamedInformers(name string) (opt informers.SharedInformerOption, release func(), ok bool, err error) {
	if informerMetrics.named == nil {
		return nil, nil, false, nil
	}
	opt, release, err = informerMetrics.named(name)
	return opt, release, err == nil, err
}
