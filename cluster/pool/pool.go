// Package pool keeps the clusters that outlive a spec in a test process:
// a Shared backend's clusters (one per number of kube-apiservers, flag
// profile and etcd links, at most the backend's SharedLimit of
// kube-apiservers at once), the clusters that client-side specs share on a
// backend that otherwise starts one per spec, and the clusters started
// ahead for the next spec (Spares). It is plain Go that returns errors;
// the harness (package e2e) turns them into a spec's failure or skip.
package pool

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/profile"
)

// EvictTimeout bounds closing a cluster to make room for another (a kind
// cluster's delete takes 2 s).
const EvictTimeout = 2 * time.Minute

// HealthTimeout bounds the health check of a kept cluster before a spec
// (Ready).
const HealthTimeout = 10 * time.Second

// RecoverTimeout bounds making a kept cluster fit for the next spec (an
// apiserver a failed spec left stopped comes back: kind.ReadyTimeout).
const RecoverTimeout = 3 * time.Minute

// A Pool keeps one backend's clusters in a test process, each under a key
// (Key), started on first use and closed by Close. Specs in a process run
// one at a time, so a cluster handed out is in use by one spec at most; a
// Pool is safe for concurrent use all the same.
type Pool struct {
	backend  cluster.Backend
	harness  func(key string) cluster.Harness
	perSpec  bool // keys by ClientSideKey, not Key
	limit    int  // the backend's SharedLimit in this run
	mu       sync.Mutex
	clusters map[string]*kept
	over     bool  // Close ran: nothing starts any more
	uses     int64 // counts Gets, for the least recently used
}

// kept is a cluster of the pool.
type kept struct {
	key     string
	what    string
	mu      sync.Mutex
	started bool // Start returned (with c or err)
	c       cluster.Cluster
	err     error
	version string
	closed  bool
	// used orders the clusters by their last use, for SharedLimit.
	used int64
	// apiservers is how many kube-apiservers the cluster runs (its weight
	// against SharedLimit).
	apiservers int
}

// Shared is the pool of a Shared backend d (keyed by Key: specs share a
// cluster by what it is) in a run configured by env. harness gives a start
// under key its logs directory, progress, warnings and env.
func Shared(d cluster.Backend, env cluster.Env, harness func(key string) cluster.Harness) *Pool {
	p := &Pool{backend: d, harness: harness, clusters: map[string]*kept{}}
	if d.SharedLimit != nil {
		p.limit = d.SharedLimit(env)
	}
	return p
}

// ClientSide is the pool of the client-side specs of backend d, a backend
// that otherwise starts a cluster per spec: specs asking for the same
// cluster.Spec share one (ClientSideKey), started with all the spec asks.
func ClientSide(d cluster.Backend, env cluster.Env, harness func(key string) cluster.Harness) *Pool {
	p := Shared(d, env, harness)
	p.perSpec = true
	return p
}

// Key is the key of the cluster of a Shared backend d that spec joins,
// the cluster.Spec it is started for and how it is described. The
// backend's clusters differ by what a cluster is, not by spec: the number
// of kube-apiservers (a spec asking for several gets a cluster of that
// many, shared by the specs asking for as many), the flag profile (specs
// needing the same profile share a cluster) and etcd links
// (cluster.Spec.EtcdLinks; but on a backend that adds them on demand, Get
// links the cluster of the spec's other needs); the backend's name alone
// for one apiserver with its own flags (no profile, or profile.Default).
func Key(d cluster.Backend, spec cluster.Spec) (key string, start cluster.Spec, what string) {
	key = d.Name
	var with []string
	if spec.APIServers > 1 {
		key += fmt.Sprintf(" %d-apiservers", spec.APIServers)
		start.APIServers = spec.APIServers
		with = append(with, fmt.Sprintf("%d apiservers", spec.APIServers))
	}
	if spec.Profile != "" && spec.Profile != profile.Default {
		key += " profile-" + spec.Profile
		start.Profile = spec.Profile
		with = append(with, "kube-apiserver flag profile "+spec.Profile)
	}
	if spec.EtcdLinks && !d.EtcdLinksOnDemand {
		key += " etcd-links"
		start.EtcdLinks = true
		with = append(with, "a fault proxy between each kube-apiserver and etcd")
	}
	if len(with) == 0 {
		return key, start, "shared by this process's specs"
	}
	return key, start, "shared by this process's specs with " + strings.Join(with, " and ")
}

// ClientSideKey is the key of the cluster client-side specs of backend d
// asking for spec share.
func ClientSideKey(d cluster.Backend, spec cluster.Spec) string {
	key := d.Name + " client-side"
	if spec.APIServers > 1 {
		key += fmt.Sprintf(" %d-apiservers", spec.APIServers)
	}
	if spec.Profile != "" {
		key += " profile-" + spec.Profile
	}
	if spec.EtcdLinks {
		key += " etcd-links"
	}
	return key
}

// keyFor is the pool's key for spec, the spec its cluster starts with and
// how it is described.
func (p *Pool) keyFor(spec cluster.Spec) (key string, start cluster.Spec, what string) {
	if p.perSpec {
		return ClientSideKey(p.backend, spec), spec, "shared by this process's client-side specs with the same cluster.Spec"
	}
	return Key(p.backend, spec)
}

func (p *Pool) entry(key, what string) *kept {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := p.clusters[key]
	if k == nil {
		k = &kept{key: key, what: what, closed: p.over}
		p.clusters[key] = k
	}
	return k
}

// Get is the pool's cluster for spec, started on first use (started says
// whether this call started it, or put etcd links in place on a backend
// that adds them on demand: the time a spec may count as its cluster's
// start). ctx bounds the start, within the backend's StartTimeout. A
// start that failed is not tried again (every later Get gets its error)
// unless ctx ended it: the next Get starts the cluster. Starting one when
// the backend's SharedLimit is reached first closes the least recently
// used others until it fits.
func (p *Pool) Get(ctx context.Context, spec cluster.Spec) (c cluster.Cluster, started bool, err error) {
	key, start, what := p.keyFor(spec)
	c, started, err = p.get(ctx, key, start, what)
	if err != nil || !spec.EtcdLinks || start.EtcdLinks {
		return c, started, err
	}
	linked, err := p.link(ctx, c)
	return c, started || linked, err
}

func (p *Pool) get(ctx context.Context, key string, spec cluster.Spec, what string) (cluster.Cluster, bool, error) {
	k := p.entry(key, what)
	p.mu.Lock()
	p.uses++
	used := p.uses
	p.mu.Unlock()
	k.mu.Lock()
	k.used = used
	if !k.started && !k.closed && p.limit > 0 {
		// Make room first, k unlocked (closing locks the others).
		k.mu.Unlock()
		p.closeLeastRecentlyUsed(key, max(spec.APIServers, 1))
		k.mu.Lock()
	}
	defer k.mu.Unlock()
	switch {
	case k.closed:
		return nil, false, fmt.Errorf("the %s cluster of this process is closed (the suite ended)", key)
	case k.started:
		return k.c, false, k.err
	}
	h := p.harness(key)
	sctx, cancel := StartContext(ctx, p.backend)
	k.apiservers = max(spec.APIServers, 1)
	c, err := p.backend.Start(sctx, spec, h)
	cancel()
	if err != nil {
		err = fmt.Errorf("start %s cluster (%s): %w", p.backend.Name, what, err)
		if ctx.Err() != nil {
			return nil, false, err // the asking spec was interrupted: the next may try again
		}
		c = nil
	}
	k.started, k.c, k.err = true, c, err
	if c != nil {
		if v, ok := c.(cluster.ServerVersioner); ok {
			k.version = v.ServerVersion()
		}
		progress(h, "backend %s: cluster %s %s\n", p.backend.Name, c.Name(), what)
	}
	return c, true, err
}

// link puts etcd links in place on c, a cluster of a backend that adds
// them on demand, unless it has them; linked says it did.
func (p *Pool) link(ctx context.Context, c cluster.Cluster) (linked bool, err error) {
	l, ok := c.(cluster.EtcdLinker)
	if !ok {
		return false, fmt.Errorf("backend %s says it adds etcd links on demand, but its cluster %s (%T) cannot (cluster.EtcdLinker)", p.backend.Name, c.Name(), c)
	}
	if cluster.HasEtcdLinks(c) {
		return false, nil
	}
	lctx, cancel := StartContext(ctx, p.backend)
	defer cancel()
	if err := l.LinkEtcd(lctx); err != nil {
		return true, fmt.Errorf("etcd links on cluster %s: %w", c.Name(), err)
	}
	return true, nil
}

// closeLeastRecentlyUsed closes the least recently used clusters but
// key's, until their kube-apiservers and the apiservers key's cluster is
// to run fit in the backend's SharedLimit (a cluster larger than the
// limit runs alone): a later Get for a closed one starts it again.
func (p *Pool) closeLeastRecentlyUsed(key string, apiservers int) {
	limit := p.limit
	for {
		var running []*kept
		inUse := 0
		for _, k := range p.entries() {
			k.mu.Lock()
			if k.key != key && k.c != nil && !k.closed {
				running = append(running, k)
				inUse += max(k.apiservers, 1)
			}
			k.mu.Unlock()
		}
		if len(running) == 0 || inUse+apiservers <= limit {
			return
		}
		lru := slices.MinFunc(running, func(a, b *kept) int { return cmp.Compare(a.used, b.used) })
		lru.mu.Lock()
		c := lru.c
		lru.started, lru.c, lru.err = false, nil, nil
		lru.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), EvictTimeout)
		err := c.Close(ctx)
		cancel()
		h := p.harness(key)
		progress(h, "backend %s: closed cluster %s (%s), the least recently used: a process runs at most %d kube-apiservers (cluster.Backend.SharedLimit)\n", p.backend.Name, c.Name(), lru.key, limit)
		if err != nil && h.Warn != nil {
			h.Warn(fmt.Sprintf("backend %s: closing cluster %s to make room for another: %v", p.backend.Name, c.Name(), err))
		}
	}
}

// entries are the pool's clusters in the order of their keys (the
// backend's own, its name, first).
func (p *Pool) entries() []*kept {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := slices.Sorted(maps.Keys(p.clusters))
	out := make([]*kept, len(keys))
	for i, k := range keys {
		out[i] = p.clusters[k]
	}
	return out
}

// Started is the pool's cluster for spec if it has started, or nil: what
// a spec that cannot run anyway may check before a start of minutes.
func (p *Pool) Started(spec cluster.Spec) cluster.Cluster {
	key, _, what := p.keyFor(spec)
	k := p.entry(key, what)
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.c
}

// Version is the kube-apiserver version the pool's clusters told when
// they started (they run the same node image or server, whatever their
// profile), "" if none has started or they do not tell.
func (p *Pool) Version() string {
	for _, k := range p.entries() {
		k.mu.Lock()
		v := k.version
		k.mu.Unlock()
		if v != "" {
			return v
		}
	}
	return ""
}

// Close closes the pool's clusters; later Gets fail, for clusters never
// started too. Closing twice is fine.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	p.over = true
	p.mu.Unlock()
	var errs []string
	for _, k := range p.entries() {
		k.mu.Lock()
		if !k.closed && k.c != nil {
			if err := k.c.Close(ctx); err != nil {
				errs = append(errs, fmt.Sprintf("close %s cluster %s: %v", k.key, k.c.Name(), err))
			}
		}
		k.closed = true
		k.mu.Unlock()
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// StartContext bounds a start of d's by its StartTimeout.
func StartContext(ctx context.Context, d cluster.Backend) (context.Context, context.CancelFunc) {
	if d.StartTimeout > 0 {
		return context.WithTimeout(ctx, d.StartTimeout)
	}
	return context.WithCancel(ctx)
}

// Ready makes c, a cluster that outlives a spec, fit for the next one: a
// cluster.Recoverer recovers from what an earlier spec left (an apiserver
// left stopped comes back, within RecoverTimeout), and every
// kube-apiserver of it must answer /readyz ok (Healthy).
func Ready(ctx context.Context, c cluster.Cluster) error {
	if r, ok := c.(cluster.Recoverer); ok {
		rctx, cancel := context.WithTimeout(ctx, RecoverTimeout)
		err := r.Recover(rctx)
		cancel()
		if err != nil {
			return fmt.Errorf("the cluster %s the specs share is not fit for this spec: %w", c.Name(), err)
		}
	}
	if err := Healthy(ctx, c); err != nil {
		return fmt.Errorf("the cluster %s the specs share is unhealthy before this spec (the spec before it in this process broke it, or it died): %w", c.Name(), err)
	}
	return nil
}

// Healthy checks, within HealthTimeout, that every kube-apiserver of c
// answers /readyz with ok (etcd included: its readyz check), but for
// cluster.BootstrapReconcileChecks.
func Healthy(ctx context.Context, c cluster.Cluster) error {
	ctx, cancel := context.WithTimeout(ctx, HealthTimeout)
	defer cancel()
	cfg, err := c.RESTConfig(cluster.Admin)
	if err != nil {
		return err
	}
	var hosts []string
	if a, ok := c.(cluster.APIServerController); ok {
		for i := range a.NumAPIServers() {
			hosts = append(hosts, a.APIServerURL(i))
		}
	} else {
		hosts = []string{cfg.Host}
	}
	for _, h := range hosts {
		hc := rest.CopyConfig(cfg)
		hc.Host = h
		dc, err := discovery.NewDiscoveryClientForConfig(hc)
		if err != nil {
			return err
		}
		// Not the hooks that only make sure bootstrap objects exist:
		// they pass a second after a server starts over a bootstrapped
		// etcd, and the cluster serves as it will then.
		req := dc.RESTClient().Get().AbsPath("/readyz")
		for _, check := range cluster.BootstrapReconcileChecks {
			req = req.Param("exclude", check)
		}
		body, err := req.DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("%s/readyz: %w (%s)", h, err, strings.TrimSpace(string(body)))
		}
	}
	return nil
}

// progress writes a line to h's progress, if it has one.
func progress(h cluster.Harness, format string, args ...any) {
	if h.Progress != nil {
		fmt.Fprintf(h.Progress, format, args...)
	}
}
