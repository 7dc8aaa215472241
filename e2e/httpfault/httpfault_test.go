package httpfault_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/cluster/local/localtest"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/e2e/probe"
)

// TestInjectedErrorsReachTheReflector: each injected answer reaches a real
// informer's reflector as the server's would, and the probe classifies what
// follows (client-go v0.36 tools/cache/reflector.go): an ERROR event 410 on
// a watch makes it relist (cause 410 Gone); 429 opening a watch makes it back
// off and watch again, no relist; 500 opening a watch makes it relist.
func TestInjectedErrorsReachTheReflector(t *testing.T) {
	// LIST-then-WATCH mode, so the informer opens resuming watches at once.
	clientfeaturestesting.SetFeatureDuringTest(t, features.WatchListClient, false)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := localtest.Start(t, local.Options{})
	user, err := c.RESTConfig(cluster.TestUser)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		inject func(*httpfault.Injector) (func(), func() int)
		times  int
		want   map[probe.Cause]int
	}{
		{"410 event on a watch", func(in *httpfault.Injector) (func(), func() int) {
			return in.EndWatchesWithError(httpfault.Watches, 1, 410, metav1.StatusReasonExpired, "too old resource version: 1 (2)")
		}, 1, map[probe.Cause]int{probe.CauseGone: 1}},
		{"429 opening a watch", func(in *httpfault.Injector) (func(), func() int) {
			return in.FailRequests(httpfault.Watches, 2, 429, metav1.StatusReasonTooManyRequests, "slow down")
		}, 2, map[probe.Cause]int{}},
		{"500 opening a watch", func(in *httpfault.Injector) (func(), func() int) {
			return in.FailRequests(httpfault.Watches, 1, 500, metav1.StatusReasonInternalError, "boom")
		}, 1, map[probe.Cause]int{probe.CauseInternalError: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := &httpfault.Injector{}
			restore, answered := tc.inject(in)
			defer restore()
			p, err := probe.New(in.Instrument(user), probe.Options{Namespace: "default"})
			if err != nil {
				t.Fatal(err)
			}
			p.Start()
			defer p.Stop()
			if err := p.WaitForSync(ctx); err != nil {
				t.Fatal(err)
			}
			// Done when every injection was answered and a real watch is open.
			err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				if answered() < tc.times {
					return false, nil
				}
				rs := p.Recorder.Snapshot().Requests
				last := rs[len(rs)-1]
				return last.Watch && last.Status == 200 && last.End.IsZero(), nil
			})
			rec := p.Recorder.Snapshot()
			if err != nil {
				t.Fatalf("injections answered %d/%d, no real watch open: %+v", answered(), tc.times, rec.Requests)
			}
			got := probe.CountByCause(probe.Reinitialisations(rec))
			if len(got) != len(tc.want) {
				t.Errorf("re-initialisations %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("re-initialisations %v, want %v", got, tc.want)
				}
			}
			for _, r := range rec.Requests {
				t.Logf("#%d watch=%v rv=%s status=%d errorCode=%d err=%q", r.ID, r.Watch, r.ResourceVersion, r.Status, r.ErrorCode, r.Err)
			}
		})
	}
}
