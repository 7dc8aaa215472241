package pool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
)

// fakeCluster is a cluster that does nothing.
type fakeCluster struct{}

func (fakeCluster) Name() string                                  { return "fake" }
func (fakeCluster) RESTConfig(cluster.User) (*rest.Config, error) { return &rest.Config{}, nil }
func (fakeCluster) KubeconfigPath(cluster.User) (string, error)   { return "", nil }
func (fakeCluster) ArtifactsDir() string                          { return "" }
func (fakeCluster) Close(context.Context) error                   { return nil }
func (fakeCluster) APIServerAddrs() []string                      { return nil }
func (fakeCluster) RESTConfigFor(cluster.User, string) (*rest.Config, error) {
	return &rest.Config{}, nil
}

// noHarness gives starts an empty harness.
func noHarness(string) cluster.Harness { return cluster.Harness{} }

// TestStartErrors: a start that failed on its own is not retried (every
// spec gets the same error), but one cut short by the asking spec's
// context is: the next spec starts the cluster (issue 17, "Existing caches
// the first context's error forever").
func TestStartErrors(t *testing.T) {
	starts := 0
	p := Shared(cluster.Backend{Name: "test-shared-interrupted", Shared: true,
		Start: func(ctx context.Context, _ cluster.Spec, _ cluster.Harness) (cluster.Cluster, error) {
			starts++
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return fakeCluster{}, nil
		}}, nil, noHarness)
	interrupted, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := p.Get(interrupted, cluster.Spec{}); err == nil {
		t.Fatal("a start with an ended context succeeded")
	}
	if c, started, err := p.Get(context.Background(), cluster.Spec{}); err != nil || c == nil || !started {
		t.Fatalf("after an interrupted start, the next spec's start: %v, %v, %v", c, started, err)
	}
	if _, started, err := p.Get(context.Background(), cluster.Spec{}); err != nil || starts != 2 || started {
		t.Errorf("a started cluster is shared: %d starts, started %v, %v", starts, started, err)
	}

	failures := 0
	broken := Shared(cluster.Backend{Name: "test-shared-broken", Shared: true,
		Start: func(context.Context, cluster.Spec, cluster.Harness) (cluster.Cluster, error) {
			failures++
			return nil, errors.New("no such cluster")
		}}, nil, noHarness)
	for range 2 {
		if _, _, err := broken.Get(context.Background(), cluster.Spec{}); err == nil || !strings.Contains(err.Error(), "no such cluster") {
			t.Errorf("start error: %v", err)
		}
	}
	if failures != 1 {
		t.Errorf("a start that failed on its own was tried %d times, want once", failures)
	}
}

// TestClientSideKey: specs share a cluster only with specs asking for the
// same cluster.Spec.
func TestClientSideKey(t *testing.T) {
	d := cluster.Backend{Name: "local"}
	specs := []cluster.Spec{{}, {APIServers: 2}, {Profile: "goaway"}, {APIServers: 2, Profile: "goaway"}, {EtcdLinks: true}}
	seen := map[string]cluster.Spec{}
	for _, s := range specs {
		k := ClientSideKey(d, s)
		if other, dup := seen[k]; dup {
			t.Errorf("%+v and %+v share the key %q", s, other, k)
		}
		seen[k] = s
	}
	if ClientSideKey(d, cluster.Spec{}) != ClientSideKey(d, cluster.Spec{APIServers: 1}) {
		t.Errorf("one apiserver asked as 0 or 1 gets two keys")
	}
}

// TestKey: on a Shared backend the specs of one apiserver share the
// backend's cluster (its key, the backend's name); specs of several share
// one of as many.
func TestKey(t *testing.T) {
	d := cluster.Backend{Name: "kind", Shared: true}
	for _, s := range []cluster.Spec{{}, {APIServers: 1}} {
		if k, spec, _ := Key(d, s); k != d.Name || spec != (cluster.Spec{}) {
			t.Errorf("%+v: key %q, spec %+v; want the backend's cluster", s, k, spec)
		}
	}
	k2, s2, _ := Key(d, cluster.Spec{APIServers: 2})
	k3, _, _ := Key(d, cluster.Spec{APIServers: 3})
	if k2 == d.Name || k2 == k3 || s2.APIServers != 2 {
		t.Errorf("keys %q, %q (spec %+v): want one cluster per number of apiservers", k2, k3, s2)
	}
	// A profile is a property of the cluster too, alone or with apiservers.
	kp, sp, _ := Key(d, cluster.Spec{Profile: "no-watch-cache"})
	k2p, s2p, what := Key(d, cluster.Spec{APIServers: 2, Profile: "fast-graceful-shutdown"})
	if kp == d.Name || sp != (cluster.Spec{Profile: "no-watch-cache"}) || k2p == k2 || k2p == kp ||
		s2p != (cluster.Spec{APIServers: 2, Profile: "fast-graceful-shutdown"}) || !strings.Contains(what, "2 apiservers and kube-apiserver flag profile fast-graceful-shutdown") {
		t.Errorf("profile keys %q (%+v), %q (%+v, %q): want one cluster per profile and number of apiservers", kp, sp, k2p, s2p, what)
	}
	if k, sd, _ := Key(d, cluster.Spec{Profile: "default"}); k != d.Name || sd != (cluster.Spec{}) {
		t.Errorf("the default profile: key %q, spec %+v; want the backend's cluster", k, sd)
	}
	// So are etcd links: the cluster is started with them.
	kl, sl, _ := Key(d, cluster.Spec{APIServers: 2, EtcdLinks: true})
	if kl == k2 || sl != (cluster.Spec{APIServers: 2, EtcdLinks: true}) {
		t.Errorf("etcd links: key %q (%+v); want a cluster of its own, started with them", kl, sl)
	}
	// Unless the backend adds them to a running cluster (Get links it).
	d.EtcdLinksOnDemand = true
	if kd, sd, _ := Key(d, cluster.Spec{APIServers: 2, EtcdLinks: true}); kd != k2 || sd != s2 {
		t.Errorf("etcd links on demand: key %q (%+v); want the two apiservers' cluster %q (%+v)", kd, sd, k2, s2)
	}
}

// linkable is a cluster that adds etcd links on demand.
type linkable struct {
	fakeCluster
	links *int
}

func (l linkable) LinkEtcd(context.Context) error { *l.links++; return nil }
func (l linkable) EtcdLink(int) (*faultproxy.Proxy, error) {
	if *l.links == 0 {
		return nil, errors.New("no etcd links")
	}
	return &faultproxy.Proxy{}, nil
}

// TestEtcdLinksOnDemand: on a backend that adds etcd links on demand, a
// spec asking for them joins the cluster of its other needs and has it
// linked once, the linking counted as a start; a cluster that cannot link
// is an error naming it.
func TestEtcdLinksOnDemand(t *testing.T) {
	starts, links := 0, 0
	p := Shared(cluster.Backend{Name: "test-links", Shared: true, EtcdLinksOnDemand: true,
		Start: func(context.Context, cluster.Spec, cluster.Harness) (cluster.Cluster, error) {
			starts++
			return linkable{links: &links}, nil
		}}, nil, noHarness)
	ctx := context.Background()
	if _, started, err := p.Get(ctx, cluster.Spec{}); err != nil || !started {
		t.Fatalf("first Get: started %v, %v", started, err)
	}
	if _, started, err := p.Get(ctx, cluster.Spec{EtcdLinks: true}); err != nil || !started || links != 1 {
		t.Fatalf("Get with etcd links: started %v, %d links, %v; want linked, counted as a start", started, links, err)
	}
	if _, started, err := p.Get(ctx, cluster.Spec{EtcdLinks: true}); err != nil || started || links != 1 || starts != 1 {
		t.Errorf("Get with etcd links again: started %v, %d links, %d starts, %v; want the linked cluster", started, links, starts, err)
	}
	cannot := Shared(cluster.Backend{Name: "test-no-links", Shared: true, EtcdLinksOnDemand: true,
		Start: func(context.Context, cluster.Spec, cluster.Harness) (cluster.Cluster, error) {
			return fakeCluster{}, nil
		}}, nil, noHarness)
	if _, _, err := cannot.Get(ctx, cluster.Spec{EtcdLinks: true}); err == nil || !strings.Contains(err.Error(), "cluster.EtcdLinker") {
		t.Errorf("a cluster that cannot link: %v, want an error naming cluster.EtcdLinker", err)
	}
}

// readyzCluster is a cluster whose one apiserver is srv.
type readyzCluster struct {
	fakeCluster
	host string
}

func (c readyzCluster) RESTConfig(cluster.User) (*rest.Config, error) {
	return &rest.Config{Host: c.host}, nil
}

// TestHealthy: a kept cluster is healthy when its apiserver answers
// /readyz with 200, asked without the bootstrap-reconciling checks;
// otherwise the error carries the answer, and Ready says the cluster is
// unhealthy.
func TestHealthy(t *testing.T) {
	ready := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || !slices.Equal(r.URL.Query()["exclude"], cluster.BootstrapReconcileChecks) || !ready {
			http.Error(w, "[-]etcd failed: reason withheld", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	c := readyzCluster{host: srv.URL}
	if err := Ready(context.Background(), c); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	ready = false
	if err := Healthy(context.Background(), c); err == nil || !strings.Contains(err.Error(), "readyz") {
		t.Fatalf("Healthy of an unready apiserver = %v, want an error naming /readyz", err)
	}
	if err := Ready(context.Background(), c); err == nil || !strings.Contains(err.Error(), "unhealthy") {
		t.Fatalf("Ready of an unready apiserver = %v, want an error saying unhealthy", err)
	}
}

// fakeVersioned is a cluster that tells its version.
type fakeVersioned struct{ fakeCluster }

func (fakeVersioned) ServerVersion() string { return "v1.36.3" }

// TestClustersPerProfile: a Shared backend's specs share one cluster per
// flag profile ("" and profile "default" being one), started with that
// profile; what one cluster tells (its version) answers for the backend
// before the one without a profile starts; after Close no cluster starts,
// a profile's never asked for included.
func TestClustersPerProfile(t *testing.T) {
	var started []string
	p := Shared(cluster.Backend{Name: "test-shared-profiles", Shared: true,
		Start: func(_ context.Context, spec cluster.Spec, _ cluster.Harness) (cluster.Cluster, error) {
			started = append(started, spec.Profile)
			return fakeVersioned{}, nil
		}}, nil, noHarness)
	start := func(spec cluster.Spec) error {
		_, _, err := p.Get(context.Background(), spec)
		return err
	}
	for _, spec := range []cluster.Spec{{Profile: "no-watch-cache"}, {Profile: "no-watch-cache"}, {Profile: "no-watch-cache+cbor"}} {
		if err := start(spec); err != nil {
			t.Fatal(err)
		}
	}
	if p.Version() != "v1.36.3" {
		t.Errorf("with only profile clusters started: Version %q; want theirs", p.Version())
	}
	if p.Started(cluster.Spec{}) != nil || p.Started(cluster.Spec{Profile: "no-watch-cache"}) == nil {
		t.Errorf("Started: want the no-watch-cache cluster only")
	}
	for _, spec := range []cluster.Spec{{}, {Profile: "default"}, {APIServers: 1}} {
		if err := start(spec); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"no-watch-cache", "no-watch-cache+cbor", ""}; !slices.Equal(started, want) {
		t.Errorf("clusters started with profiles %q, want %q (one per profile)", started, want)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := start(cluster.Spec{Profile: "goaway"}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("a profile's cluster after Close: %v, want refused as closed", err)
	}
	if len(started) != 3 {
		t.Errorf("started %q after Close", started[3:])
	}
}

// namedCluster records its Close.
type namedCluster struct {
	fakeCluster
	name   string
	closed *[]string
}

func (c namedCluster) Name() string { return c.name }
func (c namedCluster) Close(context.Context) error {
	*c.closed = append(*c.closed, c.name)
	return nil
}

// TestSharedLimitCountsAPIServers: SharedLimit counts kube-apiservers (kind
// nodes), so a cluster of two takes the room of two of one, and one larger
// than the limit runs alone.
func TestSharedLimitCountsAPIServers(t *testing.T) {
	var started, closed []string
	p := Shared(cluster.Backend{Name: "test-shared-limit-apiservers", Shared: true, SharedLimit: func(cluster.Env) int { return 2 },
		Start: func(_ context.Context, spec cluster.Spec, _ cluster.Harness) (cluster.Cluster, error) {
			name := fmt.Sprintf("c%d-%s", max(spec.APIServers, 1), spec.Profile)
			started = append(started, name)
			return namedCluster{name: name, closed: &closed}, nil
		}}, nil, noHarness)
	for _, spec := range []cluster.Spec{{}, {Profile: "a"}, {APIServers: 2}, {}, {APIServers: 3}} {
		if _, _, err := p.Get(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
	}
	wantStarted := []string{"c1-", "c1-a", "c2-", "c1-", "c3-"}
	wantClosed := []string{"c1-", "c1-a", "c2-", "c1-"}
	if !slices.Equal(started, wantStarted) || !slices.Equal(closed, wantClosed) {
		t.Errorf("started %q, closed %q; want started %q, closed %q", started, closed, wantStarted, wantClosed)
	}
}

// TestSharedLimitClosesLeastRecentlyUsed: a backend's SharedLimit bounds
// the clusters a process keeps at once; starting one more closes the
// least recently used, which a later spec starts again. Its negative
// control: without a limit nothing is closed.
func TestSharedLimitClosesLeastRecentlyUsed(t *testing.T) {
	for _, limit := range []int{2, 0} {
		var started, closed []string
		p := Shared(cluster.Backend{Name: fmt.Sprintf("test-shared-limit-%d", limit), Shared: true, SharedLimit: func(cluster.Env) int { return limit },
			Start: func(_ context.Context, spec cluster.Spec, _ cluster.Harness) (cluster.Cluster, error) {
				started = append(started, spec.Profile)
				return namedCluster{name: "c-" + spec.Profile, closed: &closed}, nil
			}}, nil, noHarness)
		for _, profile := range []string{"", "a", "", "b", "a", "a"} {
			if _, _, err := p.Get(context.Background(), cluster.Spec{Profile: profile}); err != nil {
				t.Fatal(err)
			}
		}
		wantStarted, wantClosed := []string{"", "a", "b", "a"}, []string{"c-a", "c-"}
		if limit == 0 {
			wantStarted, wantClosed = []string{"", "a", "b"}, nil
		}
		if !slices.Equal(started, wantStarted) || !slices.Equal(closed, wantClosed) {
			t.Errorf("SharedLimit %d: started %q, closed %q; want started %q, closed %q", limit, started, closed, wantStarted, wantClosed)
		}
	}
}

// TestClientSidePool: the client-side pool starts a cluster with all a
// spec asks (etcd links included) and shares it among specs asking for
// the same cluster.Spec.
func TestClientSidePool(t *testing.T) {
	var started []cluster.Spec
	p := ClientSide(cluster.Backend{Name: "test-client-side",
		Start: func(_ context.Context, spec cluster.Spec, _ cluster.Harness) (cluster.Cluster, error) {
			started = append(started, spec)
			return fakeCluster{}, nil
		}}, nil, noHarness)
	for _, spec := range []cluster.Spec{{}, {EtcdLinks: true}, {}, {EtcdLinks: true}, {APIServers: 2, Profile: "goaway"}} {
		if _, _, err := p.Get(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
	}
	if want := []cluster.Spec{{}, {EtcdLinks: true}, {APIServers: 2, Profile: "goaway"}}; !slices.Equal(started, want) {
		t.Errorf("started %+v, want %+v", started, want)
	}
}
