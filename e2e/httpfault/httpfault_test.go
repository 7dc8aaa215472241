package httpfault_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/cluster/local/localtest"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
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

// TestRetryAfterDecidesWhoRetries: with the Retry-After header chosen,
// client-go v0.36's REST client (rest/request.go Watch, with_retry.go
// IsNextRetry and checkWait) retries a 429 itself only when it carries
// Retry-After, at most 10 times, and hands the 11th to its caller; a 429
// without Retry-After reaches the caller at once. Retry-After: 0 keeps the
// test fast (the client waits 0 s between retries). No cluster: a server
// that would answer every watch with an empty stream, behind the injector.
func TestRetryAfterDecidesWhoRetries(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cases := []struct {
		name       string
		answers    int
		retryAfter int
		wantSent   int  // answers the client took before giving up or reaching the server
		want429    bool // the caller gets the 429
	}{
		{"no Retry-After: the caller gets the first 429", 2, httpfault.NoRetryAfter, 1, true},
		{"Retry-After: the REST client retries 10 times, the caller gets the 11th", 11, 0, 11, true},
		{"Retry-After: 10 answers are absorbed, the 11th attempt reaches the server", 10, 0, 10, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			served.Store(0)
			in := &httpfault.Injector{}
			restore, answered := in.FailRequestsRetryAfter(httpfault.Watches, tc.answers, 429, metav1.StatusReasonTooManyRequests, "slow down", tc.retryAfter)
			defer restore()
			cs, err := kubernetes.NewForConfig(in.Instrument(&rest.Config{Host: srv.URL}))
			if err != nil {
				t.Fatal(err)
			}
			before := time.Now()
			w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
			if w != nil {
				w.Stop()
			}
			if got := apierrors.IsTooManyRequests(err); got != tc.want429 {
				t.Errorf("caller got a 429: %v (err %v), want %v", got, err, tc.want429)
			}
			if answered() != tc.wantSent {
				t.Errorf("injected answers taken %d, want %d", answered(), tc.wantSent)
			}
			wantServed := int32(1) // the attempt after the absorbed answers
			if tc.want429 {
				wantServed = 0
			}
			if served.Load() != wantServed {
				t.Errorf("requests that reached the server %d, want %d", served.Load(), wantServed)
			}
			if last := in.LastAnswer(); last.Before(before) {
				t.Errorf("LastAnswer %v is before the request (%v)", last, before)
			}
		})
	}
}

// TestInjectedHeaders: FailRequests keeps sending Retry-After: 1 with a 429
// and none with other codes; TooManyRequestsAsInternalErrors turns a 429
// without Retry-After into a 500 and leaves one with Retry-After alone.
func TestInjectedHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	get := func(t *testing.T, cfg *rest.Config) *http.Response {
		t.Helper()
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Get(srv.URL + "/api/v1/pods?watch=true")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp
	}
	cases := []struct {
		name       string
		inject     func(*httpfault.Injector) (func(), func() int)
		broken     bool
		wantCode   int
		wantHeader string
	}{
		{"FailRequests 429", func(in *httpfault.Injector) (func(), func() int) {
			return in.FailRequests(httpfault.Watches, 1, 429, metav1.StatusReasonTooManyRequests, "slow down")
		}, false, 429, "1"},
		{"FailRequests 500", func(in *httpfault.Injector) (func(), func() int) {
			return in.FailRequests(httpfault.Watches, 1, 500, metav1.StatusReasonInternalError, "boom")
		}, false, 500, ""},
		{"Retry-After 7", func(in *httpfault.Injector) (func(), func() int) {
			return in.FailRequestsRetryAfter(httpfault.Watches, 1, 429, metav1.StatusReasonTooManyRequests, "slow down", 7)
		}, false, 429, "7"},
		{"broken stack, 429 without Retry-After", func(in *httpfault.Injector) (func(), func() int) {
			return in.FailRequestsRetryAfter(httpfault.Watches, 1, 429, metav1.StatusReasonTooManyRequests, "slow down", httpfault.NoRetryAfter)
		}, true, 500, ""},
		{"broken stack, 429 with Retry-After", func(in *httpfault.Injector) (func(), func() int) {
			return in.FailRequests(httpfault.Watches, 1, 429, metav1.StatusReasonTooManyRequests, "slow down")
		}, true, 429, "1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := &httpfault.Injector{}
			restore, _ := tc.inject(in)
			defer restore()
			cfg := in.Instrument(&rest.Config{Host: srv.URL})
			if tc.broken {
				cfg = httpfault.TooManyRequestsAsInternalErrors(cfg)
			}
			resp := get(t, cfg)
			if resp.StatusCode != tc.wantCode || resp.Header.Get("Retry-After") != tc.wantHeader {
				t.Errorf("got %d with Retry-After %q, want %d with %q", resp.StatusCode, resp.Header.Get("Retry-After"), tc.wantCode, tc.wantHeader)
			}
		})
	}
}
