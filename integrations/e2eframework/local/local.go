// Package local is an e2e-framework cluster provider
// (support.E2EClusterProvider, sigs.k8s.io/e2e-framework v0.7.0
// pkg/types/types.go) for informer-conformance's local backend: a real etcd
// and real kube-apiservers, built once from pinned upstream source, started
// as processes of this machine in seconds, without Docker. It is this
// module's provider (package provider) for the backend "local", plus what
// only the local backend has.
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
	"fmt"
	"runtime"

	"sigs.k8s.io/e2e-framework/support"

	backend "github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/integrations/e2eframework/internal/provider"
)

// DefaultName is the cluster's name when neither WithName nor
// envfuncs.CreateCluster gives one.
const DefaultName = "informer-conformance"

// Provider is the local backend as an e2e-framework cluster provider. Make
// one per cluster with NewProvider.
type Provider struct {
	*provider.Provider
}

// Config is what a local cluster is made of; CreateWithConfig reads it
// from a YAML file (provider.Config: apiServers, etcdLinks, profile,
// version, etcdVersion, path, artifactsDir, env).
type Config = provider.Config

// NewProvider returns a provider for one local cluster.
func NewProvider() support.E2EClusterProvider {
	p := &Provider{}
	p.Provider = provider.New("local", provider.Extension{
		DefaultName: DefaultName,
		NewName:     backend.NewName,
		// Before the binaries' build, which would be minutes for nothing.
		Check: func(provider.Config) error {
			if err := backend.CheckHost(); err != nil {
				return fmt.Errorf("%w; on %s use this module's kind provider (integrations/e2eframework/kind)", err, runtime.GOOS)
			}
			return nil
		},
	}, p)
	return p
}

var _ support.E2EClusterProviderWithImageLoader = (*Provider)(nil)

var (
	// WithAPIServers sets the number of kube-apiservers over the one etcd
	// (1-3, default 1; the S1 and S5 fail-over scenarios need 2).
	WithAPIServers = provider.WithAPIServers
	// WithEtcdLinks puts a fault proxy between each kube-apiserver and
	// etcd (cluster.EtcdLinks): the lagging-apiserver scenario (S24)
	// stalls one apiserver's link, and skips on a cluster without them.
	WithEtcdLinks = provider.WithEtcdLinks
	// WithProfile sets the kube-apiserver flag profile: a name of
	// fixtures/profiles (several joined by "+") or a YAML file.
	WithProfile = provider.WithProfile
	// WithEtcdVersion sets the etcd version (3.5.x to 3.7.x).
	WithEtcdVersion = provider.WithEtcdVersion
	// WithArtifactsDir sets where the processes write their logs (default:
	// <artifacts root>/<cluster name>, report.ArtifactsRoot:
	// $INFORMER_CONFORMANCE_ARTIFACTS, else ./_artifacts).
	WithArtifactsDir = provider.WithArtifactsDir
	// WithProgress sends a line per build and lifecycle step to w (a first
	// build of kube-apiserver takes minutes).
	WithProgress = provider.WithProgress
)

// ErrNoNodes is what LoadImage and LoadImageArchive return: the local
// backend has no node to load an image into.
var ErrNoNodes = errors.New("the local backend runs kube-apiserver and etcd only, no kubelet, container runtime, scheduler or controllers: pods never run and images cannot be loaded (use the kind provider, package integrations/e2eframework/kind, for workloads)")

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
	c, err := p.Provider.Cluster()
	if err != nil {
		return nil, err
	}
	return c.(*backend.Cluster), nil
}
