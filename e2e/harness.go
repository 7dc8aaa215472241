package e2e

import (
	"context"
	"errors"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/pool"
	"github.com/informer-conformance/informer-conformance/report"
)

// Harness is the harness of a run, as a value: its configuration (read
// once, from the environment it was made with), the downstream's hooks,
// the clusters that outlive a spec (a pool per backend, and the spares
// started ahead) and whether client-side specs share clusters. A spec's
// Env keeps the harness it started with; what a spec has of its own (its
// front end, its Env) is never here.
//
// A process's suites share one, the process's (Config, SetHooks,
// ShareClientSideClusters and CloseSharedClusters act on it): Ginkgo's
// processes each have theirs, and its specs run one after the other.
type Harness struct {
	getenv func(string) string

	configMu  sync.Mutex
	config    *RunConfig
	configErr error

	hooks   atomic.Pointer[Hooks]
	sharing atomic.Bool

	poolsMu sync.Mutex
	// kept are the pools of the clusters that outlive a spec, by backend
	// name (one backend is selected per run; tests use others).
	kept map[string]*pool.Pool
	// spares are the clusters started ahead (EnvSpares), by backend name.
	spares map[string]*pool.Spares
}

// NewHarness is a harness whose configuration comes from getenv (os.Getenv
// for the process's).
func NewHarness(getenv func(string) string) *Harness {
	return &Harness{getenv: getenv, kept: map[string]*pool.Pool{}, spares: map[string]*pool.Spares{}}
}

// theHarness is the process's harness, which the suites' specs use.
var theHarness = NewHarness(os.Getenv)

// Config is the harness's run configuration, read from its environment
// the first time it is asked for.
func (h *Harness) Config() (RunConfig, error) {
	h.configMu.Lock()
	defer h.configMu.Unlock()
	if h.config == nil {
		rc, err := ReadConfig(h.getenv)
		h.config, h.configErr = &rc, err
	}
	return *h.config, h.configErr
}

// reread makes the next Config read the environment again (tests that set
// variables).
func (h *Harness) reread() {
	h.configMu.Lock()
	defer h.configMu.Unlock()
	h.config, h.configErr = nil, nil
}

// SetHooks installs hooks for every spec of the harness that follows.
func (h *Harness) SetHooks(hooks Hooks) { h.hooks.Store(&hooks) }

// Hooks are the hooks in use (none: the zero Hooks).
func (h *Harness) Hooks() Hooks {
	if p := h.hooks.Load(); p != nil {
		return *p
	}
	return Hooks{}
}

// ShareClientSideClusters is the package's ShareClientSideClusters for the
// harness's specs.
func (h *Harness) ShareClientSideClusters() {
	rc, _ := h.Config() // a bad configuration fails the specs when they ask for a backend
	h.sharing.Store(!rc.Env.Flag(EnvClusterPerSpec))
}

// keptFor is the pool of d's clusters that outlive a spec: a Shared
// backend's clusters, or the clusters client-side specs share on a backend
// that starts one per spec (ShareClientSideClusters).
func (h *Harness) keptFor(d cluster.Backend) *pool.Pool {
	h.poolsMu.Lock()
	defer h.poolsMu.Unlock()
	p := h.kept[d.Name]
	if p == nil {
		ch := func(key string) cluster.Harness {
			return h.clusterHarness(processArtifactsDir("backend-" + report.SafeName(key)))
		}
		rc, _ := h.Config() // a run with a bad configuration starts no cluster
		if d.Shared {
			p = pool.Shared(d, rc.Env, ch)
		} else {
			p = pool.ClientSide(d, rc.Env, ch)
		}
		h.kept[d.Name] = p
	}
	return p
}

// sparesFor is d's clusters started ahead (EnvSpares), made with make on
// first use.
func (h *Harness) sparesFor(d cluster.Backend, make func() *pool.Spares) *pool.Spares {
	h.poolsMu.Lock()
	defer h.poolsMu.Unlock()
	s := h.spares[d.Name]
	if s == nil {
		s = make()
		h.spares[d.Name] = s
	}
	return s
}

// CloseSharedClusters is the package's CloseSharedClusters for the
// harness's clusters.
func (h *Harness) CloseSharedClusters(ctx context.Context) error {
	h.poolsMu.Lock()
	pools := slices.Collect(maps.Values(h.kept))
	started := slices.Collect(maps.Values(h.spares))
	h.poolsMu.Unlock()
	var errs []error
	for _, p := range pools {
		errs = append(errs, p.Close(ctx))
	}
	for _, s := range started {
		errs = append(errs, s.Close(ctx))
	}
	return errors.Join(errs...)
}
