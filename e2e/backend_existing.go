package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"

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
			if spec.EtcdLinks {
				missing = append(missing, "a fault point between each kube-apiserver and etcd")
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
			if m := c.MissingKubeconfigs(); len(m) > 0 {
				// kubectl ignores them too, but a typo in one entry of a
				// list must not pass unseen.
				warnOnce("existing backend: KUBECONFIG lists files that do not exist, ignored as kubectl ignores them: %s", strings.Join(m, ", "))
			}
			return c, nil
		},
	})
}

var warned sync.Map

// warnOnce says something a user must see whatever the verbosity, once per
// process: to stderr (Ginkgo prints a parallel process's output) and to the
// spec's log.
func warnOnce(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if _, seen := warned.LoadOrStore(msg, true); seen {
		return
	}
	fmt.Fprintln(os.Stderr, "WARNING: "+msg)
	ginkgo.GinkgoWriter.Println("WARNING: " + msg)
}
