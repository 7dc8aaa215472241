package existing

import (
	"context"
	"fmt"
	"k8s.io/client-go/tools/clientcmd"
	"strings"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/profile"
)

// ConnectTimeout bounds connecting to the existing backend's cluster.
const ConnectTimeout = 30 * time.Second

// The existing backend: the cluster of $INFORMER_CONFORMANCE_KUBECONFIG or
// $KUBECONFIG, connected to once per process; each spec works in a
// namespace of its own. It can neither start apiservers of its own nor set
// their flags, and has no fault capability.
func init() {
	cluster.RegisterBackend(cluster.Backend{
		Name:         "existing",
		Shared:       true,
		StartTimeout: ConnectTimeout,
		Vars: []cluster.Var{
			{Name: EnvKubeconfig, Kind: cluster.Paths, Doc: "the kubeconfig of the existing backend's cluster (default: KUBECONFIG)"},
			{Name: clientcmd.RecommendedConfigPathEnvVar, Kind: cluster.Paths, Doc: "the existing backend's kubeconfig files, merged as kubectl does, when INFORMER_CONFORMANCE_KUBECONFIG is unset"},
		},
		Supports: func(spec cluster.Spec) string {
			var missing []string
			if spec.APIServers > 1 {
				missing = append(missing, fmt.Sprintf("%d apiservers of its own", spec.APIServers))
			}
			if spec.Profile != "" && spec.Profile != profile.Default {
				missing = append(missing, fmt.Sprintf("kube-apiserver flags (profile %s)", spec.Profile))
			}
			if spec.EtcdLinks {
				missing = append(missing, "a fault point between each kube-apiserver and etcd")
			}
			return strings.Join(missing, ", ")
		},
		Start: func(ctx context.Context, _ cluster.Spec, h cluster.Harness) (cluster.Cluster, error) {
			c, err := Connect(ctx, Options{ArtifactsDir: h.ArtifactsDir,
				Kubeconfig: h.Env.Get(EnvKubeconfig), KubeconfigList: h.Env.Get(clientcmd.RecommendedConfigPathEnvVar)})
			if err != nil {
				return nil, err // a nil *Cluster would be a non-nil cluster.Cluster
			}
			if m := c.MissingKubeconfigs(); len(m) > 0 && h.Warn != nil {
				// kubectl ignores them too, but a typo in one entry of a
				// list must not pass unseen.
				h.Warn("existing backend: KUBECONFIG lists files that do not exist, ignored as kubectl ignores them: " + strings.Join(m, ", "))
			}
			return c, nil
		},
	})
}
