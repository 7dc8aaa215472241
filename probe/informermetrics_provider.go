//go:build informermetrics

package probe

import (
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// The informers' recording metrics provider (client-go v0.36+: this file
// compiles only there; informermetrics.go says why it is apart). Each
// metric records its calls, named by the informer's reserved name, for the
// taps that ask for that name (TapMetrics' queues).
func init() {
	informerMetrics.register = func() bool {
		cache.SetInformerMetricsProvider(informerProvider{})
		return true
	}
	informerMetrics.named = func(name string) (informers.SharedInformerOption, func(), error) {
		n, err := cache.NewInformerName(name)
		if err != nil {
			return nil, nil, err
		}
		return informers.WithInformerName(n), n.Release, nil
	}
}

type informerProvider struct{}

func (informerProvider) NewQueuedItemMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	return newInformerMetric(HookInformerQueuedItems, id)
}

func (informerProvider) NewProcessingLatencyMetric(id cache.InformerNameAndResource) cache.HistogramMetric {
	return newInformerMetric(HookInformerProcessingLatency, id)
}

func (informerProvider) NewStoreResourceVersionMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	return newInformerMetric(HookInformerStoreRV, id)
}

// informerMetric is a gauge and a histogram of one informer: it records
// only while the informer's name is reserved (the provider's contract:
// check id.Reserved() before updating).
type informerMetric struct {
	hook string
	id   cache.InformerNameAndResource
}

func newInformerMetric(hook string, id cache.InformerNameAndResource) *informerMetric {
	record(MetricCall{Hook: hook, Op: OpNew, Name: id.Name()})
	return &informerMetric{hook: hook, id: id}
}

func (m *informerMetric) Set(v float64) {
	if m.id.Reserved() {
		record(MetricCall{Hook: m.hook, Op: OpSet, Name: m.id.Name(), Value: v})
	}
}

func (m *informerMetric) Observe(v float64) {
	if m.id.Reserved() {
		record(MetricCall{Hook: m.hook, Op: OpObserve, Name: m.id.Name(), Value: v})
	}
}
