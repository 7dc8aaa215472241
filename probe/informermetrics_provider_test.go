//go:build informermetrics

package probe

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// TestInformerMetricsProvider: the recording provider's metrics record
// for the taps that name the informer, only while its name is reserved.
func TestInformerMetricsProvider(t *testing.T) {
	n, err := cache.NewInformerName("probe-test-informer")
	if err != nil {
		t.Fatal(err)
	}
	tap := TapMetrics(nil, []string{"probe-test-informer"}, nil)
	defer tap.Close()
	other := TapMetrics(nil, []string{"another-informer"}, nil)
	defer other.Close()
	id := n.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	p := informerProvider{}
	p.NewQueuedItemMetric(id).Set(3)
	p.NewProcessingLatencyMetric(id).Observe(0.25)
	p.NewStoreResourceVersionMetric(id).Set(1234)
	n.Release()
	p.NewQueuedItemMetric(id).Set(5) // released: not recorded
	calls := tap.Calls()
	var sets []float64
	for _, c := range calls {
		if c.Op != OpNew {
			sets = append(sets, c.Value)
		}
	}
	if len(sets) != 3 || sets[0] != 3 || sets[1] != 0.25 || sets[2] != 1234 {
		t.Errorf("recorded %v (%+v), want 3, 0.25, 1234", sets, calls)
	}
	if len(other.Calls()) != 0 {
		t.Errorf("a tap of another informer recorded %+v", other.Calls())
	}
	opt, release, ok, err := NamedInformers("probe-test-named")
	if !ok || err != nil || opt == nil {
		t.Fatalf("NamedInformers: ok %t, err %v", ok, err)
	}
	release()
	if !InformerMetricsBuilt() {
		t.Error("built with the tag, yet InformerMetricsBuilt is false")
	}
}
