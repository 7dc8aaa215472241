// Package kind is an e2e-framework cluster provider
// (support.E2EClusterProvider) for informer-conformance's kind backend: a
// real kind cluster made through kind's Go library
// (sigs.k8s.io/kind/pkg/cluster), not its CLI, on the node image `make
// kind-image` builds offline (or a published one, WithImage /
// KIND_NODE_IMAGE), with the restricted-host Docker adapter where the
// daemon cannot start privileged containers. It is this module's provider
// (package provider) for the backend "kind", plus what only the kind
// backend has: the node image (WithImage) and image loading.
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
	"fmt"
	"strings"

	"sigs.k8s.io/e2e-framework/support"

	backend "github.com/informer-conformance/informer-conformance/cluster/kind"
	"github.com/informer-conformance/informer-conformance/integrations/e2eframework/internal/provider"
)

// Provider is the kind backend as an e2e-framework cluster provider. Make
// one per cluster with NewProvider.
type Provider struct {
	*provider.Provider
}

// Config is what CreateWithConfig reads from a YAML file (provider.Config:
// version, artifactsDir, apiServers, profile, etcdLinks, env), and image.
// It is not a kind configuration: the backend writes that itself (the
// kubeadm and kubelet settings its node image needs); pass kind
// configurations to e2e-framework's own kind provider.
//
//	version: v1.37.2                  # kube-apiserver: picks the built node image
//	image: kindest/node:v1.37.2       # a published node image instead (KIND_NODE_IMAGE)
//	apiServers: 2                     # control-plane nodes behind kind's load balancer (1-3)
//	profile: no-watch-cache           # kube-apiserver flag profile (fixtures/profiles), "+" joins several
//	etcdLinks: true                   # a fault proxy between each kube-apiserver and etcd
type Config = provider.Config

// NewProvider returns a provider for one kind cluster. Without a name the
// backend picks a unique one.
func NewProvider() support.E2EClusterProvider {
	p := &Provider{}
	p.Provider = provider.New("kind", provider.Extension{
		Settings: []provider.Setting{{Name: "image", Var: backend.EnvNodeImage, Usage: "node image"}},
		// The kind backend runs no kind or docker binary of the user's
		// (kind's Go library does the work, and the Docker adapter, when
		// needed, is its own): a path is an error, not silently ignored.
		Check: func(cfg provider.Config) error {
			if cfg.Path != "" {
				return fmt.Errorf("WithPath(%q): the kind backend uses kind's Go library, not a kind binary", cfg.Path)
			}
			return nil
		},
		ConfigHint: " (this provider's config has version, image, artifactsDir, apiServers, profile, etcdLinks and env; pass kind configurations to e2e-framework's kind provider)",
	}, p)
	return p
}

var _ support.E2EClusterProviderWithImageLoader = (*Provider)(nil)

// WithImage sets the node image (default: KIND_NODE_IMAGE, else the one
// `make kind-image` built for the version); Create's --image=IMAGE and
// the config's image set it too.
func WithImage(image string) support.ClusterOpts {
	return provider.WithEnv(backend.EnvNodeImage, image)
}

var (
	// WithAPIServers sets the number of control-plane nodes (1-3; more than
	// one: behind kind's load balancer), for the scenarios that stop one
	// apiserver while another takes writes (capability ha).
	WithAPIServers = provider.WithAPIServers
	// WithProfile sets the kube-apiserver flag profile (a name of
	// fixtures/profiles or a file; "+" joins several), given through
	// kubeadm's configuration.
	WithProfile = provider.WithProfile
	// WithEtcdLinks puts a fault proxy between each kube-apiserver and its
	// etcd member (cluster.EtcdLinks; on the kind network's gateway, etcd's
	// serving certificates reissued to carry its address): the
	// lagging-apiserver scenario (S24) stalls one apiserver's link, and
	// skips on a cluster without them.
	WithEtcdLinks = provider.WithEtcdLinks
	// WithArtifactsDir sets where exported logs go (default: <artifacts
	// root>/<cluster name>).
	WithArtifactsDir = provider.WithArtifactsDir
	// WithProgress sends kind's progress lines and the backend's own to w.
	WithProgress = provider.WithProgress
)

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
	fs := flag.NewFlagSet("LoadImage", flag.ContinueOnError)
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
	c, err := p.Provider.Cluster()
	if err != nil {
		return nil, err
	}
	return c.(*backend.Cluster), nil
}
