package e2e

import (
	"context"
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
	setenv(t, EnvBackend, "")
	if d, err := Backend(); err != nil || d.Name != DefaultBackend {
		t.Errorf("unset: got %q, %v; want %q", d.Name, err, DefaultBackend)
	}
	setenv(t, EnvBackend, "existing")
	if d, err := Backend(); err != nil || d.Name != "existing" || !d.Shared {
		t.Errorf("existing: got %+v, %v", d.Name, err)
	}
	setenv(t, EnvBackend, "no-such")
	_, err := Backend()
	if err == nil || !strings.Contains(err.Error(), "local") || !strings.Contains(err.Error(), "existing") {
		t.Errorf("want an error listing the registered backends, got %v", err)
	}
}

func TestExistingSupports(t *testing.T) {
	setenv(t, EnvBackend, "existing")
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

// TestArtifactsVariable: package report and the plain Go tests' clusters
// (localtest, which may not import report) name the artifacts directory by
// the same variable.
func TestArtifactsVariable(t *testing.T) {
	if localtest.EnvArtifacts != report.EnvArtifacts {
		t.Fatalf("localtest.EnvArtifacts %q, report.EnvArtifacts %q", localtest.EnvArtifacts, report.EnvArtifacts)
	}
}
