package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e/probe"
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
