package local

import (
	"context"
	"fmt"
	"os"
	"runtime"
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
		PathEnv:  []string{binaries.EnvAssets, binaries.EnvCacheDir},
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
		// A spec's own cluster is the one started while the spec before
		// it ran, when that was started for the same cluster.Spec.
		StartDedicated: takeDedicated,
		Release:        func(ctx context.Context) error { return backendSpares.Close(ctx) },
		Prepare:        ensureBinaries,
		KubeAPIServerVersion: func() string {
			v, err := selectedVersions()
			if err != nil {
				return "" // the specs fail on it when they start their clusters
			}
			return v.KubeAPIServer
		},
		EtcdVersion: func() string {
			v, err := selectedVersions()
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
func selectedVersions() (binaries.Versions, error) {
	v, err := binaries.FromEnv()
	if err != nil && os.Getenv(binaries.EnvAssets) == "" {
		return v, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	return binaries.Selected(ctx, v, binaries.Options{})
}

// backendSpares keeps the next dedicated cluster of this process started
// (EnvSpares).
var backendSpares = &Spares{}

// EnvSpares=true starts the next dedicated local cluster of each test
// process while the current spec runs (Spares), for the same
// cluster.Spec as the current one. Off by default: on 2 cores and 4
// processes the starts ahead, mostly for a spec that never comes (the
// next spec of a process is rarely of the same cluster.Spec: 8 of 51
// were), cost more than they save (make e2e, 117 specs, a quiet
// machine: 284 s wall and 1083 spec-seconds with, 235 s and 897
// without). On a machine with cores to spare, or with one process, it
// hides the starts.
const EnvSpares = "INFORMER_CONFORMANCE_SPARES"

// takeDedicated gives a spec a local cluster of its own for spec: with
// EnvSpares, the spare started for the same spec while the spec before
// ran, or a new one, and then the next spare; else a new one.
func takeDedicated(ctx context.Context, spec cluster.Spec, h cluster.Harness) (cluster.Cluster, string, error) {
	if err := checkBackendHost(); err != nil {
		return nil, "", err
	}
	opts, err := backendOptions(spec, h)
	if err != nil {
		return nil, "", err
	}
	if os.Getenv(EnvSpares) != "true" {
		c, err := Start(ctx, opts)
		if err != nil {
			return nil, string(Started), err
		}
		return c, string(Started), nil
	}
	if backendSpares.ArtifactsDir == "" {
		backendSpares.ArtifactsDir = h.ProcessDir("spares")
		backendSpares.Errors = func(err error) { fmt.Fprintln(h.Progress, err) }
	}
	c, how, err := backendSpares.Take(ctx, fmt.Sprintf("%+v", spec), opts)
	if err != nil {
		return nil, string(how), err
	}
	if how != Started {
		fmt.Fprintf(h.Progress, "local cluster %s (%s), its logs in %s\n", c.Name(), how, c.ArtifactsDir())
	}
	return c, string(how), nil
}

// EnvFreshEtcd=true starts every local cluster on an empty etcd that its
// kube-apiserver bootstraps (Options.FreshEtcd), not on a restored
// bootstrapped one.
const EnvFreshEtcd = "INFORMER_CONFORMANCE_FRESH_ETCD"

// backendOptions are the local backend's options for spec.
func backendOptions(spec cluster.Spec, h cluster.Harness) (Options, error) {
	opts := Options{APIServers: spec.APIServers, EtcdLinks: spec.EtcdLinks, ArtifactsDir: h.ArtifactsDir, Progress: h.Progress,
		FreshEtcd: os.Getenv(EnvFreshEtcd) == "true"}
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
	if dir := os.Getenv(binaries.EnvAssets); dir != "" {
		p, err := binaries.Ensure(ctx, binaries.Versions{}, binaries.Options{})
		if err != nil {
			return err
		}
		fmt.Fprintf(h.Progress, "binaries: kube-apiserver %s (%s), etcd %s (%s)\n", p.KubeAPIServer, p.Versions.KubeAPIServer, p.Etcd, p.Versions.Etcd)
		return nil
	}
	v, err := binaries.FromEnv()
	if err != nil {
		return err
	}
	p, err := binaries.Ensure(ctx, v, binaries.Options{Progress: h.Progress})
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
