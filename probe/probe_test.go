package probe_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/cluster/local/localtest"
	"github.com/informer-conformance/informer-conformance/probe"
)

const eventTimeout = 30 * time.Second

func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}}},
	}
}

// TestProbeRecordsARealInformer: against a real apiserver behind the fault
// proxy, the probe records the initial sync (streaming list or LIST), every
// handler call, the dials, and after the proxy resets the connection, the
// transport error and the resumed watch; with the watch resumable there is
// no re-initialisation.
func TestProbeRecordsARealInformer(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		name := map[bool]string{true: "streaming list", false: "list"}[streaming]
		t.Run(name, func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, features.WatchListClient, streaming)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			c := localtest.Start(t, local.Options{})
			p, err := faultproxy.Start(c.APIServerAddr(0))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			admin, err := c.RESTConfig(cluster.Admin)
			if err != nil {
				t.Fatal(err)
			}
			writer := kubernetes.NewForConfigOrDie(admin)
			if _, err := writer.CoreV1().Pods("default").Create(ctx, pod("a"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			cfg, err := c.RESTConfigFor(cluster.TestUser, p.URL())
			if err != nil {
				t.Fatal(err)
			}
			pr := startSynced(ctx, t, cfg, probe.Options{Namespace: "default"})
			rec := pr.Recorder.Snapshot()
			first := rec.Requests[0]
			if streaming && !(first.Watch && first.SendInitialEvents) {
				t.Errorf("first request %+v: want a streaming list", first)
			}
			if !streaming && (first.Watch || first.Method != "GET") {
				t.Errorf("first request %+v: want a LIST", first)
			}
			// The typed clientset asks for protobuf (kubernetes.NewForConfig's
			// default) and the server answers in it.
			if !strings.Contains(first.Accept, "application/vnd.kubernetes.protobuf") || !strings.HasPrefix(first.ContentType, "application/vnd.kubernetes.protobuf") {
				t.Errorf("first request asked %q, answered %q: want protobuf", first.Accept, first.ContentType)
			}
			if len(rec.Dials) != 1 || len(rec.Events) != 1 || rec.Events[0].Kind != probe.Add || !rec.Events[0].InInitialList {
				t.Errorf("after sync: dials %v events %v; want one dial and one initial Add", rec.Dials, rec.Events)
			}
			if streaming {
				// The initial-events-end bookmark is seen by the time the informer syncs.
				if !first.InitialEventsEnd {
					t.Errorf("streaming list %+v: initial-events-end bookmark not recorded", first)
				}
				if first.InitialEventsEndRV == "" || first.InitialEventsEndRV != pr.Informer.LastSyncResourceVersion() {
					t.Errorf("streaming list %+v: initial-events-end bookmark at %q, the informer synced at %q", first, first.InitialEventsEndRV, pr.Informer.LastSyncResourceVersion())
				}
			}

			p.ResetAll()
			if err := writer.CoreV1().Pods("default").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, eventTimeout, true, func(context.Context) (bool, error) {
				for _, e := range pr.Recorder.Snapshot().Events {
					if e.Kind == probe.Delete && e.Key == "default/a" {
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				t.Fatalf("no Delete of default/a within %s: %+v", eventTimeout, pr.Recorder.Snapshot())
			}
			rec = pr.Recorder.Snapshot()
			if len(rec.Dials) != 2 {
				t.Errorf("dials %v: want a second one after the reset", rec.Dials)
			}
			var sawReset bool
			for _, r := range rec.Requests {
				if r.Watch && strings.Contains(r.Err, "reset") || strings.Contains(r.Err, "EOF") || strings.Contains(r.Err, "connection lost") {
					sawReset = true
				}
			}
			if !sawReset {
				t.Errorf("no request recorded the reset: %+v", rec.Requests)
			}
			for _, ri := range probe.Reinitialisations(rec) {
				t.Logf("re-initialisation: %s", ri)
			}
			for _, r := range rec.Requests {
				t.Logf("#%d %s %s watch=%v rv=%s sie=%v status=%d events=%d eof=%v err=%q", r.ID, r.Method, r.Path, r.Watch, r.ResourceVersion, r.SendInitialEvents, r.Status, r.Events, r.CleanEOF, r.Err)
			}
		})
	}
}

// clusterWithPod starts a local cluster with the pod default/a: its admin
// config, the test user's config the probes use, and the pod as created.
func clusterWithPod(ctx context.Context, t *testing.T) (admin, user *rest.Config, created *corev1.Pod) {
	t.Helper()
	c := localtest.Start(t, local.Options{})
	admin, err := c.RESTConfig(cluster.Admin)
	if err != nil {
		t.Fatal(err)
	}
	created, err = kubernetes.NewForConfigOrDie(admin).CoreV1().Pods("default").Create(ctx, pod("a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	user, err = c.RESTConfig(cluster.TestUser)
	if err != nil {
		t.Fatal(err)
	}
	return admin, user, created
}

// TestStacks: each informer stack syncs, delivers the handler calls with
// what identifies the object (typed objects, unstructured, partial
// metadata alike) and is recorded with the encoding it spoke.
func TestStacks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, cfg, created := clusterWithPod(ctx, t)
	// The CRD stacks' object: a Widget of the CRD the backend installed.
	widget := &unstructured.Unstructured{}
	widget.SetAPIVersion(probe.WidgetsResource.GroupVersion().String())
	widget.SetKind("Widget")
	widget.SetName("a")
	createdWidget, err := dynamic.NewForConfigOrDie(admin).Resource(probe.WidgetsResource).Namespace("default").Create(ctx, widget, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	answers := map[probe.Stack]string{
		probe.StackTyped:      "application/vnd.kubernetes.protobuf",
		probe.StackTypedJSON:  "application/json",
		probe.StackDynamic:    "application/json",
		probe.StackMetadata:   "application/vnd.kubernetes.protobuf",
		probe.StackDynamicCRD: "application/json",
	}
	for _, stack := range probe.Stacks {
		t.Run(string(stack), func(t *testing.T) {
			if stack.CBOR() {
				// Needs the client gates and a server with the cbor profile:
				// the e2e specs on the stack check its encoding
				// (e2e.Observed.ExpectStackEncoding).
				t.Skip("CBOR: checked by the e2e specs")
			}
			pr, err := probe.New(cfg, probe.Options{Namespace: "default", Stack: stack})
			if err != nil {
				t.Fatal(err)
			}
			cm, err := pr.InformerFor(corev1.SchemeGroupVersion.WithResource("configmaps"))
			if err != nil {
				t.Fatal(err)
			}
			pr.Start()
			defer pr.Stop()
			if err := pr.WaitForSync(ctx); err != nil {
				t.Fatal(err)
			}
			rec := pr.Recorder.Snapshot()
			uid := string(created.UID)
			if stack.CustomResource() {
				uid = string(createdWidget.GetUID())
			}
			if len(rec.Events) != 1 || rec.Events[0].Key != "default/a" || rec.Events[0].UID != uid {
				t.Errorf("events %+v: want the Add of %s default/a with its UID", rec.Events, stack.Resource().Resource)
			}
			if !slices.ContainsFunc(rec.Requests, func(r probe.Request) bool { return strings.HasSuffix(r.Path, "/"+stack.Resource().Resource) }) {
				t.Errorf("no request for %s", stack.Resource().Resource)
			}
			if !strings.HasPrefix(rec.Requests[0].ContentType, answers[stack]) {
				t.Errorf("first request answered in %q (asked %q), want %s", rec.Requests[0].ContentType, rec.Requests[0].Accept, answers[stack])
			}
			if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, eventTimeout, true, func(context.Context) (bool, error) {
				return cm.HasSynced(), nil
			}); err != nil {
				t.Errorf("the configmaps informer of the same stack did not sync: %v", err)
			}
			// On the typed stacks the probe's clientset is the informers': a
			// spec's own requests share their connection (S13's load relies
			// on it).
			if stack == probe.StackTyped || stack == probe.StackTypedJSON {
				if _, err := pr.Client.CoreV1().Pods("default").Get(ctx, "a", metav1.GetOptions{}); err != nil {
					t.Fatal(err)
				}
				rs := pr.Recorder.Snapshot().Requests
				if first, last := rs[0], rs[len(rs)-1]; first.Conn == "" || last.Conn != first.Conn {
					t.Errorf("the client's GET went over %q, the informer's first request over %q: want one connection", last.Conn, first.Conn)
				}
			}
			if stack == probe.StackTyped && pr.Factory == nil || stack == probe.StackDynamic && pr.Factory != nil {
				t.Errorf("stack %s: typed factory %v", stack, pr.Factory)
			}
			if (stack == probe.StackDynamic || stack == probe.StackDynamicCRD) != (pr.Dynamic != nil) {
				t.Errorf("stack %s: dynamic client %v", stack, pr.Dynamic)
			}
		})
	}

	if _, err := probe.New(cfg, probe.Options{Stack: "cbor-please"}); err == nil || !strings.Contains(err.Error(), "unknown informer stack") {
		t.Errorf("an unknown stack: %v", err)
	}
	if _, err := probe.New(cfg, probe.Options{Stack: probe.StackDynamic, Informer: probe.Pods}); err == nil || !strings.Contains(err.Error(), "name the Resource") {
		t.Errorf("a typed picker on the dynamic stack: %v", err)
	}
}

// factoryWrapper is a downstream's own informer construction: client-go's
// factory behind a wrapper, its handlers added through a layer of its own
// that counts what it hands on.
type factoryWrapper struct {
	informers.SharedInformerFactory
	handed atomic.Int32
}

func (w *factoryWrapper) InformerFor(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, error) {
	g, err := w.ForResource(gvr)
	if err != nil {
		return nil, err
	}
	return g.Informer(), nil
}

func (w *factoryWrapper) AddHandler(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.handed.Add(1); h.OnAdd(obj, false) },
		UpdateFunc: func(o, n any) { w.handed.Add(1); h.OnUpdate(o, n) },
		DeleteFunc: func(obj any) { w.handed.Add(1); h.OnDelete(obj) },
	})
	return err
}

// TestSource: a probe built on a Builder records the requests of the
// clients the source builds from the config it is given, adds its handler
// through the source's own layer (HandlerSource), and refuses the
// typed-factory options a source cannot take with ErrNotSupported.
func TestSource(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, cfg, _ := clusterWithPod(ctx, t)
	var built *factoryWrapper
	build := func(in probe.SourceInput) (probe.Source, error) {
		cs, err := kubernetes.NewForConfig(in.Config)
		if err != nil {
			return nil, err
		}
		built = &factoryWrapper{SharedInformerFactory: informers.NewSharedInformerFactoryWithOptions(cs, in.Resync, informers.WithNamespace(in.Namespace))}
		return built, nil
	}
	pr := startSynced(ctx, t, cfg, probe.Options{Namespace: "default", Stack: "wrapper", Source: build})
	rec := pr.Recorder.Snapshot()
	if len(rec.Requests) == 0 || len(rec.Events) != 1 || rec.Events[0].Key != "default/a" {
		t.Errorf("requests %d, events %+v: want the source's requests recorded and the Add of default/a", len(rec.Requests), rec.Events)
	}
	if n := built.handed.Load(); n != 1 || pr.Stack != "wrapper" || pr.Factory != nil {
		t.Errorf("handed on %d events (want 1, through the source's AddHandler), stack %q, typed factory %v", n, pr.Stack, pr.Factory)
	}

	for name, opts := range map[string]probe.Options{
		"an informer picker": {Source: build, Informer: probe.Pods},
		"factory options":    {Source: build, FactoryOptions: []informers.SharedInformerOption{informers.WithNamespace("x")}},
	} {
		if _, err := probe.New(cfg, opts); !errors.Is(err, probe.ErrNotSupported) {
			t.Errorf("a source with %s: %v, want ErrNotSupported", name, err)
		}
	}
	broken := func(probe.SourceInput) (probe.Source, error) { return nil, errors.New("no cache today") }
	if _, err := probe.New(cfg, probe.Options{Source: broken, Stack: "broken"}); err == nil || !strings.Contains(err.Error(), "informer source broken: no cache today") {
		t.Errorf("a failing builder: %v", err)
	}
}

// startSynced builds a probe, starts it, waits for its sync and stops it
// when the test ends.
func startSynced(ctx context.Context, t *testing.T, cfg *rest.Config, opts probe.Options) *probe.Probe {
	t.Helper()
	pr, err := probe.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	pr.Start()
	t.Cleanup(pr.Stop)
	if err := pr.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	return pr
}
