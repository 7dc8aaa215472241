package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/informer-conformance/informer-conformance/cluster/existing"
	"github.com/informer-conformance/informer-conformance/cluster/local"
)

// EnvBackend selects the backend the specs run on: "local" (default, a
// fresh control plane per spec) or "existing" (the cluster of
// $INFORMER_CONFORMANCE_KUBECONFIG or $KUBECONFIG; specs that need to break
// the control plane skip).
const EnvBackend = "INFORMER_CONFORMANCE_BACKEND"

// Backend names.
const (
	BackendLocal    = "local"
	BackendExisting = "existing"
)

// Backend is the backend selected by EnvBackend.
func Backend() (string, error) {
	switch b := os.Getenv(EnvBackend); b {
	case "", BackendLocal:
		return BackendLocal, nil
	case BackendExisting:
		return b, nil
	default:
		return "", fmt.Errorf("%s=%q: choose %q or %q (kind: issue 6)", EnvBackend, b, BackendLocal, BackendExisting)
	}
}

var (
	existingOnce    sync.Once
	existingCluster *existing.Cluster
	existingErr     error
)

// Existing connects (once per process) to the existing backend's cluster.
func Existing(ctx context.Context) (*existing.Cluster, error) {
	existingOnce.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		existingCluster, existingErr = existing.Connect(ctx, existing.Options{ArtifactsDir: ArtifactsRoot()})
	})
	return existingCluster, existingErr
}

// skipUnlessPortable skips the current spec on a backend that cannot give
// it what it asks of the local backend, naming what is missing.
func skipUnlessPortable(backend string, opts local.Options) {
	ginkgo.GinkgoHelper()
	var missing []string
	for _, l := range ginkgo.CurrentSpecReport().Labels() {
		if cap, ok := strings.CutPrefix(l, "capability:"); ok {
			missing = append(missing, cap)
		}
		if l == "backend:local" {
			missing = append(missing, "the local backend's own processes")
		}
	}
	if opts.APIServers > 1 {
		missing = append(missing, fmt.Sprintf("%d apiservers of its own", opts.APIServers))
	}
	if len(opts.Profile.APIServerFlags)+len(opts.Profile.FeatureGates) > 0 {
		missing = append(missing, fmt.Sprintf("kube-apiserver flags (profile %s)", opts.Profile.Name))
	}
	if len(missing) > 0 {
		ginkgo.Skip(fmt.Sprintf("backend %s lacks %s: run this spec on the local backend", backend, strings.Join(missing, ", ")))
	}
}
