// Package cluster defines what the conformance suite needs of a Kubernetes
// cluster: one small interface every backend implements (local, kind,
// existing), plus optional capability interfaces for the faults only some
// backends can inject. A spec asserts a capability with a type assertion and
// skips, naming the capability, when the backend lacks it.
//
// Everything here is plain Go that returns errors, usable from tests and from
// the tools in hack/.
package cluster

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
)

// User selects the identity of a client.
type User string

const (
	// Admin is in system:masters.
	Admin User = "admin"
	// TestUser may only do what informers under test need: read and write
	// pods, configmaps, secrets, events and namespaces, and the suite's custom
	// resources (least privilege).
	TestUser User = "test-user"
)

// Spec is what a spec asks of its cluster, whatever the backend.
type Spec struct {
	APIServers int    // 0 or 1 = one; more = HA (only backends that can run several)
	Profile    string // kube-apiserver flag profile name (fixtures/profiles/<name>.yaml), several joined by "+" apply in order; "" = default
	EtcdLinks  bool   // each kube-apiserver reaches etcd through a fault proxy of its own (EtcdLinks)
}

// Cluster is a running cluster.
type Cluster interface {
	// Name identifies the cluster in logs and reports.
	Name() string
	// RESTConfig returns a new config for user; callers may modify it.
	RESTConfig(user User) (*rest.Config, error)
	// KubeconfigPath returns the path of a kubeconfig file for user.
	KubeconfigPath(user User) (string, error)
	// ArtifactsDir is where the backend writes its logs.
	ArtifactsDir() string
	// Close stops whatever the backend started and releases its resources.
	Close(ctx context.Context) error
	// Every cluster gives clients for another address: a fault proxy goes
	// in front of each spec's kube-apiservers.
	Addressable
}

// Addressable clusters give clients for another address (a fault proxy in
// front of the apiserver); every Cluster is one.
type Addressable interface {
	// APIServerAddrs are host:port of every kube-apiserver, the fault proxy's upstreams.
	APIServerAddrs() []string
	// RESTConfigFor is RESTConfig(u) for a client reaching the server at host (TLS still verified against the real server name).
	RESTConfigFor(u User, host string) (*rest.Config, error)
}

// ServerVersioner clusters know the version of the kube-apiserver they run.
type ServerVersioner interface {
	// ServerVersion is kube-apiserver's gitVersion (e.g. v1.36.3), "" if unknown.
	ServerVersion() string
}

// Profiled clusters run their kube-apiservers with a named flag profile
// (fixtures/profiles; "" for none), which a caller may check before a
// scenario that needs one.
type Profiled interface {
	ProfileName() string
}

// ProcessInspector clusters run their control plane as processes of this
// machine, so a spec may read their /proc entries (e.g. peak memory).
type ProcessInspector interface {
	// Pids are the process IDs of the running processes by name ("etcd",
	// "kube-apiserver-0", ...).
	Pids() map[string]int
}

// StopMode says how to stop a process.
type StopMode string

const (
	// Graceful sends SIGTERM and waits for the process to exit on its own.
	// If ctx ends first, the local backend kills it (SIGKILL, as a
	// supervisor does when its termination grace runs out) and the error
	// wraps ctx's.
	Graceful StopMode = "graceful"
	// Hard sends SIGKILL.
	Hard StopMode = "hard"
)

// Validate reports an unknown mode.
func (m StopMode) Validate() error {
	if m != Graceful && m != Hard {
		return fmt.Errorf("unknown stop mode %q: use %q or %q", m, Graceful, Hard)
	}
	return nil
}

// APIServerController can stop and start kube-apiservers. Index i selects one
// of NumAPIServers(); a restarted apiserver keeps its address and certificates.
type APIServerController interface {
	NumAPIServers() int
	// APIServerURL is the https URL of apiserver i.
	APIServerURL(i int) string
	StopAPIServer(ctx context.Context, i int, mode StopMode) error
	// StartAPIServer starts a stopped apiserver and returns when /readyz is ok.
	StartAPIServer(ctx context.Context, i int) error
	// RestartAPIServer is Stop then Start: the old process is gone and the new
	// one ready when it returns.
	RestartAPIServer(ctx context.Context, i int, mode StopMode) error
}

// APIServerUpgrader clusters can run one of their kube-apiservers at another
// version in place: the same address, certificates, flags and etcd, as a
// control-plane upgrade replaces one member at a time.
type APIServerUpgrader interface {
	APIServerController
	// SwitchAPIServer stops apiserver i (mode; one stopped already, by
	// StopAPIServer, is left so), starts kube-apiserver version in its
	// place and returns when it is ready. The version's
	// binary must be built already: the error of one that is not says how
	// to build it.
	SwitchAPIServer(ctx context.Context, i int, version string, mode StopMode) error
	// APIServerVersion is the version apiserver i runs.
	APIServerVersion(i int) string
}

// EtcdController can stop and start the cluster's etcd, keeping its data.
type EtcdController interface {
	StopEtcd(ctx context.Context, mode StopMode) error
	StartEtcd(ctx context.Context) error
	RestartEtcd(ctx context.Context, mode StopMode) error
}

// EtcdLinks clusters put a fault proxy between each kube-apiserver and
// etcd (Spec.EtcdLinks): a fault point on one apiserver's storage path, e.g.
// its etcd watch stalled (StallAfter(0) on the link holds etcd's answers and
// events) while the other apiservers stay current.
type EtcdLinks interface {
	EtcdLink(i int) (*faultproxy.Proxy, error)
}

// EtcdLinker clusters can put the links of EtcdLinks in place while they
// run (the kind backend restarts each kube-apiserver on them): on a Shared
// backend with Backend.EtcdLinksOnDemand, a spec asking for etcd links
// shares the cluster of its other needs, which gets them when a spec first
// asks, and keeps them.
type EtcdLinker interface {
	EtcdLinks
	// LinkEtcd puts the links in place, once (later calls return nil).
	LinkEtcd(ctx context.Context) error
}

// EtcdCompactor compacts the cluster's etcd history.
type EtcdCompactor interface {
	// EtcdRevision is etcd's current revision.
	EtcdRevision(ctx context.Context) (int64, error)
	// CompactEtcd compacts to rev, or to the current revision when rev <= 0,
	// and returns the revision compacted to.
	CompactEtcd(ctx context.Context, rev int64) (int64, error)
}

// RestoreOptions control an etcd restore.
type RestoreOptions struct {
	// BumpRevision raises every revision after the restore by this much, so
	// resourceVersions do not go backwards; needs MarkCompacted.
	BumpRevision uint64
	// MarkCompacted marks the restored revision compacted, so watches from
	// older resourceVersions get 410 Gone.
	MarkCompacted bool
}

// Validate reports a combination etcdutl rejects.
func (o RestoreOptions) Validate() error {
	if o.BumpRevision > 0 && !o.MarkCompacted {
		return fmt.Errorf("restore with BumpRevision %d needs MarkCompacted (etcdutl --mark-compacted)", o.BumpRevision)
	}
	if o.BumpRevision == 0 && o.MarkCompacted {
		return fmt.Errorf("restore with MarkCompacted needs BumpRevision > 0 (etcdutl rejects --mark-compacted alone)")
	}
	return nil
}

// EtcdSnapshotter saves etcd snapshots and restores etcd from them.
type EtcdSnapshotter interface {
	// SnapshotEtcd writes a snapshot to path and returns the revision it holds.
	SnapshotEtcd(ctx context.Context, path string) (int64, error)
	// RestoreEtcd replaces etcd's data with the snapshot. kube-apiservers are
	// stopped for it and started again (their watch caches would otherwise
	// serve the discarded history); it returns when they are ready.
	RestoreEtcd(ctx context.Context, path string, opts RestoreOptions) error
}

// Recoverer clusters, shared by the specs of a process, make sure they are
// fit for the next spec: what a failed spec left broken (an apiserver it
// stopped) is put back, and what cannot be (a node container killed) is an
// error naming it.
type Recoverer interface {
	Recover(ctx context.Context) error
}

// LogExporter clusters write their logs (node journals, pod logs, runtime
// state) into dir; a shared cluster's are exported for each failed spec.
type LogExporter interface {
	ExportLogs(ctx context.Context, dir string) error
}

// RotateOptions control a certificate rotation.
type RotateOptions struct {
	// Stop is how the running kube-apiservers are stopped before they start
	// again trusting only the new CA.
	Stop StopMode
	// ServingCA also reissues the apiservers' serving certificate from the
	// new CA and rewrites the CA file clients verify the apiservers with (the
	// certificate-authority of FileKubeconfig): clients that do not reload
	// that file fail verification. Without it only client trust rotates.
	ServingCA bool
}

// CertRotator clusters own the certificate authority their kube-apiservers
// trust for client certificates and can rotate it for real (k8s#120621):
// new files on disk at the paths kubeconfigs name, the apiservers restarted
// trusting only the new CA. etcd and its certificates are not touched.
type CertRotator interface {
	// FileKubeconfig writes a kubeconfig for u against server (an
	// apiserver's URL, or a proxy's that its serving certificate covers)
	// that names its certificate-authority, client-certificate and
	// client-key by path, never inline: the files RotateCertificates
	// rewrites. It returns the kubeconfig's path, removed with the cluster.
	FileKubeconfig(u User, server string) (string, error)
	// RotateCertificates stops every running kube-apiserver, makes a new
	// CA, rewrites every user's client certificate and key (signed by the
	// new CA) where they were, and starts the apiservers again with
	// --client-ca-file trusting only the new CA; it returns when they are
	// ready. Certificates of the old CA are refused from then on (401).
	RotateCertificates(ctx context.Context, opts RotateOptions) error
}
