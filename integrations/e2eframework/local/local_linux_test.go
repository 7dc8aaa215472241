package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/support"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/integrations/e2eframework/local"
)

// testTimeout bounds one provider test (a first build of the binaries is
// minutes; cached, a create is seconds).
const testTimeout = 10 * time.Minute

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// TestProviderThroughEnvfuncs uses the provider exactly as e2e-framework's
// kind provider is used: envfuncs create, export logs and destroy it.
func TestProviderThroughEnvfuncs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local cluster")
	}
	ctx := testCtx(t)
	cfg := envconf.New()
	p := local.NewProvider()
	start := time.Now()
	ctx, err := envfuncs.CreateClusterWithOpts(p, "lifecycle", local.WithAPIServers(2), local.WithArtifactsDir(t.TempDir()))(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("create to ready (CreateCluster, with WaitForControlPlane): %s", time.Since(start).Round(time.Millisecond))
	lp := p.(*local.Provider)
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			_ = p.Destroy(context.Background())
		}
	})

	if got, ok := envfuncs.GetClusterFromContext(ctx, "lifecycle"); !ok || got != p {
		t.Fatalf("the provider is not in the context under its name: %v %v", got, ok)
	}
	if cfg.KubeconfigFile() == "" || cfg.KubeconfigFile() != p.GetKubeconfig() {
		t.Fatalf("envconf kubeconfig %q, provider's %q", cfg.KubeconfigFile(), p.GetKubeconfig())
	}
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("the environment's client: %v", err)
	}
	if p.GetKubectlContext() == "" {
		t.Error("no kubectl context")
	}
	if p.KubernetesRestConfig() == nil {
		t.Error("no rest.Config")
	}
	testUser, err := p.GenerateKubeconfig("--user=test-user")
	if err != nil || testUser == p.GetKubeconfig() {
		t.Errorf("GenerateKubeconfig(--user=test-user) = %q, %v; want the test user's own kubeconfig", testUser, err)
	}
	if _, err := p.GenerateKubeconfig("--user=root"); err == nil || !strings.Contains(err.Error(), "unknown argument") {
		t.Errorf("GenerateKubeconfig(--user=root) = %v, want an error naming the argument", err)
	}
	c, err := lp.Cluster()
	if err != nil {
		t.Fatal(err)
	}
	if c.NumAPIServers() != 2 {
		t.Errorf("%d kube-apiservers, want 2 (WithAPIServers)", c.NumAPIServers())
	}
	if c.Name() != "lifecycle" {
		t.Errorf("cluster named %q, want envfuncs' name (lifecycle)", c.Name())
	}
	if _, err := p.Create(ctx); err == nil || !strings.Contains(err.Error(), "already created") {
		t.Errorf("a second Create = %v, want an error", err)
	}

	// WaitForControlPlane waits for /readyz of every kube-apiserver.
	if err := c.StopAPIServer(ctx, 1, cluster.Hard); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	err = p.WaitForControlPlane(short, cfg.Client())
	cancel()
	if err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Errorf("WaitForControlPlane with kube-apiserver 1 stopped = %v, want it not ready", err)
	}
	if err := c.StartAPIServer(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitForControlPlane(ctx, cfg.Client()); err != nil {
		t.Errorf("WaitForControlPlane: %v", err)
	}

	logs := filepath.Join(t.TempDir(), "logs")
	if _, err := envfuncs.ExportClusterLogs("lifecycle", logs)(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(logs, "kube-apiserver-*.log")); len(files) != 2 {
		t.Errorf("exported kube-apiserver logs %v, want 2", files)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.ExportLogs(ctx, filepath.Join(file, "logs")); err == nil {
		t.Error("ExportLogs into a path under a file succeeded")
	}

	pids := c.Pids()
	if _, err := envfuncs.DestroyCluster("lifecycle")(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	destroyed = true
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) still running after Destroy", name, pid)
		}
	}
	if p.GetKubeconfig() != "" || p.KubernetesRestConfig() != nil {
		t.Error("the provider still hands out the destroyed cluster's kubeconfig")
	}
	for what, err := range map[string]error{
		"ExportLogs":          p.ExportLogs(ctx, t.TempDir()),
		"Destroy":             p.Destroy(ctx),
		"WaitForControlPlane": p.WaitForControlPlane(ctx, nil),
	} {
		if err == nil || !strings.Contains(err.Error(), "Destroy") {
			t.Errorf("%s after Destroy = %v, want an error saying so", what, err)
		}
	}
	if _, err := p.Create(ctx); err == nil || !strings.Contains(err.Error(), "used after Destroy") {
		t.Errorf("Create after Destroy = %v, want an error", err)
	}
}

// TestProviderBadInput: each mistake is a clear error, and nothing is left
// running.
func TestProviderBadInput(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badConfig, []byte("apiServers: 2\nnodes: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		create func(p support.E2EClusterProvider) (string, error)
		want   string
	}{
		{"unknown version", func(p support.E2EClusterProvider) (string, error) {
			return p.WithVersion("v1.99.0").Create(ctx)
		}, "not supported"},
		{"not a version", func(p support.E2EClusterProvider) (string, error) {
			return p.WithVersion("latest").Create(ctx)
		}, "not a release version"},
		{"unknown argument", func(p support.E2EClusterProvider) (string, error) {
			return p.Create(ctx, "--nodes=3")
		}, "--nodes"},
		{"unknown profile", func(p support.E2EClusterProvider) (string, error) {
			return p.WithOpts(local.WithProfile("no-such-profile")).Create(ctx)
		}, "no-such-profile"},
		{"unknown config field", func(p support.E2EClusterProvider) (string, error) {
			return p.CreateWithConfig(ctx, badConfig)
		}, "nodes"},
		{"missing config file", func(p support.E2EClusterProvider) (string, error) {
			return p.CreateWithConfig(ctx, filepath.Join(dir, "none.yaml"))
		}, "no such file"},
		{"path without binaries", func(p support.E2EClusterProvider) (string, error) {
			return p.WithPath(dir).Create(ctx)
		}, "kube-apiserver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := local.NewProvider().SetDefaults()
			kc, err := tc.create(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "local provider") {
				t.Fatalf("= %q, %v; want an error of the local provider naming %q", kc, err, tc.want)
			}
			t.Log(err)
			if _, err := p.(*local.Provider).Cluster(); err == nil {
				t.Error("a cluster is there after a failed Create")
			}
		})
	}

	t.Run("no Go toolchain for the first build", func(t *testing.T) {
		t.Setenv("INFORMER_CONFORMANCE_CACHE", t.TempDir()) // nothing cached: Create must build
		t.Setenv("INFORMER_CONFORMANCE_ASSETS", "")
		t.Setenv("PATH", t.TempDir())
		_, err := local.NewProvider().SetDefaults().Create(ctx)
		if err == nil || !strings.Contains(err.Error(), "Go toolchain") {
			t.Fatalf("Create without go on PATH = %v, want an error naming the Go toolchain", err)
		}
		t.Log(err)
	})

	t.Run("version the path's binaries are not", func(t *testing.T) {
		if _, _, err := binaries.Built(binaries.DefaultKubeVersion, binaries.Options{}); err != nil {
			t.Skipf("needs the cached kube-apiserver %s: %v", binaries.DefaultKubeVersion, err)
		}
		paths, err := binaries.Ensure(ctx, binaries.Versions{}, binaries.Options{})
		if err != nil {
			t.Fatal(err)
		}
		assets := t.TempDir()
		for name, path := range map[string]string{binaries.KubeAPIServer: paths.KubeAPIServer, binaries.Etcd: paths.Etcd, binaries.Etcdutl: paths.Etcdutl} {
			if err := os.Symlink(path, filepath.Join(assets, name)); err != nil {
				t.Fatal(err)
			}
		}
		_, err = local.NewProvider().SetDefaults().WithPath(assets).WithVersion("v1.36.3").Create(ctx)
		if err == nil || !strings.Contains(err.Error(), "version v1.36.3 asked") || !strings.Contains(err.Error(), paths.Versions.KubeAPIServer) {
			t.Fatalf("Create with WithVersion(v1.36.3) and a path of %s = %v, want an error naming both", paths.Versions.KubeAPIServer, err)
		}
		t.Log(err)
	})

	t.Run("used before Create", func(t *testing.T) {
		p := local.NewProvider()
		if err := p.ExportLogs(ctx, t.TempDir()); err == nil || !strings.Contains(err.Error(), "no cluster yet") {
			t.Errorf("ExportLogs before Create = %v", err)
		}
		if err := p.Destroy(ctx); err == nil {
			t.Error("Destroy before Create succeeded")
		}
		if p.GetKubeconfig() != "" {
			t.Error("a kubeconfig before Create")
		}
	})
}

// BenchmarkCreateToReady measures envfuncs.CreateCluster with the local
// provider, from the call to WaitForControlPlane returning (binaries
// cached), then destroys the cluster.
func BenchmarkCreateToReady(b *testing.B) {
	ctx := testCtx(b)
	for range b.N {
		cfg := envconf.New()
		p := local.NewProvider()
		if _, err := envfuncs.CreateCluster(p, "bench")(ctx, cfg); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := p.Destroy(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// TestNoImageLoading: e2e-framework's image loading on the local provider
// fails saying why (no nodes), not with e2e-framework's generic "does not
// support" nor as a no-op whose pods would never run. No cluster is needed:
// there is never a node.
func TestNoImageLoading(t *testing.T) {
	p := local.NewProvider().WithName("c")
	ctx := context.WithValue(context.Background(), support.ClusterNameContextKey("c"), p)
	for name, f := range map[string]env.Func{
		"LoadImageToCluster":        envfuncs.LoadImageToCluster("c", "example/app:dev"),
		"LoadImageArchiveToCluster": envfuncs.LoadImageArchiveToCluster("c", "app.tar"),
	} {
		_, err := f(ctx, envconf.New())
		if !errors.Is(err, local.ErrNoNodes) || !strings.Contains(err.Error(), "no kubelet") {
			t.Errorf("%s = %v, want local.ErrNoNodes", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}

// TestCreateClusterWithConfig: envfuncs.CreateClusterWithConfig with the
// provider's YAML (local.Config), etcd links included.
func TestCreateClusterWithConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local cluster")
	}
	ctx := testCtx(t)
	file := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(file, []byte("apiServers: 1\netcdLinks: true\nprofile: no-watch-cache\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := envconf.New()
	p := local.NewProvider()
	if _, err := envfuncs.CreateClusterWithConfig(p, "with-config", file)(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Destroy(context.Background()) })
	c, err := p.(*local.Provider).Cluster()
	if err != nil {
		t.Fatal(err)
	}
	if c.ProfileName() != "no-watch-cache" || c.NumAPIServers() != 1 {
		t.Errorf("cluster with profile %q and %d kube-apiservers, want no-watch-cache and 1", c.ProfileName(), c.NumAPIServers())
	}
	if c.ServerVersion() == "" {
		t.Error("no kube-apiserver version")
	}
	if _, err := c.EtcdLink(0); err != nil {
		t.Errorf("etcdLinks: true: %v", err)
	}
}
