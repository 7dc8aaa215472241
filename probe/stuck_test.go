package probe_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/cluster/local/localtest"
	"github.com/informer-conformance/informer-conformance/probe"
)

// blockingHandler records a call, then blocks in OnAdd until release is
// closed: a controller whose handler never returns.
type blockingHandler struct {
	cache.ResourceEventHandler
	release chan struct{}
}

func (h blockingHandler) OnAdd(obj any, inInitialList bool) {
	h.ResourceEventHandler.OnAdd(obj, inInitialList)
	<-h.release
}

// TestStopWithin: against a real apiserver, a working informer's Shutdown
// returns well within probe.ShutdownTimeout; with a handler that never
// returns, StopWithin gives up at its bound and names the handler's own
// function, with the informer's goroutines in the dump; once the handler
// returns, the same Shutdown completes.
func TestStopWithin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := localtest.Start(t, local.Options{})
	admin, err := c.RESTConfig(cluster.Admin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(admin).CoreV1().Pods("default").Create(ctx, pod("a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := c.RESTConfig(cluster.TestUser)
	if err != nil {
		t.Fatal(err)
	}
	start := func(t *testing.T, opts probe.Options) *probe.Probe {
		opts.Namespace = "default"
		p, err := probe.New(cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		p.Start()
		err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return len(p.Recorder.Snapshot().Events) > 0, nil
		})
		if err != nil {
			t.Fatalf("the handler was not called within 30 s: %v", err)
		}
		return p
	}

	t.Run("working informer", func(t *testing.T) {
		p := start(t, probe.Options{})
		begin := time.Now()
		if err := p.StopWithin(probe.ShutdownTimeout); err != nil {
			t.Fatal(err)
		}
		t.Logf("Shutdown returned in %s", time.Since(begin))
	})

	t.Run("handler that blocks forever", func(t *testing.T) {
		release := make(chan struct{})
		p := start(t, probe.Options{WrapHandler: func(h cache.ResourceEventHandler) cache.ResourceEventHandler {
			return blockingHandler{h, release}
		}})
		var once sync.Once
		unblock := func() { once.Do(func() { close(release) }) }
		defer p.Stop()
		defer unblock()
		const bound = 2 * time.Second // the mechanism, not the bound, is tested here
		begin := time.Now()
		err := p.StopWithin(bound)
		took := time.Since(begin)
		t.Logf("StopWithin(%s) returned after %s: %v", bound, took, err)
		if took < bound || took > bound+time.Second {
			t.Errorf("StopWithin(%s) returned after %s", bound, took)
		}
		stuck, ok := err.(*probe.StuckError)
		if !ok {
			t.Fatalf("StopWithin: %v (%T), want a *probe.StuckError", err, err)
		}
		for _, want := range []string{"factory.Shutdown() did not return within 2s: a handler is stuck", "probe_test.blockingHandler.OnAdd", "stuck_test.go:"} {
			if !strings.Contains(stuck.Error(), want) {
				t.Errorf("error %q does not contain %q", stuck.Error(), want)
			}
		}
		dump := string(stuck.Stuck)
		for _, want := range []string{"(*processorListener).run", "(*sharedInformerFactory).Shutdown", "probe_test.blockingHandler.OnAdd"} {
			if !strings.Contains(dump, want) {
				t.Errorf("the stuck goroutines' dump lacks %s:\n%s", want, dump)
			}
		}
		if strings.Contains(dump, "testing.tRunner") {
			t.Errorf("the stuck goroutines' dump holds goroutines that are not the informer's:\n%s", dump)
		}
		if !strings.Contains(string(stuck.Dump()), "testing.tRunner") {
			t.Errorf("the full dump lacks the test's goroutines")
		}
		unblock()
		if err := p.StopWithin(probe.ShutdownTimeout); err != nil {
			t.Errorf("after the handler returned: %v", err)
		}
	})
}

// TestCallWithin: a call that does not return is reported at its bound,
// naming where it waits, with its goroutine and those it started in the
// dump and no other; one that returns is not.
func TestCallWithin(t *testing.T) {
	if err := probe.CallWithin("a quick call", time.Second, func() {}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	const bound = 200 * time.Millisecond
	begin := time.Now()
	err := probe.CallWithin("the requests", bound, func() { waitForRelease(release) })
	if took := time.Since(begin); took < bound || took > bound+time.Second {
		t.Errorf("CallWithin(%s) returned after %s", bound, took)
	}
	stuck, ok := err.(*probe.StuckError)
	if !ok {
		t.Fatalf("CallWithin: %v (%T), want a *probe.StuckError", err, err)
	}
	if want := "the requests did not return within 200ms: goroutine "; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "probe_test.waitForRelease (") {
		t.Errorf("error %q: want %q... naming probe_test.waitForRelease", err, want)
	}
	if !strings.Contains(string(stuck.Stuck), "probe_test.waitForRelease") || strings.Contains(string(stuck.Stuck), "testing.tRunner") {
		t.Errorf("the stuck goroutines' dump:\n%s", stuck.Stuck)
	}
}

func waitForRelease(release <-chan struct{}) { <-release }
