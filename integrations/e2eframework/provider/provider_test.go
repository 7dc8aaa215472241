package provider_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/support"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/integrations/e2eframework/provider"
)

// The fake backend: it records what reaches its Prepare and Start, and
// starts a cluster that is a kubeconfig file in the artifacts directory.
const (
	fakeBackend = "provider-test"
	// envFlag is a Flag of the fake's: true or false.
	envFlag = "INFORMER_CONFORMANCE_PROVIDER_TEST_FLAG"
	// fakeAssetsVersion is the kube-apiserver version the fake says the
	// binaries of a path are.
	fakeAssetsVersion = "v1.30.9"
)

// A start is what one Start got.
type start struct {
	spec        cluster.Spec
	h           cluster.Harness
	hasDeadline bool
}

var (
	fakeMu   sync.Mutex
	starts   []start
	prepares []cluster.Env
)

func init() {
	cluster.RegisterBackend(cluster.Backend{
		Name: fakeBackend,
		Vars: []cluster.Var{
			{Name: binaries.EnvKubeVersion}, {Name: binaries.EnvEtcdVersion},
			{Name: binaries.EnvAssets, Kind: cluster.Paths},
			{Name: envFlag, Kind: cluster.Flag, Doc: "a flag of the fake backend"},
		},
		StartTimeout: time.Minute,
		Supports: func(spec cluster.Spec) string {
			if spec.EtcdLinks {
				return "etcd links (the fake has no etcd)"
			}
			return ""
		},
		KubeAPIServerVersion: func(env cluster.Env) string {
			if env.Get(binaries.EnvAssets) != "" {
				return fakeAssetsVersion
			}
			return env.Get(binaries.EnvKubeVersion)
		},
		Prepare: func(_ context.Context, h cluster.Harness) error {
			fakeMu.Lock()
			defer fakeMu.Unlock()
			prepares = append(prepares, h.Env)
			return nil
		},
		Start: func(ctx context.Context, spec cluster.Spec, h cluster.Harness) (cluster.Cluster, error) {
			_, deadline := ctx.Deadline()
			fakeMu.Lock()
			starts = append(starts, start{spec: spec, h: h, hasDeadline: deadline})
			fakeMu.Unlock()
			if err := os.MkdirAll(h.ArtifactsDir, 0o755); err != nil {
				return nil, err
			}
			kc := filepath.Join(h.ArtifactsDir, "kubeconfig")
			if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\ncurrent-context: fake\n"), 0o644); err != nil {
				return nil, err
			}
			return &fakeCluster{name: h.Name, kubeconfig: kc, dir: h.ArtifactsDir}, nil
		},
	})
}

// fakeCluster is a cluster.Cluster whose admin kubeconfig is a file; the
// methods it does not define are not called.
type fakeCluster struct {
	cluster.Cluster
	name, kubeconfig, dir string
	closed                bool
}

func (c *fakeCluster) Name() string                                { return c.name }
func (c *fakeCluster) KubeconfigPath(cluster.User) (string, error) { return c.kubeconfig, nil }
func (c *fakeCluster) ArtifactsDir() string                        { return c.dir }
func (c *fakeCluster) Close(context.Context) error                 { c.closed = true; return nil }

// lastStart is what the latest Start got, and how many starts there were.
func lastStart(t *testing.T) (start, int) {
	t.Helper()
	fakeMu.Lock()
	defer fakeMu.Unlock()
	if len(starts) == 0 {
		t.Fatal("the backend's Start was not called")
	}
	return starts[len(starts)-1], len(starts)
}

func numStarts() int {
	fakeMu.Lock()
	defer fakeMu.Unlock()
	return len(starts)
}

// create creates p's cluster and destroys it when the test ends.
func create(t *testing.T, p support.E2EClusterProvider, create func() (string, error)) string {
	t.Helper()
	kc, err := create()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Destroy(context.Background()) })
	return kc
}

// TestProviderOptionsReachStart: the options reach the backend's Start as
// its cluster.Spec and its Env, over the process's environment and
// without changing it; the kubeconfig Create returns is the cluster's.
func TestProviderOptionsReachStart(t *testing.T) {
	t.Setenv(binaries.EnvKubeVersion, "v1.35.1") // overridden
	t.Setenv(binaries.EnvEtcdVersion, "v3.5.9")  // read
	t.Setenv(envFlag, "")
	dir := t.TempDir()
	p := provider.New(fakeBackend).WithName("c").WithVersion("v1.36.3").
		WithOpts(provider.WithAPIServers(2), provider.WithProfile("no-watch-cache"), provider.WithEnv(envFlag, "true"), provider.WithArtifactsDir(dir))
	kc := create(t, p, func() (string, error) { return p.Create(context.Background()) })

	got, _ := lastStart(t)
	if want := (cluster.Spec{APIServers: 2, Profile: "no-watch-cache"}); got.spec != want {
		t.Errorf("Start's spec = %+v, want %+v", got.spec, want)
	}
	for name, want := range map[string]string{binaries.EnvKubeVersion: "v1.36.3", binaries.EnvEtcdVersion: "v3.5.9", envFlag: "true", binaries.EnvAssets: ""} {
		if v := got.h.Env.Get(name); v != want {
			t.Errorf("Start's Env %s = %q, want %q", name, v, want)
		}
	}
	if v := os.Getenv(binaries.EnvKubeVersion); v != "v1.35.1" {
		t.Errorf("the process's %s = %q after Create, want it untouched (v1.35.1)", binaries.EnvKubeVersion, v)
	}
	if v := os.Getenv(envFlag); v != "" {
		t.Errorf("the process's %s = %q after Create, want it untouched (unset)", envFlag, v)
	}
	if got.h.Name != "c" || got.h.ArtifactsDir != dir || got.h.Progress == nil || got.h.ProcessDir == nil || got.h.Warn == nil {
		t.Errorf("Start's harness: name %q, artifacts %q, progress %v; want c, %s, a writer, ProcessDir and Warn", got.h.Name, got.h.ArtifactsDir, got.h.Progress, dir)
	}
	if !got.hasDeadline {
		t.Error("Start's context has no deadline (the backend's StartTimeout)")
	}
	if want := filepath.Join(dir, "kubeconfig"); kc != want || p.GetKubeconfig() != want {
		t.Errorf("Create = %q, GetKubeconfig = %q; want the cluster's %s", kc, p.GetKubeconfig(), want)
	}
	if p.GetKubectlContext() != "fake" {
		t.Errorf("GetKubectlContext = %q, want the kubeconfig's (fake)", p.GetKubectlContext())
	}
	c, err := p.(*provider.Provider).Cluster()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create(context.Background()); err == nil || !strings.Contains(err.Error(), "already created") {
		t.Errorf("a second Create = %v, want an error", err)
	}
	if err := p.Destroy(context.Background()); err != nil || !c.(*fakeCluster).closed {
		t.Errorf("Destroy = %v, closed %v; want the cluster closed", err, c.(*fakeCluster).closed)
	}
}

// TestProviderCreateArgsAndConfig: Create's flags and CreateWithConfig's
// file set what the options do; the defaults are one apiserver and a
// directory of the artifacts root named after the cluster.
func TestProviderCreateArgsAndConfig(t *testing.T) {
	root := t.TempDir()
	t.Setenv("INFORMER_CONFORMANCE_ARTIFACTS", root)
	t.Setenv(binaries.EnvKubeVersion, "")

	p := provider.New(fakeBackend).WithName("args")
	create(t, p, func() (string, error) {
		return p.Create(context.Background(), "--apiservers=3", "--version=1.34.2", "--profile=no-watch-cache")
	})
	got, _ := lastStart(t)
	if want := (cluster.Spec{APIServers: 3, Profile: "no-watch-cache"}); got.spec != want || got.h.Env.Get(binaries.EnvKubeVersion) != "1.34.2" {
		t.Errorf("Create(args): spec %+v, %s=%q; want %+v and 1.34.2", got.spec, binaries.EnvKubeVersion, got.h.Env.Get(binaries.EnvKubeVersion), want)
	}
	if want := filepath.Join(root, "args"); got.h.ArtifactsDir != want {
		t.Errorf("artifacts directory %q, want %q", got.h.ArtifactsDir, want)
	}

	p = provider.New(fakeBackend).WithName("defaults")
	create(t, p, func() (string, error) { return p.Create(context.Background()) })
	if got, _ := lastStart(t); got.spec != (cluster.Spec{APIServers: 1}) {
		t.Errorf("Create(): spec %+v, want one apiserver", got.spec)
	}

	file := filepath.Join(t.TempDir(), "cluster.yaml")
	// "apiservers" as kind's config spelled it: the fields match whatever their case.
	yaml := "apiservers: 2\nprofile: no-watch-cache\netcdVersion: v3.6.1\npath: " + root + "\nenv:\n  " + envFlag + ": \"false\"\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	p = provider.New(fakeBackend).WithName("config")
	create(t, p, func() (string, error) { return p.CreateWithConfig(context.Background(), file) })
	got, _ = lastStart(t)
	if want := (cluster.Spec{APIServers: 2, Profile: "no-watch-cache"}); got.spec != want {
		t.Errorf("CreateWithConfig: spec %+v, want %+v", got.spec, want)
	}
	for name, want := range map[string]string{binaries.EnvEtcdVersion: "v3.6.1", binaries.EnvAssets: root, envFlag: "false"} {
		if v := got.h.Env.Get(name); v != want {
			t.Errorf("CreateWithConfig: Env %s = %q, want %q", name, v, want)
		}
	}

	// WithPath resolves against the test's directory (the variable refuses
	// a relative path from the environment).
	p = provider.New(fakeBackend).WithName("path").WithPath("testdata")
	create(t, p, func() (string, error) { return p.Create(context.Background()) })
	wd, _ := os.Getwd()
	if got, _ := lastStart(t); got.h.Env.Get(binaries.EnvAssets) != filepath.Join(wd, "testdata") {
		t.Errorf("WithPath(testdata): %s=%q, want it absolute", binaries.EnvAssets, got.h.Env.Get(binaries.EnvAssets))
	}
}

// TestProviderRefuses: what the backend cannot do or does not read is an
// error of Create, before Start, naming why.
func TestProviderRefuses(t *testing.T) {
	t.Setenv(envFlag, "")
	dir := t.TempDir()
	unknownField := filepath.Join(dir, "unknown.yaml")
	if err := os.WriteFile(unknownField, []byte("apiServers: 2\nnodes: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		backend string
		env     string // envFlag's value in the process's environment
		create  func(p support.E2EClusterProvider) (string, error)
		want    []string
	}{
		{name: "unsupported spec", create: func(p support.E2EClusterProvider) (string, error) {
			return p.WithOpts(provider.WithEtcdLinks()).Create(context.Background())
		}, want: []string{"the provider-test backend cannot give this cluster etcd links (the fake has no etcd)"}},
		{name: "unknown backend", backend: "no-such-backend", create: func(p support.E2EClusterProvider) (string, error) {
			return p.Create(context.Background())
		}, want: []string{`no backend "no-such-backend" registered`, "registered: " + fakeBackend, "import the package that registers it"}},
		{name: "bad environment value", env: "yes", create: func(p support.E2EClusterProvider) (string, error) {
			return p.Create(context.Background())
		}, want: []string{envFlag + `="yes"`, "want true or false"}},
		{name: "bad value set", create: func(p support.E2EClusterProvider) (string, error) {
			return p.WithOpts(provider.WithEnv(envFlag, "maybe")).Create(context.Background())
		}, want: []string{envFlag + `="maybe"`, "want true or false"}},
		{name: "variable the backend does not read", create: func(p support.E2EClusterProvider) (string, error) {
			return p.WithOpts(provider.WithEnv("KIND_NODE_IMAGE", "kindest/node:v1.37.2")).Create(context.Background())
		}, want: []string{`does not read KIND_NODE_IMAGE="kindest/node:v1.37.2"`, envFlag}},
		{name: "too many apiservers", create: func(p support.E2EClusterProvider) (string, error) {
			return p.WithOpts(provider.WithAPIServers(4)).Create(context.Background())
		}, want: []string{"4 kube-apiservers: choose 1 to 3"}},
		{name: "unknown profile", create: func(p support.E2EClusterProvider) (string, error) {
			return p.Create(context.Background(), "--profile=no-such-profile")
		}, want: []string{"no-such-profile"}},
		{name: "unknown argument", create: func(p support.E2EClusterProvider) (string, error) {
			return p.Create(context.Background(), "--nodes=3")
		}, want: []string{"Create arguments", "--nodes", "known: --apiservers=N"}},
		{name: "unknown config field", create: func(p support.E2EClusterProvider) (string, error) {
			return p.CreateWithConfig(context.Background(), unknownField)
		}, want: []string{`unknown field "nodes"`}},
		{name: "version the path's binaries are not", create: func(p support.E2EClusterProvider) (string, error) {
			return p.WithPath(dir).WithVersion("v1.36.3").Create(context.Background())
		}, want: []string{"version v1.36.3 asked, but the provider-test backend runs kube-apiserver " + fakeAssetsVersion + " (the one in " + dir + ")"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envFlag, tc.env)
			p := provider.New(fakeBackend)
			if tc.backend != "" {
				p = provider.New(tc.backend)
			}
			p = p.WithName("refused")
			before := numStarts()
			kc, err := tc.create(p)
			if err == nil {
				_ = p.Destroy(context.Background())
				t.Fatalf("Create = %q, want an error", kc)
			}
			t.Log(err)
			for _, want := range append(tc.want, "provider \"refused\"") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if numStarts() != before {
				t.Error("the backend's Start was called")
			}
			if _, err := p.(*provider.Provider).Cluster(); err == nil {
				t.Error("a cluster is there after a failed Create")
			}
		})
	}
}

// TestProviderPreparesOnce: the backend's Prepare runs once per process
// and configuration, with the cluster's Env.
func TestProviderPreparesOnce(t *testing.T) {
	t.Setenv(envFlag, "")
	count := func(version string) int {
		fakeMu.Lock()
		defer fakeMu.Unlock()
		n := 0
		for _, env := range prepares {
			if env.Get(binaries.EnvKubeVersion) == version {
				n++
			}
		}
		return n
	}
	for i, version := range []string{"v1.33.1", "v1.33.1", "v1.33.2"} {
		p := provider.New(fakeBackend).WithVersion(version)
		create(t, p, func() (string, error) { return p.Create(context.Background()) })
		if n := count(version); n != 1 {
			t.Errorf("create %d (%s): Prepare ran %d times for it, want once", i, version, n)
		}
	}
}
