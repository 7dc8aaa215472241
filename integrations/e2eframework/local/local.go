// Package local is an e2e-framework cluster provider
// (support.E2EClusterProvider, sigs.k8s.io/e2e-framework v0.7.0
// pkg/types/types.go) for informer-conformance's local backend: a real etcd
// and real kube-apiservers, built once from pinned upstream source, started
// as processes of this machine in seconds, without Docker.
//
//	testenv.Setup(envfuncs.CreateCluster(local.NewProvider(), "c"))
//	testenv.Finish(envfuncs.DestroyCluster("c"))
//
// Unlike e2e-framework's own providers it can break the cluster on demand:
// Cluster gives the backend's cluster, whose methods stop and start
// kube-apiservers and etcd, compact etcd, snapshot and restore it, and
// rotate certificates (package cluster's capability interfaces). The
// scenario features of package e2eframework use them.
//
// It is the API server and nothing else: no kubelet, container runtime,
// scheduler or controller manager. Objects are stored and watched, but pods
// never run (they stay Pending, unscheduled), no controller acts (a
// Deployment makes no ReplicaSet, a deleted namespace stays Terminating, no
// namespace gets a default service account), and images cannot be loaded: LoadImage and
// LoadImageArchive (envfuncs.LoadImageToCluster, LoadImageArchiveToCluster)
// return an error saying so. Tests that run workloads need the kind
// provider (package kind of this module).
package local

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"sigs.k8s.io/e2e-framework/support"

	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/lifetime"
	backend "github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/integrations/e2eframework/internal/provider"
	"github.com/informer-conformance/informer-conformance/report"
)

// DefaultName is the cluster's name when neither WithName nor
// envfuncs.CreateCluster gives one.
const DefaultName = "informer-conformance"

// Provider is the local backend as an e2e-framework cluster provider. Make
// one per cluster with NewProvider.
type Provider struct {
	*provider.State
	// Config is what Create starts: set by WithVersion, WithPath, the
	// options, Create's arguments or CreateWithConfig's file.
	config Config
}

// Config is what a local cluster is made of. CreateWithConfig reads it
// from a YAML file:
//
//	apiServers: 2                      # kube-apiservers over one etcd
//	etcdLinks: true                    # a fault proxy between each kube-apiserver and etcd (S24)
//	profile: fast-graceful-shutdown    # fixtures/profiles name(s) joined by "+", or a file
//	version: v1.36.3                   # kube-apiserver; default KUBE_VERSION, then v1.37.2
//	etcdVersion: v3.7.3                # default ETCD_VERSION, then v3.7.3
//	path: /opt/k8s/bin                 # prebuilt kube-apiserver, etcd, etcdutl (default: build them)
//	artifactsDir: /tmp/logs            # the processes' logs (default: <artifacts root>/<cluster name>)
type Config struct {
	APIServers   int    `json:"apiServers,omitempty"`
	EtcdLinks    bool   `json:"etcdLinks,omitempty"`
	Profile      string `json:"profile,omitempty"`
	Version      string `json:"version,omitempty"`
	EtcdVersion  string `json:"etcdVersion,omitempty"`
	Path         string `json:"path,omitempty"`
	ArtifactsDir string `json:"artifactsDir,omitempty"`
}

// NewProvider returns a provider for one local cluster.
func NewProvider() support.E2EClusterProvider {
	return &Provider{State: &provider.State{Backend: "local"}}
}

var _ support.E2EClusterProvider = (*Provider)(nil)

// WithAPIServers sets the number of kube-apiservers over the one etcd
// (default 1; the S1 and S5 fail-over scenarios need 2).
func WithAPIServers(n int) support.ClusterOpts {
	return func(p support.E2EClusterProvider) {
		if lp, ok := p.(*Provider); ok {
			lp.config.APIServers = n
		}
	}
}

// WithEtcdLinks puts a fault proxy between each kube-apiserver and etcd
// (cluster.EtcdLinks): the lagging-apiserver scenario (S24) stalls one
// apiserver's link, and skips on a cluster without them.
func WithEtcdLinks() support.ClusterOpts {
	return func(p support.E2EClusterProvider) {
		if lp, ok := p.(*Provider); ok {
			lp.config.EtcdLinks = true
		}
	}
}

// WithProfile sets the kube-apiserver flag profile: a name of
// fixtures/profiles (several joined by "+") or a YAML file.
func WithProfile(name string) support.ClusterOpts {
	return func(p support.E2EClusterProvider) {
		if lp, ok := p.(*Provider); ok {
			lp.config.Profile = name
		}
	}
}

var (
	// WithArtifactsDir sets where the processes write their logs (default:
	// <artifacts root>/<cluster name>, report.ArtifactsRoot:
	// $INFORMER_CONFORMANCE_ARTIFACTS, else ./_artifacts).
	WithArtifactsDir = provider.WithArtifactsDir
	// WithProgress sends a line per build and lifecycle step to w (a first
	// build of kube-apiserver takes minutes).
	WithProgress = provider.WithProgress
)

// WithName implements support.E2EClusterProvider.
func (p *Provider) WithName(name string) support.E2EClusterProvider {
	p.State.SetName(name)
	return p
}

// WithVersion implements support.E2EClusterProvider: the kube-apiserver
// version (1.31.x to 1.37.x), built from source on first use.
func (p *Provider) WithVersion(version string) support.E2EClusterProvider {
	p.config.Version = version
	return p
}

// WithPath implements support.E2EClusterProvider: a directory holding
// prebuilt kube-apiserver, etcd and etcdutl executables, used instead of
// building them (as INFORMER_CONFORMANCE_ASSETS does).
func (p *Provider) WithPath(path string) support.E2EClusterProvider {
	p.config.Path = path
	return p
}

// WithOpts implements support.E2EClusterProvider.
func (p *Provider) WithOpts(opts ...support.ClusterOpts) support.E2EClusterProvider {
	for _, o := range opts {
		o(p)
	}
	return p
}

// SetDefaults implements support.E2EClusterProvider.
func (p *Provider) SetDefaults() support.E2EClusterProvider {
	if p.State.Name() == "" {
		p.State.SetName(DefaultName)
	}
	return p
}

// Create implements support.E2EClusterProvider: it builds the binaries if
// they are not cached, starts etcd and the kube-apiservers, and returns
// the admin kubeconfig's path once every kube-apiserver is ready. Args, as
// flags: --apiservers=N, --etcd-links, --profile=NAME, --version=V. On
// error nothing is left running.
func (p *Provider) Create(ctx context.Context, args ...string) (string, error) {
	cfg := p.config
	fs := flag.NewFlagSet("local provider", flag.ContinueOnError)
	fs.IntVar(&cfg.APIServers, "apiservers", cfg.APIServers, "kube-apiservers")
	fs.BoolVar(&cfg.EtcdLinks, "etcd-links", cfg.EtcdLinks, "a fault proxy between each kube-apiserver and etcd")
	fs.StringVar(&cfg.Profile, "profile", cfg.Profile, "kube-apiserver flag profile")
	fs.StringVar(&cfg.Version, "version", cfg.Version, "kube-apiserver version")
	if err := p.ParseArgs(fs, args, "--apiservers=N, --etcd-links, --profile=NAME, --version=V"); err != nil {
		return "", err
	}
	return p.create(ctx, cfg)
}

// CreateWithConfig implements support.E2EClusterProvider: Create with the
// Config read from a YAML file (unknown fields are an error).
func (p *Provider) CreateWithConfig(ctx context.Context, configFile string) (string, error) {
	cfg := p.config
	if err := p.ReadConfig(configFile, &cfg, ""); err != nil {
		return "", err
	}
	return p.create(ctx, cfg)
}

func (p *Provider) create(ctx context.Context, cfg Config) (string, error) {
	// Before the binaries' build, which would be minutes for nothing.
	if err := backend.CheckHost(); err != nil {
		return "", p.Errorf("%v; on %s use this module's kind provider (integrations/e2eframework/kind)", err, runtime.GOOS)
	}
	name := p.State.Name()
	if name == "" {
		name = backend.NewName()
	}
	if cfg.ArtifactsDir == "" {
		cfg.ArtifactsDir = p.ArtifactsDir // WithArtifactsDir
	}
	if cfg.ArtifactsDir == "" {
		cfg.ArtifactsDir = filepath.Join(report.ArtifactsRoot(), name)
	}
	if err := p.State.BeforeCreate(); err != nil {
		return "", err
	}
	if cfg.APIServers < 0 || cfg.APIServers > 3 {
		return "", p.Errorf("%d kube-apiservers: choose 1 to 3", cfg.APIServers)
	}
	// Should the test binary's parent (go test) die, the cluster goes too.
	lifetime.ExitWithParent()
	opts := backend.Options{Name: name, APIServers: cfg.APIServers, EtcdLinks: cfg.EtcdLinks, ArtifactsDir: cfg.ArtifactsDir, Progress: p.Progress}
	if cfg.Profile != "" {
		prof, err := backend.LoadProfile(cfg.Profile)
		if err != nil {
			return "", p.Errorf("%v", err)
		}
		opts.Profile = prof
	}
	bins, err := p.binaries(ctx, cfg)
	if err != nil {
		return "", err
	}
	opts.Binaries = bins
	c, err := backend.Start(ctx, opts)
	if err != nil {
		return "", p.Errorf("%v", err)
	}
	kc, err := p.State.Created(c)
	if err != nil {
		_ = c.Close(context.Background())
		return "", err
	}
	return kc, nil
}

// binaries finds or builds the executables cfg asks for.
func (p *Provider) binaries(ctx context.Context, cfg Config) (binaries.Paths, error) {
	v := binaries.Versions{KubeAPIServer: cfg.Version, Etcd: cfg.EtcdVersion}
	if v.KubeAPIServer == "" {
		v.KubeAPIServer = os.Getenv(binaries.EnvKubeVersion)
	}
	if v.Etcd == "" {
		v.Etcd = os.Getenv(binaries.EnvEtcdVersion)
	}
	if cfg.Path == "" {
		nv, err := v.Normalize()
		if err != nil {
			return binaries.Paths{}, p.Errorf("%v", err)
		}
		paths, err := binaries.Ensure(ctx, nv, binaries.Options{Progress: p.Progress})
		if err != nil {
			return binaries.Paths{}, p.Errorf("%v", err)
		}
		return paths, nil
	}
	paths, err := binaries.Ensure(ctx, v, binaries.Options{AssetsDir: cfg.Path, Progress: p.Progress})
	if err != nil {
		return binaries.Paths{}, p.Errorf("path %s: %v", cfg.Path, err)
	}
	if cfg.Version != "" && strings.TrimPrefix(cfg.Version, "v") != strings.TrimPrefix(paths.Versions.KubeAPIServer, "v") {
		return binaries.Paths{}, p.Errorf("version %s asked, but the kube-apiserver in %s is %s", cfg.Version, cfg.Path, paths.Versions.KubeAPIServer)
	}
	return paths, nil
}

// ErrNoNodes is what LoadImage and LoadImageArchive return: the local
// backend has no node to load an image into.
var ErrNoNodes = errors.New("the local backend runs kube-apiserver and etcd only, no kubelet, container runtime, scheduler or controllers: pods never run and images cannot be loaded (use the kind provider, package integrations/e2eframework/kind, for workloads)")

var _ support.E2EClusterProviderWithImageLoader = (*Provider)(nil)

// LoadImage implements support.E2EClusterProviderWithImageLoader with
// ErrNoNodes, so envfuncs.LoadImageToCluster fails saying why (the
// interface's comment allows a no-op, which would fail later and
// elsewhere: a pod that never runs; without the method e2e-framework v0.7.0
// says only "cluster provider does not support LoadImage helper").
func (p *Provider) LoadImage(_ context.Context, image string, _ ...string) error {
	return p.Errorf("LoadImage(%q): %w", image, ErrNoNodes)
}

// LoadImageArchive implements support.E2EClusterProviderWithImageLoader
// with ErrNoNodes, as LoadImage.
func (p *Provider) LoadImageArchive(_ context.Context, archivePath string, _ ...string) error {
	return p.Errorf("LoadImageArchive(%q): %w", archivePath, ErrNoNodes)
}

// Cluster is the running cluster, to break it: its methods stop and start
// kube-apiservers (StopAPIServer, StartAPIServer) and etcd, compact etcd
// (CompactEtcd), snapshot and restore it, rotate certificates. An error
// before Create and after Destroy.
func (p *Provider) Cluster() (*backend.Cluster, error) {
	c, err := p.State.Cluster()
	if err != nil {
		return nil, err
	}
	return c.(*backend.Cluster), nil
}
