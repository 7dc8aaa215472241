package local_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/cluster/local/localtest"
	"github.com/informer-conformance/informer-conformance/cluster/pool"
)

// bootstrapWrites are the etcd key prefixes the BootstrapReconcileChecks'
// hooks write (RBAC roles and bindings, priority classes).
var bootstrapWrites = []string{
	"/registry/clusterroles/", "/registry/clusterrolebindings/",
	"/registry/roles/", "/registry/rolebindings/", "/registry/priorityclasses/",
}

// TestTemplateHooksWriteNothing: a cluster started from the bootstrapped
// etcd is handed out before kube-apiserver's bootstrap-reconciling hooks
// pass (cluster.BootstrapReconcileChecks); until they pass and /readyz is
// ok, they write nothing: what Start hands out is what a full /readyz
// would have. A cluster on a fresh etcd (FreshEtcd) is handed out only
// once /readyz is ok, and so is any restarted apiserver.
func TestTemplateHooksWriteNothing(t *testing.T) {
	localtest.Start(t, local.Options{}) // makes the template if there is none
	c := startCluster(t, local.Options{})
	ctx := testCtx(t)
	ec, err := c.EtcdClient()
	if err != nil {
		t.Fatal(err)
	}
	rev, err := c.EtcdRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cs := clientset(t, c, cluster.Admin, c.APIServerURL(0))
	if err := wait.PollUntilContextTimeout(ctx, pollInterval, convergeTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("/readyz not ok within %s: %v", convergeTimeout, err)
	}
	for _, prefix := range bootstrapWrites {
		resp, err := ec.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithMinModRev(rev+1))
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range resp.Kvs {
			t.Errorf("%s written at revision %d, after Start returned at revision %d", kv.Key, kv.ModRevision, rev)
		}
	}
	// Everything the cluster holds for the specs is there at once.
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{}); err != nil {
		t.Errorf("bootstrap role: %v", err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, cluster.TestUserRole, metav1.GetOptions{}); err != nil {
		t.Errorf("test user's role: %v", err)
	}
}

// TestFreshEtcdBootstraps: FreshEtcd starts on an empty etcd that
// kube-apiserver bootstraps, and the cluster is only handed out once its
// /readyz is ok; the HA apiservers join one by one.
func TestFreshEtcdBootstraps(t *testing.T) {
	c := startCluster(t, local.Options{FreshEtcd: true, APIServers: 2})
	ctx := testCtx(t)
	for i := range c.NumAPIServers() {
		cs := clientset(t, c, cluster.Admin, c.APIServerURL(i))
		if _, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
			t.Errorf("apiserver %d: /readyz right after Start: %v", i, err)
		}
	}
}

// TestSparesHandOutNewClusters: pool.Spares over the local backend. The
// second Take for a spec gets the cluster started in the background after
// the first, a new one; a Take for another spec starts its own; Close
// stops the spare kept, and every process of the spares is gone.
func TestSparesHandOutNewClusters(t *testing.T) {
	localtest.SkipIfShort(t)
	ctx := testCtx(t)
	d, ok := cluster.LookupBackend("local")
	if !ok {
		t.Fatal("the local backend is not registered")
	}
	s := &pool.Spares{Backend: d, ArtifactsDir: localtest.ArtifactsDir(t), Errors: func(err error) { t.Error(err) }}
	h := cluster.Harness{ArtifactsDir: localtest.ArtifactsDir(t) + "/taken", Progress: io.Discard}
	take := func(spec cluster.Spec, want ...pool.Taken) cluster.Cluster {
		t.Helper()
		c, how, err := s.Take(ctx, spec, h)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(want, how) {
			t.Errorf("Take(%+v) got a cluster %s, want one of %v", spec, how, want)
		}
		return c
	}
	a, b := cluster.Spec{}, cluster.Spec{APIServers: 2}
	first := take(a, pool.Started)
	second := take(a, pool.SpareReady, pool.SpareStarting)
	if first.Name() == second.Name() {
		t.Errorf("the spare is the cluster taken before: %s", first.Name())
	}
	if _, err := second.(*local.Cluster).EtcdRevision(ctx); err != nil {
		t.Errorf("the spare does not work: %v", err)
	}
	other := take(b, pool.Started)
	if running := children(t); len(running) < 7 { // 3 taken: 3 etcds and 4 kube-apiservers
		t.Fatalf("children sees %d processes of this test, want 7 or more: %v", len(running), running)
	}
	for _, c := range []cluster.Cluster{first, second, other} {
		if err := c.Close(ctx); err != nil {
			t.Error(err)
		}
	}
	// The spare for b is starting or started: Close ends it.
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Take(ctx, a, h); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Take after Close: got %v, want an error saying closed", err)
	}
	if left := children(t); len(left) > 0 {
		t.Errorf("processes of this test left running: %v", left)
	}
}

// children are the processes this test process started that still run
// (or are zombies not yet reaped), as "pid command".
func children(t *testing.T) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces; it ends at the last ')'.
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		left = append(left, strings.TrimSpace(s[:end+1]))
	}
	return left
}

// TestBrokenTemplateIsReplaced: a template that etcdutl cannot restore is
// removed, the cluster bootstraps an empty etcd, and keeps a new template.
func TestBrokenTemplateIsReplaced(t *testing.T) {
	// The binaries stay where they are: only the templates move.
	bins := startCluster(t, local.Options{FreshEtcd: true}).Binaries()
	t.Setenv(binaries.EnvCacheDir, t.TempDir())
	template, err := local.TemplateFile(bins, local.Profile{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(template), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(template, []byte("not an etcd snapshot"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, local.Options{Binaries: bins})
	if _, err := c.EtcdRevision(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(template)
	if err != nil {
		t.Fatalf("no new template: %v", err)
	}
	if string(b) == "not an etcd snapshot" {
		t.Error("the broken template is still there")
	}
}
