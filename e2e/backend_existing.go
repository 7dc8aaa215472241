package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/existing"
)

// existingConnectTimeout bounds connecting to the existing backend's cluster.
const existingConnectTimeout = 30 * time.Second

// The existing backend: the cluster of $INFORMER_CONFORMANCE_KUBECONFIG or
// $KUBECONFIG, connected to once per process; each spec works in a
// namespace of its own. It can neither start apiservers of its own nor set
// their flags, and has no fault capability.
func init() {
	RegisterBackend(BackendDriver{
		Name:   "existing",
		Shared: true,
		Supports: func(spec cluster.Spec) string {
			var missing []string
			if spec.APIServers > 1 {
				missing = append(missing, fmt.Sprintf("%d apiservers of its own", spec.APIServers))
			}
			if spec.Profile != "" && spec.Profile != "default" {
				missing = append(missing, fmt.Sprintf("kube-apiserver flags (profile %s)", spec.Profile))
			}
			return strings.Join(missing, ", ")
		},
		Start: func(ctx context.Context, _ cluster.Spec, artifactsDir string) (cluster.Cluster, error) {
			ctx, cancel := context.WithTimeout(ctx, existingConnectTimeout)
			defer cancel()
			c, err := existing.Connect(ctx, existing.Options{ArtifactsDir: artifactsDir})
			if err != nil {
				return nil, err
			}
			return c, nil
		},
	})
}
