package kind

import (
	"context"
	"fmt"
	"os"
	"strconv"
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

// ClustersPerProcess is how many kind clusters (one per flag profile) a
// test process keeps at once by default (cluster.Backend.SharedLimit):
// starting another deletes the least recently used. What bounds them is
// the host's inotify instances, not memory: a node takes about 0.43 GiB,
// but also 21-26 of the 128 inotify instances Linux gives a user by
// default (fs.inotify.max_user_instances; every node's processes run as
// root: kubelet, kube-apiserver, kube-controller-manager, systemd, ...;
// measured 2026-11-26), and a node that finds none left fails kubeadm init
// with the kubelet's "inotify_init: too many open files" (kind's known
// issue "Pod errors due to too many open files"). Two per process, two
// processes (KIND_PROCS): four nodes. EnvClustersPerProcess changes it.
const ClustersPerProcess = 2

// EnvClustersPerProcess sets ClustersPerProcess (a positive number), for
// hosts with more inotify instances (kind suggests 512) or fewer processes.
const EnvClustersPerProcess = "INFORMER_CONFORMANCE_KIND_CLUSTERS_PER_PROCESS"

// clustersPerProcess is EnvClustersPerProcess, or ClustersPerProcess when
// it is unset or not a positive number.
func clustersPerProcess() int {
	if n, err := strconv.Atoi(os.Getenv(EnvClustersPerProcess)); err == nil && n > 0 {
		return n
	}
	return ClustersPerProcess
}

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
		SharedLimit:  clustersPerProcess(),
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
		// The version of the node image the backend builds; a published
		// one's ($KIND_NODE_IMAGE) its cluster tells.
		KubeAPIServerVersion: func() string {
			if os.Getenv(EnvNodeImage) != "" {
				return ""
			}
			v, err := binaries.Versions{KubeAPIServer: os.Getenv(binaries.EnvKubeVersion)}.Normalize()
			if err != nil {
				return "" // the specs fail on it when they start their clusters
			}
			return v.KubeAPIServer
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
