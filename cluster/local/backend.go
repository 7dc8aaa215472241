package local

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/internal/process"
)

// StartTimeout bounds the start of a cluster of the local backend.
const StartTimeout = 2 * time.Minute

// versionTimeout bounds asking prebuilt binaries for their versions.
const versionTimeout = 30 * time.Second

// The local backend: a fresh control plane (etcd and kube-apiservers as
// processes of this machine) per spec; it has every capability.
func init() {
	cluster.RegisterBackend(cluster.Backend{
		Name:         "local",
		StartTimeout: StartTimeout,
		// Not the artifacts root: the harness resolves and checks it,
		// and gives each start its directory (cluster.Harness).
		Vars: append(slices.Clone(binaries.Vars),
			cluster.Var{Name: EnvFreshEtcd, Kind: cluster.Flag, Doc: "true: every local cluster starts on an empty etcd its kube-apiserver bootstraps, not on the bootstrapped template"}),
		Supports: func(cluster.Spec) string { return "" },
		Start: func(ctx context.Context, spec cluster.Spec, h cluster.Harness) (cluster.Cluster, error) {
			if err := checkBackendHost(); err != nil {
				return nil, err
			}
			opts, err := backendOptions(spec, h)
			if err != nil {
				return nil, err
			}
			c, err := Start(ctx, opts)
			if err != nil {
				return nil, err // a nil *Cluster would be a non-nil cluster.Cluster
			}
			return c, nil
		},
		Prepare: ensureBinaries,
		KubeAPIServerVersion: func(env cluster.Env) string {
			v, err := selectedVersions(env)
			if err != nil {
				return "" // the specs fail on it when they start their clusters
			}
			return v.KubeAPIServer
		},
		EtcdVersion: func(env cluster.Env) string {
			v, err := selectedVersions(env)
			if err != nil {
				return ""
			}
			return v.Etcd
		},
	})
}

// selectedVersions are the versions the local backend runs: KUBE_VERSION
// and ETCD_VERSION (or the pinned defaults), or, with
// INFORMER_CONFORMANCE_ASSETS, what its binaries say they are.
func selectedVersions(env cluster.Env) (binaries.Versions, error) {
	v, err := binaries.VersionsIn(env)
	if err != nil && env.Get(binaries.EnvAssets) == "" {
		return v, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	return binaries.Selected(ctx, v, binaries.OptionsIn(env))
}

// EnvFreshEtcd=true starts every local cluster on an empty etcd that its
// kube-apiserver bootstraps (Options.FreshEtcd), not on a restored
// bootstrapped one.
const EnvFreshEtcd = "INFORMER_CONFORMANCE_FRESH_ETCD"

// backendOptions are the local backend's options for spec.
func backendOptions(spec cluster.Spec, h cluster.Harness) (Options, error) {
	opts := Options{Name: h.Name, APIServers: spec.APIServers, EtcdLinks: spec.EtcdLinks, ArtifactsDir: h.ArtifactsDir, Progress: h.Progress,
		FreshEtcd: h.Env.Flag(EnvFreshEtcd), Find: binaries.OptionsIn(h.Env)}
	v, err := binaries.VersionsIn(h.Env)
	if err != nil && h.Env.Get(binaries.EnvAssets) == "" {
		return opts, err
	}
	if err == nil {
		opts.Versions = v // with an assets directory they are what its binaries say
	}
	if spec.Profile != "" {
		p, err := LoadProfile(spec.Profile)
		if err != nil {
			return opts, err
		}
		opts.Profile = p
	}
	return opts, nil
}

// ensureBinaries builds (or finds in the cache) the kube-apiserver, etcd
// and etcdutl the local backend runs, for KUBE_VERSION and ETCD_VERSION.
func ensureBinaries(ctx context.Context, h cluster.Harness) error {
	// First: on another OS the run fails here, before any spec and
	// before minutes of building binaries it could not run.
	if err := checkBackendHost(); err != nil {
		return err
	}
	find := binaries.OptionsIn(h.Env)
	if find.AssetsDir != "" {
		p, err := binaries.Ensure(ctx, binaries.Versions{}, find)
		if err != nil {
			return err
		}
		fmt.Fprintf(h.Progress, "binaries: kube-apiserver %s (%s), etcd %s (%s)\n", p.KubeAPIServer, p.Versions.KubeAPIServer, p.Etcd, p.Versions.Etcd)
		return nil
	}
	v, err := binaries.VersionsIn(h.Env)
	if err != nil {
		return err
	}
	find.Progress = h.Progress
	p, err := binaries.Ensure(ctx, v, find)
	if err != nil {
		return fmt.Errorf("kube-apiserver %s and etcd %s: %w", v.KubeAPIServer, v.Etcd, err)
	}
	fmt.Fprintf(h.Progress, "binaries: kube-apiserver %s, etcd %s\n", p.KubeAPIServer, p.Etcd)
	return nil
}

// CheckHost says why this OS cannot run the local backend's processes (nil:
// it can).
func CheckHost() error {
	if err := process.Supported(); err != nil {
		return fmt.Errorf("the local backend runs etcd and kube-apiserver as Linux processes that die with the test process (%w)", err)
	}
	return nil
}

// checkBackendHost is CheckHost with the backends to choose instead.
func checkBackendHost() error {
	if err := CheckHost(); err != nil {
		return fmt.Errorf("%w; on %s use the kind backend (INFORMER_CONFORMANCE_BACKEND=kind, make BACKEND=kind: clusters in Docker) "+
			"or the existing one (INFORMER_CONFORMANCE_BACKEND=existing: any cluster's KUBECONFIG)", err, runtime.GOOS)
	}
	return nil
}
