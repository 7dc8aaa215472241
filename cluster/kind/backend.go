package kind

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/kind/nodeimage"
	"github.com/informer-conformance/informer-conformance/cluster/profile"
)

// StartTimeout bounds creating a process's kind cluster (kind create,
// kubeadm init, /readyz): 18-36 s measured on 2 cores; kind's own create
// gives up after CreateTimeout.
const StartTimeout = CreateTimeout + ReadyTimeout

// The kind backend: one kind cluster per test process and flag profile
// (the harness keeps a Shared backend's clusters by profile), created by
// kind's Go library on first use and deleted after the suite; each spec
// gets a namespace of its own. It restarts kube-apiserver and compacts
// etcd; one control-plane node, kube-apiserver's flags those of kubeadm
// and the spec's profile (profilePatches).
func init() {
	cluster.RegisterBackend(cluster.Backend{
		Name:         "kind",
		Shared:       true,
		StartTimeout: StartTimeout,
		Supports: func(spec cluster.Spec) string {
			var missing []string
			if spec.APIServers > 1 {
				missing = append(missing, fmt.Sprintf("%d apiservers of its own (one control-plane node: more needs kind's load-balancer image, which cannot be pulled offline)", spec.APIServers))
			}
			if spec.EtcdLinks {
				missing = append(missing, "a fault point between each kube-apiserver and etcd")
			}
			return strings.Join(missing, ", ")
		},
		Start: func(ctx context.Context, spec cluster.Spec, h cluster.Harness) (cluster.Cluster, error) {
			opts := Options{
				ArtifactsDir: h.ArtifactsDir,
				KubeVersion:  os.Getenv(binaries.EnvKubeVersion),
				Progress:     h.Progress,
			}
			if spec.Profile != "" {
				p, err := profile.Load(spec.Profile)
				if err != nil {
					return nil, err
				}
				opts.Profile = p
			}
			c, err := Start(ctx, opts)
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
			return nil
		},
	})
}
