package probe_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"

	"github.com/informer-conformance/informer-conformance/probe"
)

// TestMetricsHooksRecordWhatTheyAreTappedFor: the recording providers take
// in this process (nothing registered before), a named workqueue's
// metrics reach the tap of its name and an unnamed one's nothing, and the
// rest client's calls reach the tap of their host only.
func TestMetricsHooksRecordWhatTheyAreTappedFor(t *testing.T) {
	hooks := probe.RegisterMetricsHooks()
	if len(hooks.NotOurs) > 0 {
		t.Fatalf("hooks taken before the test: %v", hooks.NotOurs)
	}

	tap := probe.TapMetrics(nil, []string{"tapped"}, nil)
	defer tap.Close()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "tapped"})
	other := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "other"})
	unnamed := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	for _, qq := range []workqueue.TypedRateLimitingInterface[string]{q, other, unnamed} {
		qq.Add("a")
		qq.Add("b")
		qq.Add("a") // deduplicated: no add counted
		for range 2 {
			k, _ := qq.Get()
			qq.Done(k)
		}
		qq.AddRateLimited("a")
		qq.ShutDown()
	}
	calls := tap.Calls()
	for _, h := range probe.QueueHooks {
		if n := probe.Count(probe.Of(calls, h), probe.OpNew); n != 1 {
			t.Errorf("%s made %d metrics for the tapped queue, want 1", h, n)
		}
	}
	if n := probe.Count(probe.Of(calls, probe.HookQueueAdds), probe.OpInc); n != 2 {
		t.Errorf("adds %d, want 2", n)
	}
	if d := probe.GaugeValues(probe.Of(calls, probe.HookQueueDepth)); len(d) != 4 || d[1] != 2 || d[3] != 0 {
		t.Errorf("depth %v, want [1 2 1 0]", d)
	}
	if n := probe.Count(probe.Of(calls, probe.HookQueueRetries), probe.OpInc); n != 1 {
		t.Errorf("retries %d, want 1", n)
	}
	for _, c := range calls {
		if c.Name != "tapped" {
			t.Errorf("a call for queue %q reached the tap of \"tapped\"", c.Name)
		}
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	hostTap := probe.TapMetrics([]string{u.Host}, nil, nil)
	defer hostTap.Close()
	elsewhere := probe.TapMetrics([]string{"elsewhere:1"}, nil, nil)
	defer elsewhere.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	got := hostTap.Calls()
	if r := probe.Of(got, probe.HookRequestResult); len(r) != 1 || r[0].Code != "200" || r[0].Method != "GET" || r[0].Host != u.Host {
		t.Errorf("RequestResult calls %+v, want one 200 GET for %s", r, u.Host)
	}
	if l := probe.Of(got, probe.HookRequestLatency); len(l) != 1 || l[0].URL != "/api/v1/namespaces/{namespace}/pods" {
		t.Errorf("RequestLatency calls %+v, want one on the URL template", l)
	}
	for _, c := range elsewhere.Calls() {
		if c.Host != "" {
			t.Errorf("a call for host %s reached the tap of another host", c.Host)
		}
	}
}
