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
)

// User selects the identity of a client.
type User string

const (
	// Admin is in system:masters.
	Admin User = "admin"
	// TestUser may only do what informers under test need: read and write
	// pods, configmaps, secrets, events and namespaces (least privilege).
	TestUser User = "test-user"
)

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
}

// StopMode says how to stop a process.
type StopMode string

const (
	// Graceful sends SIGTERM and waits for the process to exit on its own.
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

// EtcdController can stop and start the cluster's etcd, keeping its data.
type EtcdController interface {
	StopEtcd(ctx context.Context, mode StopMode) error
	StartEtcd(ctx context.Context) error
	RestartEtcd(ctx context.Context, mode StopMode) error
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
