package kind

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/kind/lbimage"
	"github.com/informer-conformance/informer-conformance/cluster/kind/nodeimage"
)

// StartTimeout bounds creating a process's kind cluster (kind create,
// kubeadm init, /readyz): 18-36 s measured on 2 cores; kind's own create
// gives up after CreateTimeout.
const StartTimeout = CreateTimeout + ReadyTimeout

// The kind backend: one kind cluster per test process, created by kind's
// Go library on first use and deleted after the suite; each spec gets a
// namespace of its own; a spec asking for several apiservers gets a cluster
// of that many control-plane nodes, shared by such specs (e2e's shared
// key). It restarts each kube-apiserver and compacts etcd; default flags.
func init() {
	cluster.RegisterBackend(cluster.Backend{
		Name:         "kind",
		Shared:       true,
		StartTimeout: StartTimeout,
		Supports: func(spec cluster.Spec) string {
			var missing []string
			if spec.APIServers > MaxAPIServers {
				missing = append(missing, fmt.Sprintf("%d apiservers (at most %d control-plane nodes)", spec.APIServers, MaxAPIServers))
			}
			if spec.Profile != "" {
				missing = append(missing, fmt.Sprintf("kube-apiserver flags (profile %s) on a cluster its specs share", spec.Profile))
			}
			if spec.EtcdLinks {
				missing = append(missing, "a fault point between each kube-apiserver and etcd")
			}
			return strings.Join(missing, ", ")
		},
		Start: func(ctx context.Context, spec cluster.Spec, h cluster.Harness) (cluster.Cluster, error) {
			c, err := Start(ctx, Options{
				APIServers:   spec.APIServers,
				ArtifactsDir: h.ArtifactsDir,
				KubeVersion:  os.Getenv(binaries.EnvKubeVersion),
				Progress:     h.Progress,
			})
			if err != nil {
				return nil, err // a nil *Cluster would be a non-nil cluster.Cluster
			}
			return c, nil
		},
		Prepare: func(ctx context.Context, h cluster.Harness) error {
			if os.Getenv(EnvNodeImage) != "" {
				return nil // a published image: kind pulls it
			}
			tag, err := nodeimage.Build(ctx, nodeimage.Options{KubeVersion: os.Getenv(binaries.EnvKubeVersion), Progress: h.Progress})
			if err != nil {
				return err
			}
			fmt.Fprintf(h.Progress, "kind node image: %s\n", tag)
			// kind's load balancer, for the specs of several apiservers:
			// built too (haproxy), as its image cannot be pulled either.
			lb, err := lbimage.Build(ctx, lbimage.Options{Progress: h.Progress})
			if err != nil {
				return err
			}
			fmt.Fprintf(h.Progress, "kind load balancer image: %s\n", lb)
			return nil
		},
	})
}
