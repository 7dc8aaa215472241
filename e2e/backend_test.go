package e2e

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
	// The backends the tests select, registered by their own packages.
	_ "github.com/informer-conformance/informer-conformance/cluster/backends"
	"github.com/informer-conformance/informer-conformance/cluster/local/localtest"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
)

func TestBackendSelection(t *testing.T) {
	t.Setenv(EnvBackend, "")
	if d, err := Backend(); err != nil || d.Name != DefaultBackend {
		t.Errorf("unset: got %q, %v; want %q", d.Name, err, DefaultBackend)
	}
	t.Setenv(EnvBackend, "existing")
	if d, err := Backend(); err != nil || d.Name != "existing" || !d.Shared {
		t.Errorf("existing: got %+v, %v", d.Name, err)
	}
	t.Setenv(EnvBackend, "no-such")
	_, err := Backend()
	if err == nil || !strings.Contains(err.Error(), "local") || !strings.Contains(err.Error(), "existing") {
		t.Errorf("want an error listing the registered backends, got %v", err)
	}
}

func TestExistingSupports(t *testing.T) {
	t.Setenv(EnvBackend, "existing")
	d, err := Backend()
	if err != nil {
		t.Fatal(err)
	}
	for spec, want := range map[cluster.Spec]string{
		{}:                                   "",
		{APIServers: 1, Profile: "default"}:  "",
		{APIServers: 2}:                      "2 apiservers of its own",
		{Profile: "no-watch-cache"}:          "kube-apiserver flags (profile no-watch-cache)",
		{APIServers: 2, Profile: "goaway+x"}: "2 apiservers of its own, kube-apiserver flags (profile goaway+x)",
		{EtcdLinks: true}:                    "a fault point between each kube-apiserver and etcd",
	} {
		if got := d.Supports(spec); got != want {
			t.Errorf("Supports(%+v) = %q, want %q", spec, got, want)
		}
	}
}

// fakeCluster has only what every cluster has.
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

// fakeAPIServers can restart n apiservers.
type fakeAPIServers struct {
	fakeCluster
	n int
}

func (f fakeAPIServers) NumAPIServers() int                                          { return f.n }
func (fakeAPIServers) APIServerURL(int) string                                       { return "" }
func (fakeAPIServers) StopAPIServer(context.Context, int, cluster.StopMode) error    { return nil }
func (fakeAPIServers) StartAPIServer(context.Context, int) error                     { return nil }
func (fakeAPIServers) RestartAPIServer(context.Context, int, cluster.StopMode) error { return nil }

func TestCapabilityGaps(t *testing.T) {
	labels := []string{"compaction", "capability:apiserver-restart", "capability:ha", "capability:etcd-compaction", "capability:typo"}
	for _, tc := range []struct {
		c    cluster.Cluster
		want string
	}{
		{fakeCluster{}, "apiserver-restart, ha, etcd-compaction, typo (an unknown capability label)"},
		{fakeAPIServers{n: 1}, "ha, etcd-compaction, typo (an unknown capability label)"},
		{fakeAPIServers{n: 2}, "etcd-compaction, typo (an unknown capability label)"},
	} {
		if got := strings.Join(capabilityGaps(tc.c, labels), ", "); got != tc.want {
			t.Errorf("%T: got %q, want %q", tc.c, got, tc.want)
		}
	}
}

func TestBackendMismatch(t *testing.T) {
	if got := backendMismatch("local", []string{"smoke", "backend:local"}); got != "" {
		t.Errorf("local on local: %q", got)
	}
	if got := backendMismatch("existing", []string{"smoke"}); got != "" {
		t.Errorf("no backend label: %q", got)
	}
	if got, want := backendMismatch("existing", []string{"backend:local"}), "the local backend's own processes"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestWidgetsResourceIsInstalled: the stack's resource is the one the
// backends install.
func TestWidgetsResourceIsInstalled(t *testing.T) {
	crs, err := cluster.CRDResources()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(crs, probe.WidgetsResource) {
		t.Errorf("probe.WidgetsResource %v is not among the installed CRDs' resources %v", probe.WidgetsResource, crs)
	}
}

// TestSharedClusterStartErrors: a shared cluster's start that failed on its
// own is not retried (every spec gets the same error), but one cut short by
// the asking spec's context is: the next spec starts the cluster. Before
// 2eeca5a the first error, an interrupted start's included, was kept for
// the life of the process (issue 17, "Existing caches the first context's
// error forever").
func TestSharedClusterStartErrors(t *testing.T) {
	starts := 0
	d := cluster.Backend{Name: "test-shared-interrupted", Shared: true,
		Start: func(ctx context.Context, _ cluster.Spec, _ cluster.Harness) (cluster.Cluster, error) {
			starts++
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return fakeCluster{}, nil
		}}
	t.Cleanup(func() { sharedMu.Lock(); delete(shared, d.Name); sharedMu.Unlock() })
	interrupted, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sharedCluster(interrupted, d); err == nil {
		t.Fatal("a start with an ended context succeeded")
	}
	if c, err := sharedCluster(context.Background(), d); err != nil || c == nil {
		t.Fatalf("after an interrupted start, the next spec's start: %v, %v", c, err)
	}
	if _, err := sharedCluster(context.Background(), d); err != nil || starts != 2 {
		t.Errorf("a started cluster is shared: %d starts, %v", starts, err)
	}

	failures := 0
	broken := cluster.Backend{Name: "test-shared-broken", Shared: true,
		Start: func(context.Context, cluster.Spec, cluster.Harness) (cluster.Cluster, error) {
			failures++
			return nil, errors.New("no such cluster")
		}}
	t.Cleanup(func() { sharedMu.Lock(); delete(shared, broken.Name); sharedMu.Unlock() })
	for range 2 {
		if _, err := sharedCluster(context.Background(), broken); err == nil || !strings.Contains(err.Error(), "no such cluster") {
			t.Errorf("start error: %v", err)
		}
	}
	if failures != 1 {
		t.Errorf("a start that failed on its own was tried %d times, want once", failures)
	}
}

// TestArtifactsVariable: package report and the plain Go tests' clusters
// (localtest, which may not import report) name the artifacts directory by
// the same variable.
func TestArtifactsVariable(t *testing.T) {
	if localtest.EnvArtifacts != report.EnvArtifacts {
		t.Fatalf("localtest.EnvArtifacts %q, report.EnvArtifacts %q", localtest.EnvArtifacts, report.EnvArtifacts)
	}
}

// TestClientSideKey: specs share a cluster only with specs asking for the
// same cluster.Spec.
func TestClientSideKey(t *testing.T) {
	d := cluster.Backend{Name: "local"}
	specs := []cluster.Spec{{}, {APIServers: 2}, {Profile: "goaway"}, {APIServers: 2, Profile: "goaway"}, {EtcdLinks: true}}
	seen := map[string]cluster.Spec{}
	for _, s := range specs {
		k := clientSideKey(d, s)
		if other, dup := seen[k]; dup {
			t.Errorf("%+v and %+v share the key %q", s, other, k)
		}
		seen[k] = s
	}
	if clientSideKey(d, cluster.Spec{}) != clientSideKey(d, cluster.Spec{APIServers: 1}) {
		t.Errorf("one apiserver asked as 0 or 1 gets two keys")
	}
}

// TestSharedKey: on a Shared backend the specs of one apiserver share the
// backend's cluster (its key, the backend's name, as sharedVersion reads
// it); specs of several share one of as many.
func TestSharedKey(t *testing.T) {
	d := cluster.Backend{Name: "kind", Shared: true}
	for _, s := range []cluster.Spec{{}, {APIServers: 1}} {
		if k, spec, _ := sharedKey(d, s); k != d.Name || spec != (cluster.Spec{}) {
			t.Errorf("%+v: key %q, spec %+v; want the backend's cluster", s, k, spec)
		}
	}
	k2, s2, _ := sharedKey(d, cluster.Spec{APIServers: 2})
	k3, _, _ := sharedKey(d, cluster.Spec{APIServers: 3})
	if k2 == d.Name || k2 == k3 || s2.APIServers != 2 {
		t.Errorf("keys %q, %q (spec %+v): want one cluster per number of apiservers", k2, k3, s2)
	}
	// A profile is a property of the cluster too, alone or with apiservers.
	kp, sp, _ := sharedKey(d, cluster.Spec{Profile: "no-watch-cache"})
	k2p, s2p, what := sharedKey(d, cluster.Spec{APIServers: 2, Profile: "fast-graceful-shutdown"})
	if kp == d.Name || sp != (cluster.Spec{Profile: "no-watch-cache"}) || k2p == k2 || k2p == kp ||
		s2p != (cluster.Spec{APIServers: 2, Profile: "fast-graceful-shutdown"}) || !strings.Contains(what, "2 apiservers and kube-apiserver flag profile fast-graceful-shutdown") {
		t.Errorf("profile keys %q (%+v), %q (%+v, %q): want one cluster per profile and number of apiservers", kp, sp, k2p, s2p, what)
	}
	if k, sd, _ := sharedKey(d, cluster.Spec{Profile: "default"}); k != d.Name || sd != (cluster.Spec{}) {
		t.Errorf("the default profile: key %q, spec %+v; want the backend's cluster", k, sd)
	}
	// So are etcd links: the cluster is started with them.
	kl, sl, _ := sharedKey(d, cluster.Spec{APIServers: 2, EtcdLinks: true})
	if kl == k2 || sl != (cluster.Spec{APIServers: 2, EtcdLinks: true}) {
		t.Errorf("etcd links: key %q (%+v); want a cluster of its own, started with them", kl, sl)
	}
	// Unless the backend adds them to a running cluster (linkShared).
	d.EtcdLinksOnDemand = true
	if kd, sd, _ := sharedKey(d, cluster.Spec{APIServers: 2, EtcdLinks: true}); kd != k2 || sd != s2 {
		t.Errorf("etcd links on demand: key %q (%+v); want the two apiservers' cluster %q (%+v)", kd, sd, k2, s2)
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

// TestHealthy: a shared cluster is healthy when its apiserver answers
// /readyz with 200, asked without the bootstrap-reconciling checks;
// otherwise the error carries the answer.
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
	if err := healthy(context.Background(), c); err != nil {
		t.Fatalf("healthy: %v", err)
	}
	ready = false
	if err := healthy(context.Background(), c); err == nil || !strings.Contains(err.Error(), "readyz") {
		t.Fatalf("healthy of an unready apiserver = %v, want an error naming /readyz", err)
	}
}

// fakeVersioned is a cluster that tells its version.
type fakeVersioned struct{ fakeCluster }

func (fakeVersioned) ServerVersion() string { return "v1.36.3" }

// TestSharedClustersPerProfile: a Shared backend's specs share one
// cluster per flag profile ("" and profile "default" being one), started
// with that profile; what one cluster tells (version, capabilities)
// answers for the backend before the one without a profile starts; after
// CloseSharedClusters no cluster starts, a profile's never asked for
// included.
func TestSharedClustersPerProfile(t *testing.T) {
	t.Setenv(EnvBackend, "existing") // CloseSharedClusters reads it: a backend with nothing to release
	var started []string
	d := cluster.Backend{Name: "test-shared-profiles", Shared: true,
		Start: func(_ context.Context, spec cluster.Spec, _ cluster.Harness) (cluster.Cluster, error) {
			started = append(started, spec.Profile)
			return fakeVersioned{}, nil
		}}
	forgetShared(t, d)
	start := func(spec cluster.Spec) error {
		key, with, _ := sharedKey(d, spec)
		_, _, err := sharedClusterFor(context.Background(), d, key, with, "test")
		return err
	}
	for _, spec := range []cluster.Spec{{Profile: "no-watch-cache"}, {Profile: "no-watch-cache"}, {Profile: "no-watch-cache+cbor"}} {
		if err := start(spec); err != nil {
			t.Fatal(err)
		}
	}
	if sharedVersion(d) != "v1.36.3" {
		t.Errorf("with only profile clusters started: sharedVersion %q; want theirs", sharedVersion(d))
	}
	for _, spec := range []cluster.Spec{{}, {Profile: "default"}, {APIServers: 1}} {
		if err := start(spec); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"no-watch-cache", "no-watch-cache+cbor", ""}; !slices.Equal(started, want) {
		t.Errorf("clusters started with profiles %q, want %q (one per profile)", started, want)
	}
	if err := CloseSharedClusters(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := start(cluster.Spec{Profile: "goaway"}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("a profile's cluster after CloseSharedClusters: %v, want refused as closed", err)
	}
	if len(started) != 3 {
		t.Errorf("started %q after CloseSharedClusters", started[3:])
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
	d := cluster.Backend{Name: "test-shared-limit-apiservers", Shared: true, SharedLimit: 2,
		Start: func(_ context.Context, spec cluster.Spec, _ cluster.Harness) (cluster.Cluster, error) {
			name := fmt.Sprintf("c%d-%s", max(spec.APIServers, 1), spec.Profile)
			started = append(started, name)
			return namedCluster{name: name, closed: &closed}, nil
		}}
	forgetShared(t, d)
	for _, spec := range []cluster.Spec{{}, {Profile: "a"}, {APIServers: 2}, {}, {APIServers: 3}} {
		key, start, _ := sharedKey(d, spec)
		if _, _, err := sharedClusterFor(context.Background(), d, key, start, "test"); err != nil {
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
		d := cluster.Backend{Name: fmt.Sprintf("test-shared-limit-%d", limit), Shared: true, SharedLimit: limit,
			Start: func(_ context.Context, spec cluster.Spec, _ cluster.Harness) (cluster.Cluster, error) {
				started = append(started, spec.Profile)
				return namedCluster{name: "c-" + spec.Profile, closed: &closed}, nil
			}}
		forgetShared(t, d)
		for _, profile := range []string{"", "a", "", "b", "a", "a"} {
			key, spec, _ := sharedKey(d, cluster.Spec{Profile: profile})
			if _, _, err := sharedClusterFor(context.Background(), d, key, spec, "test"); err != nil {
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

// forgetShared removes backend d's shared clusters from this process's
// registry when the test ends, and lets later tests start clusters again.
func forgetShared(t *testing.T, d cluster.Backend) {
	t.Cleanup(func() {
		sharedMu.Lock()
		defer sharedMu.Unlock()
		for k := range shared {
			if strings.HasPrefix(k, d.Name) {
				delete(shared, k)
			}
		}
		sharedOver = false
	})
}
