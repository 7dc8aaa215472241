// Package kind is an e2e-framework cluster provider
// (support.E2EClusterProvider) for informer-conformance's kind backend: a
// real kind cluster made through kind's Go library
// (sigs.k8s.io/kind/pkg/cluster), not its CLI, on the node image `make
// kind-image` builds offline (or a published one, WithImage /
// KIND_NODE_IMAGE), with the restricted-host Docker adapter where the
// daemon cannot start privileged containers.
//
//	testenv.Setup(envfuncs.CreateCluster(kind.NewProvider(), "c"))
//
// Cluster gives the backend's cluster: it stops and starts the
// kube-apiserver static pod, compacts etcd, and recovers between
// scenarios (package cluster's capability interfaces).
//
// It is a support.E2EClusterProviderWithImageLoader: envfuncs.LoadImageToCluster
// and envfuncs.LoadImageArchiveToCluster load images from the host into the
// nodes' containerd through kind's Go library (what `kind load docker-image`
// and `kind load image-archive` do), so pods run images no registry has:
//
//	testenv.Setup(envfuncs.CreateCluster(p, "c"), envfuncs.LoadImageToCluster("c", "example/app:dev"))
package kind

import (
	"context"
	"flag"
	"strings"

	"sigs.k8s.io/e2e-framework/support"

	backend "github.com/informer-conformance/informer-conformance/cluster/kind"
	"github.com/informer-conformance/informer-conformance/cluster/lifetime"
	"github.com/informer-conformance/informer-conformance/cluster/profile"
	"github.com/informer-conformance/informer-conformance/integrations/e2eframework/internal/provider"
)

// Provider is the kind backend as an e2e-framework cluster provider. Make
// one per cluster with NewProvider.
type Provider struct {
	*provider.State
	config Config
	path   string
}

// Config is what CreateWithConfig reads from a YAML file. It is not a kind
// configuration: the backend writes that itself (one control-plane node,
// the kubeadm and kubelet settings its node image needs); pass kind
// configurations to e2e-framework's own kind provider.
//
//	version: v1.37.2                  # kube-apiserver: picks the built node image
//	image: kindest/node:v1.37.2       # a published node image instead (default KIND_NODE_IMAGE)
//	artifactsDir: /tmp/logs           # where exported logs go
//	apiservers: 2                     # control-plane nodes behind kind's load balancer (1-3)
//	profile: no-watch-cache           # kube-apiserver flag profile (fixtures/profiles), "+" joins several
//	etcdLinks: true                   # a fault proxy between each kube-apiserver and etcd
type Config struct {
	Version      string `json:"version,omitempty"`
	Image        string `json:"image,omitempty"`
	ArtifactsDir string `json:"artifactsDir,omitempty"`
	APIServers   int    `json:"apiservers,omitempty"`
	Profile      string `json:"profile,omitempty"`
	EtcdLinks    bool   `json:"etcdLinks,omitempty"`
}

// NewProvider returns a provider for one kind cluster.
func NewProvider() support.E2EClusterProvider {
	return &Provider{State: &provider.State{Backend: "kind"}}
}

var _ support.E2EClusterProviderWithImageLoader = (*Provider)(nil)

// WithImage sets the node image (default: the one `make kind-image` built
// for the version, or KIND_NODE_IMAGE).
func WithImage(image string) support.ClusterOpts {
	return func(p support.E2EClusterProvider) {
		if kp, ok := p.(*Provider); ok {
			kp.config.Image = image
		}
	}
}

// WithAPIServers sets the number of control-plane nodes (1-3; more than
// one: behind kind's load balancer), for the scenarios that stop one
// apiserver while another takes writes (capability ha).
func WithAPIServers(n int) support.ClusterOpts {
	return func(p support.E2EClusterProvider) {
		if kp, ok := p.(*Provider); ok {
			kp.config.APIServers = n
		}
	}
}

// WithProfile sets the kube-apiserver flag profile (a name of
// fixtures/profiles or a file; "+" joins several), given through kubeadm's
// configuration.
func WithProfile(name string) support.ClusterOpts {
	return func(p support.E2EClusterProvider) {
		if kp, ok := p.(*Provider); ok {
			kp.config.Profile = name
		}
	}
}

// WithEtcdLinks puts a fault proxy between each kube-apiserver and its etcd
// member (cluster.EtcdLinks; on the kind network's gateway, etcd's serving
// certificates reissued to carry its address): the lagging-apiserver
// scenario (S24) stalls one apiserver's link, and skips on a cluster
// without them.
func WithEtcdLinks() support.ClusterOpts {
	return func(p support.E2EClusterProvider) {
		if kp, ok := p.(*Provider); ok {
			kp.config.EtcdLinks = true
		}
	}
}

var (
	// WithArtifactsDir sets where exported logs go.
	WithArtifactsDir = provider.WithArtifactsDir
	// WithProgress sends kind's progress lines and the backend's own to w.
	WithProgress = provider.WithProgress
)

// WithName implements support.E2EClusterProvider: the kind cluster's name.
func (p *Provider) WithName(name string) support.E2EClusterProvider {
	p.SetName(name)
	return p
}

// WithVersion implements support.E2EClusterProvider: the kube-apiserver
// version, which picks the node image `make kind-image KUBE_VERSION=...`
// built.
func (p *Provider) WithVersion(version string) support.E2EClusterProvider {
	p.config.Version = version
	return p
}

// WithPath implements support.E2EClusterProvider. The kind backend runs no
// kind or docker binary of the user's (kind's Go library does the work, and
// the Docker adapter, when needed, is its own): a path is an error at
// Create, not silently ignored.
func (p *Provider) WithPath(path string) support.E2EClusterProvider {
	p.path = path
	return p
}

// WithOpts implements support.E2EClusterProvider.
func (p *Provider) WithOpts(opts ...support.ClusterOpts) support.E2EClusterProvider {
	for _, o := range opts {
		o(p)
	}
	return p
}

// SetDefaults implements support.E2EClusterProvider. Without a name the
// backend picks a unique one.
func (p *Provider) SetDefaults() support.E2EClusterProvider { return p }

// Create implements support.E2EClusterProvider: it creates the cluster and
// returns the admin kubeconfig's path once kube-apiserver is ready. Args,
// as flags: --image=IMAGE, --version=V, --apiservers=N, --profile=NAME,
// --etcd-links. On
// error nothing is left running.
func (p *Provider) Create(ctx context.Context, args ...string) (string, error) {
	cfg := p.config
	fs := flag.NewFlagSet("kind provider", flag.ContinueOnError)
	fs.StringVar(&cfg.Image, "image", cfg.Image, "node image")
	fs.StringVar(&cfg.Version, "version", cfg.Version, "kube-apiserver version")
	fs.IntVar(&cfg.APIServers, "apiservers", cfg.APIServers, "control-plane nodes")
	fs.StringVar(&cfg.Profile, "profile", cfg.Profile, "kube-apiserver flag profile")
	fs.BoolVar(&cfg.EtcdLinks, "etcd-links", cfg.EtcdLinks, "a fault proxy between each kube-apiserver and etcd")
	if err := p.ParseArgs(fs, args, "--image=IMAGE, --version=V, --apiservers=N, --profile=NAME, --etcd-links"); err != nil {
		return "", err
	}
	return p.create(ctx, cfg)
}

// CreateWithConfig implements support.E2EClusterProvider: Create with the
// Config read from a YAML file (unknown fields, a kind configuration's
// among them, are an error).
func (p *Provider) CreateWithConfig(ctx context.Context, configFile string) (string, error) {
	cfg := p.config
	if err := p.ReadConfig(configFile, &cfg, " (this provider's config has version, image, artifactsDir, apiservers, profile and etcdLinks; pass kind configurations to e2e-framework's kind provider)"); err != nil {
		return "", err
	}
	return p.create(ctx, cfg)
}

func (p *Provider) create(ctx context.Context, cfg Config) (string, error) {
	if cfg.ArtifactsDir == "" {
		cfg.ArtifactsDir = p.ArtifactsDir // WithArtifactsDir
	}
	if err := p.BeforeCreate(); err != nil {
		return "", err
	}
	if p.path != "" {
		return "", p.Errorf("WithPath(%q): the kind backend uses kind's Go library, not a kind binary", p.path)
	}
	var prof profile.Profile
	if cfg.Profile != "" {
		var err error
		if prof, err = profile.Load(cfg.Profile); err != nil {
			return "", p.Errorf("profile %q: %v", cfg.Profile, err)
		}
	}
	lifetime.ExitWithParent()
	c, err := backend.Start(ctx, backend.Options{Name: p.Name(), Image: cfg.Image, KubeVersion: cfg.Version, ArtifactsDir: cfg.ArtifactsDir, Progress: p.Progress,
		APIServers: cfg.APIServers, Profile: prof, EtcdLinks: cfg.EtcdLinks})
	if err != nil {
		return "", p.Errorf("%v", err)
	}
	kc, err := p.Created(c)
	if err != nil {
		_ = c.Close(context.Background())
		return "", err
	}
	return kc, nil
}

// LoadImage implements support.E2EClusterProviderWithImageLoader: it
// loads image, from the host's Docker, into the containerd of the
// cluster's nodes (the backend's LoadImages: kind's `load docker-image`
// through its Go library). Args: --nodes=NAME,... (kind's node container
// names; default every node).
func (p *Provider) LoadImage(ctx context.Context, image string, args ...string) error {
	c, nodes, err := p.loadTarget(args)
	if err != nil {
		return err
	}
	if err := c.LoadImages(ctx, nodes, image); err != nil {
		return p.Errorf("%v", err)
	}
	return nil
}

// LoadImageArchive implements support.E2EClusterProviderWithImageLoader:
// it loads the images of archivePath (`docker save`'s format, or OCI) into
// the containerd of the cluster's nodes (kind's `load image-archive`
// through its Go library). Args: --nodes=NAME,... as LoadImage.
func (p *Provider) LoadImageArchive(ctx context.Context, archivePath string, args ...string) error {
	c, nodes, err := p.loadTarget(args)
	if err != nil {
		return err
	}
	if err := c.LoadImageArchive(ctx, archivePath, nodes); err != nil {
		return p.Errorf("%v", err)
	}
	return nil
}

// loadTarget is the cluster and the nodes LoadImage's arguments name.
func (p *Provider) loadTarget(args []string) (*backend.Cluster, []string, error) {
	fs := flag.NewFlagSet("kind provider load", flag.ContinueOnError)
	nodeList := fs.String("nodes", "", "comma-separated node names")
	if err := p.ParseArgs(fs, args, "--nodes=NAME,..."); err != nil {
		return nil, nil, err
	}
	c, err := p.Cluster()
	if err != nil {
		return nil, nil, err
	}
	var nodes []string
	if *nodeList != "" {
		nodes = strings.Split(*nodeList, ",")
	}
	return c, nodes, nil
}

// Cluster is the running cluster, to break it (StopAPIServer,
// StartAPIServer, CompactEtcd, ...). An error before Create and after
// Destroy.
func (p *Provider) Cluster() (*backend.Cluster, error) {
	c, err := p.State.Cluster()
	if err != nil {
		return nil, err
	}
	return c.(*backend.Cluster), nil
}
