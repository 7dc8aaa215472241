package kind

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/kind/lbimage"
	"github.com/informer-conformance/informer-conformance/cluster/kind/nodeimage"
	"github.com/informer-conformance/informer-conformance/cluster/profile"
)

// StartTimeout bounds creating a process's kind cluster (kind create,
// kubeadm init, /readyz): 18-36 s measured on 2 cores; kind's own create
// gives up after CreateTimeout.
const StartTimeout = CreateTimeout + ReadyTimeout

// ClustersPerProcess is how many kind nodes (kube-apiservers: a cluster of
// several control-plane nodes counts each) a test process runs at once by
// default (cluster.Backend.SharedLimit): starting another cluster deletes
// the least recently used until it fits. What bounds them is the host's
// inotify instances, not memory: a node takes about 0.43 GiB, but also
// 21-26 of the 128 inotify instances Linux gives a user by default
// (fs.inotify.max_user_instances; every node's processes run as root:
// kubelet, kube-apiserver, kube-controller-manager, systemd, ...; measured
// 2026-11-26), and a node that finds none left fails kubeadm init with the
// kubelet's "inotify_init: too many open files" (kind's known issue "Pod
// errors due to too many open files"). Two per process, two processes
// (KIND_PROCS): four nodes; a three-node cluster runs alone in its process.
// EnvClustersPerProcess changes it.
const ClustersPerProcess = 2

// EnvClustersPerProcess sets ClustersPerProcess (a positive number), for
// hosts with more inotify instances (kind suggests 512) or fewer processes.
const EnvClustersPerProcess = "INFORMER_CONFORMANCE_KIND_CLUSTERS_PER_PROCESS"

// vars are the kind backend's environment variables.
// The node image build reads the binaries' version, cache and release
// source, not etcd's version or an assets directory.
var vars = append(slices.DeleteFunc(slices.Clone(binaries.Vars), func(v cluster.Var) bool {
	return v.Name == binaries.EnvEtcdVersion || v.Name == binaries.EnvAssets || v.Name == binaries.EnvUpgradeFrom
}),
	cluster.Var{Name: EnvNodeImage, Doc: "the kind node image (for example a published kindest/node:v1.36.x); default: the one make kind-image builds for KUBE_VERSION"},
	cluster.Var{Name: EnvClustersPerProcess, Kind: cluster.Count, Doc: fmt.Sprintf("how many kind nodes a test process runs at once (default %d; the host's inotify instances bound them)", ClustersPerProcess)},
)

// The kind backend: one kind cluster per test process, number of
// kube-apiservers and flag profile (the harness keeps a Shared backend's
// clusters by both: pool.Key), created by kind's Go library on first
// use and deleted after the suite; each spec gets a namespace of its own. A
// spec asking for several apiservers gets a cluster of that many
// control-plane nodes behind kind's load balancer. It restarts each
// kube-apiserver and compacts etcd; kube-apiserver's flags are kubeadm's
// and the spec's profile (profilePatches); once a spec asks for etcd links,
// each reaches its etcd member through a fault proxy (LinkEtcd).
func init() {
	cluster.RegisterBackend(cluster.Backend{
		Name:        "kind",
		Shared:      true,
		Vars:        vars,
		SharedLimit: func(env cluster.Env) int { return env.Count(EnvClustersPerProcess, ClustersPerProcess) },
		// The links go in on the cluster of a spec's other needs (two
		// control planes) when it first asks (LinkEtcd): no cluster of its own.
		EtcdLinksOnDemand: true,
		StartTimeout:      StartTimeout,
		Supports: func(spec cluster.Spec) string {
			var missing []string
			if spec.APIServers > MaxAPIServers {
				missing = append(missing, fmt.Sprintf("%d apiservers (at most %d control-plane nodes)", spec.APIServers, MaxAPIServers))
			}
			if spec.EtcdLinks && runtime.GOOS != "linux" {
				// The links listen on the kind network's gateway
				// (etcdlinks.go), an address of this host only where
				// Docker runs natively; elsewhere (Docker Desktop,
				// colima) it is the Linux VM's.
				missing = append(missing, fmt.Sprintf("etcd links (a fault proxy on the kind network's gateway, which is this host only where Docker runs on it: Linux, not %s)", runtime.GOOS))
			}
			return strings.Join(missing, ", ")
		},
		Start: func(ctx context.Context, spec cluster.Spec, h cluster.Harness) (cluster.Cluster, error) {
			opts := Options{
				Name:         h.Name,
				APIServers:   spec.APIServers,
				EtcdLinks:    spec.EtcdLinks,
				ArtifactsDir: h.ArtifactsDir,
				KubeVersion:  h.Env.Get(binaries.EnvKubeVersion),
				Image:        h.Env.Get(EnvNodeImage),
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
		KubeAPIServerVersion: func(env cluster.Env) string {
			if env.Get(EnvNodeImage) != "" {
				return ""
			}
			v, err := binaries.Versions{KubeAPIServer: env.Get(binaries.EnvKubeVersion)}.Normalize()
			if err != nil {
				return "" // the specs fail on it when they start their clusters
			}
			return v.KubeAPIServer
		},
		Prepare: func(ctx context.Context, h cluster.Harness) error {
			if h.Env.Get(EnvNodeImage) != "" {
				return nil // a published image: kind pulls it
			}
			tag, err := nodeimage.Build(ctx, nodeimage.Options{KubeVersion: h.Env.Get(binaries.EnvKubeVersion), Progress: h.Progress})
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
