// Package provider is any of informer-conformance's backends (a
// cluster.Backend of the registry, cluster.RegisterBackend) as an
// e2e-framework cluster provider (support.E2EClusterProvider,
// sigs.k8s.io/e2e-framework v0.7.0 pkg/types/types.go):
//
//	import _ "github.com/informer-conformance/informer-conformance/cluster/local" // registers "local"
//
//	testenv.Setup(envfuncs.CreateClusterWithOpts(provider.New("local"), "c", provider.WithAPIServers(2)))
//
// Create prepares the backend (Backend.Prepare, once per process and
// configuration: the local backend builds its binaries, kind its node
// image) and starts the cluster (Backend.Start, within its StartTimeout)
// as the suite's harness does: the options make the cluster.Spec
// (WithAPIServers, WithEtcdLinks, WithProfile: one the backend cannot
// give is refused with its reason, Backend.Supports) and set the
// backend's variables for this cluster only (WithVersion: KUBE_VERSION,
// WithEtcdVersion: ETCD_VERSION, WithPath: INFORMER_CONFORMANCE_ASSETS,
// WithEnv: any of Backend.Vars), over the process's environment, which it
// leaves alone; every value is checked as the harness checks it
// (cluster.ReadEnv). Create's arguments are flags (--apiservers=N,
// --etcd-links, --profile=NAME, --version=V), CreateWithConfig's file a
// Config in YAML.
//
// The packages local and kind of this module are this provider for their
// backend with what only it has (the typed Cluster, kind's node image and
// image loading); the scenario features of package e2eframework find the
// cluster of any of them behind the environment's kubeconfig.
package provider

import (
	"sigs.k8s.io/e2e-framework/support"

	"github.com/informer-conformance/informer-conformance/integrations/e2eframework/internal/provider"
)

// New returns a provider for one cluster of the backend registered as
// backend: its package must be imported (cluster/local, cluster/kind,
// cluster/existing, or cluster/backends for all), else Create fails
// naming the registered ones.
func New(backend string) support.E2EClusterProvider {
	return provider.New(backend, provider.Extension{}, nil)
}

type (
	// Provider is what New returns; Cluster gives its cluster, to break
	// it through package cluster's capability interfaces.
	Provider = provider.Provider
	// Config is what CreateWithConfig reads from a YAML file.
	Config = provider.Config
)

// The options of a provider of this module (New, local.NewProvider,
// kind.NewProvider); a provider of another module ignores them.
var (
	WithAPIServers   = provider.WithAPIServers
	WithEtcdLinks    = provider.WithEtcdLinks
	WithProfile      = provider.WithProfile
	WithEtcdVersion  = provider.WithEtcdVersion
	WithEnv          = provider.WithEnv
	WithArtifactsDir = provider.WithArtifactsDir
	WithProgress     = provider.WithProgress
)
