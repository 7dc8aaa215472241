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
		Prepare:  ensureLocalBinaries,
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
	opts := local.Options{APIServers: spec.APIServers, EtcdLinks: spec.EtcdLinks, ArtifactsDir: artifactsDir, Progress: ginkgo.GinkgoWriter}
	if spec.Profile != "" {
		p, err := local.LoadProfile(spec.Profile)
		if err != nil {
			return nil, err
		}
		opts.Profile = p
	}
	ctx, cancel := context.WithTimeout(ctx, ClusterStartTimeout)
	defer cancel()
	c, err := local.Start(ctx, opts)
	if err != nil {
		return nil, err // a nil *local.Cluster would be a non-nil cluster.Cluster
	}
	return c, nil
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
