package cluster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// A Backend gives the harness its clusters. Each backend registers one
// from an init function in its own package (cluster/local, cluster/kind,
// cluster/existing); a suite imports the backends it offers (package
// cluster/backends imports them all). The harness (package e2e) selects one
// by name and never imports a backend, and backends never import each
// other (make verify checks both).
type Backend struct {
	Name string
	// Shared: one cluster per test process and flag profile (Spec.Profile:
	// specs asking for the same one share it; Supports refuses those the
	// backend cannot set), reused by the specs, each in a namespace of its
	// own (and deleted after), and closed when the suite ends; false: Start
	// is called for each spec and its cluster closed with the spec.
	Shared bool
	// Supports says why the backend cannot give a spec what it asks ("" =
	// it can). Called before Start.
	Supports func(spec Spec) string
	// StartTimeout bounds a start (the harness's context for Start).
	StartTimeout time.Duration
	// Start starts (or connects to) a cluster. For Shared backends it is
	// called once per process and profile (spec has only the Profile
	// set). ctx bounds the start only (for a Shared
	// backend it is the context of the spec that happened to ask first);
	// the cluster lives until its Close. On error Start leaves nothing
	// behind and returns a nil cluster.
	Start func(ctx context.Context, spec Spec, h Harness) (Cluster, error)

	// Optional.

	// SharedLimit, for a Shared backend, is how many kube-apiservers its
	// clusters (one per number of apiservers and flag profile) may run at
	// once in a test process: starting another closes the least recently
	// used until it fits (a cluster larger than the limit runs alone),
	// which a later spec asking for it starts again (package cluster/pool
	// keeps them), given the run's configuration. Unset or 0: no limit,
	// they stay until the suite ends.
	SharedLimit func(env Env) int
	// EtcdLinksOnDemand, for a Shared backend whose clusters are
	// EtcdLinkers: a spec asking for Spec.EtcdLinks joins the cluster of
	// its other needs and has it linked (LinkEtcd) instead of one started
	// with them.
	EtcdLinksOnDemand bool

	// Prepare, when set, runs once, on the first test process, before any
	// spec: e.g. build the binaries the clusters run, so the first spec's
	// start is not also a build.
	Prepare func(ctx context.Context, h Harness) error
	// KubeAPIServerVersion, when set, is the kube-apiserver version the
	// backend's clusters run, known before any starts (the report's
	// version). Unset, or "", a started cluster that implements
	// ServerVersioner tells it.
	KubeAPIServerVersion func(env Env) string
	// EtcdVersion, when set, is the etcd version the backend's clusters
	// run, known before any starts (the report's version); unset, or "",
	// unknown.
	EtcdVersion func(env Env) string
	// Vars are the environment variables the backend reads (its
	// configuration: the harness reads them once, ReadEnv, refusing bad
	// values before any spec, and hands them down as Env: Harness.Env and
	// the functions above). A backend reads no other.
	Vars []Var
}

// Harness is what the harness gives a backend's Start and Prepare.
type Harness struct {
	// Env is the run's configuration: the values of the backend's Vars.
	Env Env
	// Name is the cluster's name when the caller gives one (Start);
	// backends that name their clusters use it, and name them themselves
	// when it is "".
	Name string
	// ArtifactsDir is where the cluster writes its logs (Start).
	ArtifactsDir string
	// Progress receives the backend's progress lines: the spec's log, or,
	// for Prepare, the terminal while a build of minutes runs.
	Progress io.Writer
	// ProcessDir is a directory of this test process named name, for what
	// outlives a spec (clusters started ahead).
	ProcessDir func(name string) string
	// Warn says something a user must see whatever the verbosity.
	Warn func(msg string)
}

var (
	backendsMu sync.Mutex
	backends   = map[string]Backend{}
)

// RegisterBackend makes b selectable by its name. It panics on a backend
// without a name, Supports or Start, or on a name registered twice.
func RegisterBackend(b Backend) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	switch {
	case b.Name == "":
		panic("cluster.RegisterBackend: backend without a name")
	case b.Supports == nil || b.Start == nil:
		panic(fmt.Sprintf("cluster.RegisterBackend: backend %q needs Supports and Start", b.Name))
	case backends[b.Name].Name != "":
		panic(fmt.Sprintf("cluster.RegisterBackend: backend %q registered twice", b.Name))
	}
	backends[b.Name] = b
}

// LookupBackend is the backend registered under name.
func LookupBackend(name string) (Backend, bool) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	b, ok := backends[name]
	return b, ok
}

// BackendNames lists the registered backends, sorted.
func BackendNames() []string {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	var names []string
	for n := range backends {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
