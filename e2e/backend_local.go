package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/local"
)

// The local backend: a fresh control plane (etcd and kube-apiservers as
// processes of this machine) per spec; it has every capability.
func init() {
	RegisterBackend(BackendDriver{
		Name:     "local",
		Supports: func(cluster.Spec) string { return "" },
		Start:    startLocal,
		// A spec's own cluster is the one started while the spec before
		// it ran, when that was started for the same cluster.Spec.
		StartDedicated: takeLocal,
		Release: func(ctx context.Context) error {
			return localSpares.Close(ctx)
		},
		Prepare: ensureLocalBinaries,
		KubeAPIServerVersion: func() string {
			v, err := localVersions()
			if err != nil {
				return "" // the specs fail on it when they start their clusters
			}
			return v.KubeAPIServer
		},
	})
}

// localVersionTimeout bounds asking prebuilt binaries for their versions.
const localVersionTimeout = 30 * time.Second

// localVersions are the versions the local backend runs: KUBE_VERSION and
// ETCD_VERSION (or the pinned defaults), or, with
// INFORMER_CONFORMANCE_ASSETS, what its binaries say they are.
func localVersions() (binaries.Versions, error) {
	v, err := binaries.FromEnv()
	if err != nil && os.Getenv(binaries.EnvAssets) == "" {
		return v, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), localVersionTimeout)
	defer cancel()
	return binaries.Selected(ctx, v, binaries.Options{})
}

// startLocal starts a local cluster for spec; its process logs go to
// artifactsDir and its progress to GinkgoWriter.
func startLocal(ctx context.Context, spec cluster.Spec, artifactsDir string) (cluster.Cluster, error) {
	opts, err := localOptions(spec, artifactsDir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ClusterStartTimeout)
	defer cancel()
	c, err := local.Start(ctx, opts)
	if err != nil {
		return nil, err // a nil *local.Cluster would be a non-nil cluster.Cluster
	}
	return c, nil
}

// localSpares keeps the next dedicated cluster of this process started
// (EnvSpares).
var localSpares = &local.Spares{Errors: func(err error) { ginkgo.GinkgoWriter.Println(err) }}

// EnvSpares=true starts the next dedicated local cluster of each Ginkgo
// process while the current spec runs (local.Spares), for the same
// cluster.Spec as the current one. Off by default: on 2 cores and 4
// processes the starts ahead, mostly for a spec that never comes (the
// next spec of a process is rarely of the same cluster.Spec: 8 of 51
// were), cost more than they save (make e2e, 117 specs, a quiet
// machine: 284 s wall and 1083 spec-seconds with, 235 s and 897
// without). On a machine with cores to spare, or with one process, it
// hides the starts.
const EnvSpares = "INFORMER_CONFORMANCE_SPARES"

// takeLocal gives a spec a local cluster of its own for spec: with
// EnvSpares, the spare started for the same spec while the spec before
// ran, or a new one, and then the next spare; else a new one.
func takeLocal(ctx context.Context, spec cluster.Spec, artifactsDir string) (cluster.Cluster, string, error) {
	if os.Getenv(EnvSpares) != "true" {
		c, err := startLocal(ctx, spec, artifactsDir)
		return c, string(local.Started), err
	}
	opts, err := localOptions(spec, artifactsDir)
	if err != nil {
		return nil, "", err
	}
	if localSpares.ArtifactsDir == "" {
		localSpares.ArtifactsDir = processArtifactsDir("spares")
	}
	ctx, cancel := context.WithTimeout(ctx, ClusterStartTimeout)
	defer cancel()
	c, how, err := localSpares.Take(ctx, fmt.Sprintf("%+v", spec), opts)
	if err != nil {
		return nil, string(how), err
	}
	if how != local.Started {
		ginkgo.GinkgoWriter.Printf("local cluster %s (%s), its logs in %s\n", c.Name(), how, c.ArtifactsDir())
	}
	return c, string(how), nil
}

// EnvFreshEtcd=true starts every local cluster on an empty etcd that its
// kube-apiserver bootstraps (local.Options.FreshEtcd), not on a restored
// bootstrapped one.
const EnvFreshEtcd = "INFORMER_CONFORMANCE_FRESH_ETCD"

// localOptions are the local backend's options for spec.
func localOptions(spec cluster.Spec, artifactsDir string) (local.Options, error) {
	opts := local.Options{APIServers: spec.APIServers, EtcdLinks: spec.EtcdLinks, ArtifactsDir: artifactsDir, Progress: ginkgo.GinkgoWriter,
		FreshEtcd: os.Getenv(EnvFreshEtcd) == "true"}
	if spec.Profile != "" {
		p, err := local.LoadProfile(spec.Profile)
		if err != nil {
			return opts, err
		}
		opts.Profile = p
	}
	return opts, nil
}

// ensureLocalBinaries builds (or finds in the cache) the kube-apiserver,
// etcd and etcdutl the local backend runs, for KUBE_VERSION and
// ETCD_VERSION.
func ensureLocalBinaries(ctx context.Context) error {
	if dir := os.Getenv(binaries.EnvAssets); dir != "" {
		p, err := binaries.Ensure(ctx, binaries.Versions{}, binaries.Options{})
		if err != nil {
			return err
		}
		ginkgo.GinkgoWriter.Printf("binaries: kube-apiserver %s (%s), etcd %s (%s)\n", p.KubeAPIServer, p.Versions.KubeAPIServer, p.Etcd, p.Versions.Etcd)
		return nil
	}
	v, err := binaries.FromEnv()
	if err != nil {
		return err
	}
	p, err := binaries.Ensure(ctx, v, binaries.Options{Progress: buildProgress()})
	if err != nil {
		return fmt.Errorf("kube-apiserver %s and etcd %s: %w", v.KubeAPIServer, v.Etcd, err)
	}
	ginkgo.GinkgoWriter.Printf("binaries: kube-apiserver %s, etcd %s\n", p.KubeAPIServer, p.Etcd)
	return nil
}

// buildProgress is where a backend's Prepare reports a build: a first build
// takes minutes, so its steps go to the terminal as they happen
// (GinkgoWriter streams only in verbose runs).
func buildProgress() io.Writer {
	if _, rc := ginkgo.GinkgoConfiguration(); rc.Verbose || rc.VeryVerbose {
		return ginkgo.GinkgoWriter
	}
	return os.Stderr
}
