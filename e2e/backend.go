package e2e

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/lifetime"
	"github.com/informer-conformance/informer-conformance/cluster/profile"
	"github.com/informer-conformance/informer-conformance/report"
	"github.com/informer-conformance/informer-conformance/report/timing"
)

// EnvBackend selects the backend the specs run on, by its registered name:
// "local" (the default, a fresh control plane per spec), "existing" (the
// cluster of $INFORMER_CONFORMANCE_KUBECONFIG or $KUBECONFIG; specs that
// need to break the control plane skip), ...
const EnvBackend = "INFORMER_CONFORMANCE_BACKEND"

// DefaultBackend is the backend used when EnvBackend is unset: it has
// every capability the specs ask for.
const DefaultBackend = "local"

// Backend is the backend selected by EnvBackend (DefaultBackend when
// unset), among those registered (cluster.RegisterBackend: a suite imports
// the backends it offers, package cluster/backends all of them; the
// harness names none).
func Backend() (cluster.Backend, error) {
	name := os.Getenv(EnvBackend)
	if name == "" {
		name = DefaultBackend
	}
	d, ok := cluster.LookupBackend(name)
	if !ok {
		registered := strings.Join(cluster.BackendNames(), ", ")
		if registered == "" {
			registered = "none (import github.com/informer-conformance/informer-conformance/cluster/backends, or the backend's package, in the suite)"
		}
		// A backend registers itself when its package is imported;
		// suites/conformance imports local and existing, so kind's library
		// enters only the modules that import cluster/kind.
		return cluster.Backend{}, fmt.Errorf(`%s=%q: no such backend (a backend registers itself when its package is imported, e.g. import _ "github.com/informer-conformance/informer-conformance/cluster/%s" in the test package); registered: %s`, EnvBackend, name, name, registered)
	}
	return d, nil
}

// harness is what the harness gives backend starts: logs in artifactsDir,
// progress to the spec's log.
func harness(artifactsDir string) cluster.Harness {
	return cluster.Harness{
		ArtifactsDir: artifactsDir,
		Progress:     ginkgo.GinkgoWriter,
		ProcessDir:   processArtifactsDir,
		Warn:         warnOnce,
	}
}

// startContext bounds a start of d's (Start or StartDedicated) by its
// StartTimeout.
func startContext(ctx context.Context, d cluster.Backend) (context.Context, context.CancelFunc) {
	if d.StartTimeout > 0 {
		return context.WithTimeout(ctx, d.StartTimeout)
	}
	return context.WithCancel(ctx)
}

var warned sync.Map

// warnOnce says something a user must see whatever the verbosity, once per
// process: to stderr (Ginkgo prints a parallel process's output) and to the
// spec's log.
func warnOnce(msg string) {
	if _, seen := warned.LoadOrStore(msg, true); seen {
		return
	}
	fmt.Fprintln(os.Stderr, "WARNING: "+msg)
	ginkgo.GinkgoWriter.Println("WARNING: " + msg)
}

// buildProgress is where a backend's Prepare reports a build: a first build
// takes minutes, so its steps go to the terminal as they happen
// (GinkgoWriter streams only in verbose runs).
func buildProgress() io.Writer {
	if _, rc := ginkgo.GinkgoConfiguration(); rc.Verbose || rc.VeryVerbose {
		return ginkgo.GinkgoWriter
	}
	return os.Stderr
}

// sharedState is a Shared backend's cluster in this process.
type sharedState struct {
	key     string
	mu      sync.Mutex
	started bool // Start returned (with c or err)
	c       cluster.Cluster
	err     error
	version string
	closed  bool
	// used orders the clusters by their last use (sharedUses), for
	// cluster.Backend.SharedLimit.
	used int64
	// apiservers is how many kube-apiservers the cluster runs (its weight
	// against SharedLimit).
	apiservers int
}

// sharedUses counts the uses of shared clusters in this process.
var sharedUses atomic.Int64

var (
	sharedMu sync.Mutex
	shared   = map[string]*sharedState{}
	// sharedOver: CloseSharedClusters ran; a cluster not started by then
	// (a profile no spec asked for before) never starts.
	sharedOver bool
)

func sharedFor(name string) *sharedState {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	s := shared[name]
	if s == nil {
		s = &sharedState{key: name, closed: sharedOver}
		shared[name] = s
	}
	return s
}

// sharedCluster is d's cluster in this process for specs without a flag
// profile, started on first use. A start error is kept and returned to
// every later caller (no retry per spec), unless the start was cut short
// by the caller's own context ending.
func sharedCluster(ctx context.Context, d cluster.Backend) (cluster.Cluster, error) {
	key, start, what := sharedKey(d, cluster.Spec{})
	c, _, err := sharedClusterFor(ctx, d, key, start, what)
	return c, err
}

// sharedKey is the key of the cluster of a Shared backend d that spec
// joins in this process, the cluster.Spec it is started for and how it is
// described. The backend's clusters differ by what a cluster is, not by
// spec: the number of kube-apiservers (a spec asking for several gets a
// cluster of that many, shared by the specs asking for as many), the
// flag profile (specs needing the same profile share a cluster) and etcd
// links (cluster.EtcdLinks; but on a backend that adds them on demand,
// linkShared); the
// backend's name alone for one apiserver with its own flags (no profile,
// or profile.Default). The clusters stay until the suite ends
// (CloseSharedClusters), no more than the backend's SharedLimit at once
// (closeLeastRecentlyUsed).
func sharedKey(d cluster.Backend, spec cluster.Spec) (key string, start cluster.Spec, what string) {
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

// sharedClusterFor is the cluster of this process kept under key, started
// for spec on first use (what sharedCluster says of errors holds); started
// says whether this call started it.
func sharedClusterFor(ctx context.Context, d cluster.Backend, key string, spec cluster.Spec, what string) (c cluster.Cluster, started bool, err error) {
	s := sharedFor(key)
	s.mu.Lock()
	s.used = sharedUses.Add(1)
	if !s.started && !s.closed && d.SharedLimit > 0 {
		// Make room first, s unlocked (closing locks the others).
		s.mu.Unlock()
		closeLeastRecentlyUsed(d, key, max(spec.APIServers, 1))
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, false, fmt.Errorf("the %s cluster of this process is closed (CloseSharedClusters)", key)
	case s.started:
		return s.c, false, s.err
	}
	h := harness(processArtifactsDir("backend-" + report.SafeName(key)))
	sctx, cancel := startContext(ctx, d)
	s.apiservers = max(spec.APIServers, 1)
	c, err = d.Start(sctx, spec, h)
	cancel()
	if err != nil {
		err = fmt.Errorf("start %s cluster (%s): %w", d.Name, what, err)
		if ctx.Err() != nil {
			return nil, false, err // the asking spec was interrupted: the next may try again
		}
		c = nil
	}
	s.started, s.c, s.err = true, c, err
	if c != nil {
		if v, ok := c.(cluster.ServerVersioner); ok {
			s.version = v.ServerVersion()
		}
		ginkgo.GinkgoWriter.Printf("backend %s: cluster %s %s\n", d.Name, c.Name(), what)
	}
	return c, true, err
}

// EvictTimeout bounds closing a shared cluster to make room for another
// (closeLeastRecentlyUsed): a kind cluster's delete takes 2 s.
const EvictTimeout = 2 * time.Minute

// closeLeastRecentlyUsed closes the least recently used clusters of the
// Shared backend d in this process (one per number of apiservers and
// profile, sharedKey) but key's, until their kube-apiservers and the
// apiservers key's cluster is to run fit in d.SharedLimit (a cluster larger
// than the limit runs alone): a spec that asks for a closed one later
// starts it again. Specs in a process run one at a time, so none of them
// is in use.
func closeLeastRecentlyUsed(d cluster.Backend, key string, apiservers int) {
	type candidate struct {
		s    *sharedState
		used int64
	}
	for {
		var running []candidate
		inUse := 0
		for _, s := range sharedStates(d) {
			s.mu.Lock()
			if s.key != key && s.c != nil && !s.closed {
				running = append(running, candidate{s, s.used})
				inUse += max(s.apiservers, 1)
			}
			s.mu.Unlock()
		}
		if len(running) == 0 || inUse+apiservers <= d.SharedLimit {
			return
		}
		lru := slices.MinFunc(running, func(a, b candidate) int { return cmp.Compare(a.used, b.used) }).s
		lru.mu.Lock()
		c := lru.c
		lru.started, lru.c, lru.err = false, nil, nil
		lru.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), EvictTimeout)
		err := c.Close(ctx)
		cancel()
		ginkgo.GinkgoWriter.Printf("backend %s: closed cluster %s (%s), the least recently used: a process runs at most %d kube-apiservers (cluster.Backend.SharedLimit)\n", d.Name, c.Name(), lru.key, d.SharedLimit)
		if err != nil {
			warnOnce(fmt.Sprintf("backend %s: closing cluster %s to make room for another: %v", d.Name, c.Name(), err))
		}
	}
}

// clientSideSharing is set by ShareClientSideClusters.
var clientSideSharing atomic.Bool

// ShareClientSideClusters makes the specs of this process that are not
// labelled disruptive (they break only the client's side: its connection,
// its HTTP answers, its informers) share one cluster per cluster.Spec on
// backends that otherwise start a cluster per spec (local), each spec in a
// namespace of its own (deleted after it), the cluster recovered and
// health-checked before each (a shared plane an earlier spec left unhealthy
// fails the next spec, naming it). Disruptive specs keep a cluster of their
// own. A suite calls it before its specs run and CloseSharedClusters from
// an AfterSuite. EnvClusterPerSpec=true turns it off (every spec gets a
// cluster of its own, as before).
func ShareClientSideClusters() { clientSideSharing.Store(os.Getenv(EnvClusterPerSpec) != "true") }

// EnvClusterPerSpec=true gives every spec a cluster of its own even where
// the suite shares clusters among client-side specs (ShareClientSideClusters).
const EnvClusterPerSpec = "INFORMER_CONFORMANCE_CLUSTER_PER_SPEC"

// disruptiveLabel marks specs that break the control plane itself
// (suites' Disruptive decoration): they never share a cluster on a
// backend that can give them their own.
const disruptiveLabel = "disruptive"

// clientSideKey names the shared cluster of backend d for spec.
func clientSideKey(d cluster.Backend, spec cluster.Spec) string {
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

// CloseSharedClusters closes the clusters of Shared backends this process
// started; later specs cannot start them again. Suites call it from an
// AfterSuite. Closing a cluster already closed, or never started, is fine.
func CloseSharedClusters(ctx context.Context) error {
	sharedMu.Lock()
	sharedOver = true
	names := make([]string, 0, len(shared))
	for n := range shared {
		names = append(names, n)
	}
	sharedMu.Unlock()
	slices.Sort(names)
	var errs []string
	for _, n := range names {
		s := sharedFor(n)
		s.mu.Lock()
		if !s.closed && s.c != nil {
			if err := s.c.Close(ctx); err != nil {
				errs = append(errs, fmt.Sprintf("close %s cluster %s: %v", n, s.c.Name(), err))
			}
		}
		s.closed = true
		s.mu.Unlock()
	}
	if d, err := Backend(); err == nil && d.Release != nil {
		if err := d.Release(ctx); err != nil {
			errs = append(errs, fmt.Sprintf("release what backend %s keeps: %v", d.Name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// backendLabelPrefix: a spec labelled "backend:<name>" (one or more) runs
// only on the named backends, for what no capability interface expresses.
const backendLabelPrefix = "backend:"

// backendMismatch is why the spec's backend labels exclude backend name ("" if they do not).
func backendMismatch(name string, labels []string) string {
	var want []string
	for _, l := range labels {
		if b, ok := strings.CutPrefix(l, backendLabelPrefix); ok {
			if b == name {
				return ""
			}
			want = append(want, b)
		}
	}
	if len(want) == 0 {
		return ""
	}
	return fmt.Sprintf("the %s backend's own processes", strings.Join(want, " or "))
}

// capabilityGaps lists what c lacks of the spec's capability labels
// (cluster.Lacks), then the labels that name no capability.
func capabilityGaps(c cluster.Cluster, labels []string) []string {
	var unknown []string
	var needs []cluster.Capability
	for _, l := range labels {
		name, ok := strings.CutPrefix(l, capabilityLabelPrefix)
		if !ok {
			continue
		}
		if want, known := cluster.CapabilityNamed(name); known {
			needs = append(needs, want)
		} else {
			unknown = append(unknown, name+" (an unknown capability label)")
		}
	}
	return append(cluster.Lacks(c, cluster.Spec{}, needs...), unknown...)
}

// skipLacking skips the current spec, naming the backend and what it lacks.
func skipLacking(backend string, missing []string) {
	ginkgo.GinkgoHelper()
	ginkgo.Skip(fmt.Sprintf("backend %s lacks %s: run this spec on the %s backend", backend, strings.Join(missing, ", "), DefaultBackend))
}

// startCluster gives the current spec its cluster on the selected backend,
// or skips it, saying why, when the backend cannot give it what it asks
// (spec, capability and backend labels): a Shared backend's cluster of
// this process for the spec's flag profile (sharedKey), or a new cluster
// closed when the spec ends.
func startCluster(ctx context.Context, spec cluster.Spec, data *specData) (d cluster.Backend, c cluster.Cluster, shared bool) {
	ginkgo.GinkgoHelper()
	d, err := Backend()
	if err != nil {
		ginkgo.Fail(err.Error())
	}
	// Should the ginkgo CLI (or go test) die, this process tears its
	// clusters down and exits at once, not after the spec.
	lifetime.ExitWithParent()
	labels := ginkgo.CurrentSpecReport().Labels()
	var early []string // what can be told before a cluster is there
	if why := backendMismatch(d.Name, labels); why != "" {
		early = append(early, why)
	}
	if why := d.Supports(spec); why != "" {
		early = append(early, why)
	}
	if d.Shared {
		// The shared cluster is started (or connected to) for the
		// capability checks, so the reason names all that is missing; a
		// spec without capability labels that cannot run anyway skips
		// before it.
		// A kind cluster takes half a minute: a spec that cannot run on the
		// backend anyway skips before it (naming the capabilities it needs
		// when the process's cluster is already there to check them).
		key, kspec, what := sharedKey(d, spec)
		if len(early) > 0 {
			if c := startedShared(key); c != nil {
				early = append(capabilityGaps(c, labels), early...)
			}
			skipLacking(d.Name, early)
		}
		c := joinShared(ctx, d, labels, key, kspec, what, data)
		if spec.EtcdLinks && !kspec.EtcdLinks {
			linkShared(ctx, d, c, data)
		}
		return d, c, true
	}
	if len(early) > 0 {
		skipLacking(d.Name, early)
	}
	if clientSideSharing.Load() && !slices.Contains(labels, disruptiveLabel) {
		return d, joinShared(ctx, d, labels, clientSideKey(d, spec), spec, "shared by this process's client-side specs with the same cluster.Spec", data), true
	}
	end := data.phase(timing.ClusterStart)
	h := harness(SpecArtifactsDir())
	sctx, cancel := startContext(ctx, d)
	if d.StartDedicated != nil {
		var how string
		c, how, err = d.StartDedicated(sctx, spec, h)
		data.clusterFrom(how)
	} else {
		c, err = d.Start(sctx, spec, h)
	}
	cancel()
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("start %s cluster: %v", d.Name, err))
	}
	end()
	ginkgo.DeferCleanup(func(ctx context.Context) error {
		if ginkgo.CurrentSpecReport().Failed() {
			ginkgo.AddReportEntry("process logs", c.ArtifactsDir())
		}
		defer data.phase(timing.ClusterClose)()
		return c.Close(ctx)
	})
	if missing := capabilityGaps(c, labels); len(missing) > 0 {
		skipLacking(d.Name, missing)
	}
	return d, c, false
}

// joinShared gives the current spec the cluster of this process kept under
// key (started for spec by the first spec that asks, its start timed as
// that spec's), or skips the spec when the cluster lacks a capability it
// is labelled with, and readies it (useShared).
func joinShared(ctx context.Context, d cluster.Backend, labels []string, key string, spec cluster.Spec, what string, data *specData) cluster.Cluster {
	ginkgo.GinkgoHelper()
	end := data.phase(timing.ClusterStart)
	c, started, err := sharedClusterFor(ctx, d, key, spec, what)
	if err != nil {
		ginkgo.Fail(err.Error())
	}
	if started {
		end()
	}
	if missing := capabilityGaps(c, labels); len(missing) > 0 {
		skipLacking(d.Name, missing)
	}
	useShared(ctx, d.Name, c, data)
	return c
}

// linkShared puts etcd links in place on shared cluster c of a backend
// that adds them on demand (cluster.Backend.EtcdLinksOnDemand), the first
// time a spec asks; the time counts as the cluster's start.
func linkShared(ctx context.Context, d cluster.Backend, c cluster.Cluster, data *specData) {
	ginkgo.GinkgoHelper()
	l, ok := c.(cluster.EtcdLinker)
	if !ok {
		ginkgo.Fail(fmt.Sprintf("backend %s says it adds etcd links on demand, but its cluster %s (%T) cannot (cluster.EtcdLinker)", d.Name, c.Name(), c))
	}
	if cluster.HasEtcdLinks(c) {
		return
	}
	end := data.phase(timing.ClusterStart)
	defer end()
	lctx, cancel := startContext(ctx, d)
	defer cancel()
	if err := l.LinkEtcd(lctx); err != nil {
		ginkgo.Fail(fmt.Sprintf("etcd links on cluster %s: %v", c.Name(), err))
	}
}

// HealthTimeout bounds the health check of a shared cluster before a spec
// (useSharedCluster).
const HealthTimeout = 10 * time.Second

// healthy checks that every kube-apiserver of c answers /readyz with ok
// (etcd included: its readyz check), but for cluster.BootstrapReconcileChecks.
func healthy(ctx context.Context, c cluster.Cluster) error {
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

// sharedStates are the states of d's clusters in this process (one per
// number of apiservers and profile, sharedKey), the backend's own first.
func sharedStates(d cluster.Backend) []*sharedState {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	var keys []string
	for k := range shared {
		if k == d.Name || strings.HasPrefix(k, d.Name+" ") && !strings.HasPrefix(k, d.Name+" client-side") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys) // d.Name sorts before its profiles' keys
	states := make([]*sharedState, len(keys))
	for i, k := range keys {
		states[i] = shared[k]
	}
	return states
}

// sharedVersion is the kube-apiserver version of d's clusters in this
// process (they run the same node image or server, whatever their
// profile), "" if none has started or they do not tell.
func sharedVersion(d cluster.Backend) string {
	for _, s := range sharedStates(d) {
		s.mu.Lock()
		v := s.version
		s.mu.Unlock()
		if v != "" {
			return v
		}
	}
	return ""
}

// startedShared is the shared cluster of this process kept under key
// (sharedKey) if it started, or nil.
func startedShared(key string) cluster.Cluster {
	s := sharedFor(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

// RecoverTimeout bounds making a shared cluster fit for the next spec
// (an apiserver a failed spec left stopped comes back: kind.ReadyTimeout).
const RecoverTimeout = 3 * time.Minute

// useShared readies a shared cluster for the current spec and, should the
// spec fail, exports the cluster's logs into the spec's artifacts.
func useShared(ctx context.Context, backend string, c cluster.Cluster, data *specData) {
	ginkgo.GinkgoHelper()
	if err := useSharedCluster(ctx, c, data); err != nil {
		Fail(fmt.Sprintf("backend %s: %v", backend, err))
	}
}

// ExportLogsTimeout bounds exporting a shared cluster's logs for a failed spec.
const ExportLogsTimeout = 2 * time.Minute

// useSharedCluster readies c, a cluster that outlives the current spec,
// for it: a cluster.Recoverer recovers from what an earlier spec left (an
// apiserver left stopped comes back, within RecoverTimeout), every
// kube-apiserver of it must answer /readyz ok (within HealthTimeout: an
// unhealthy shared cluster fails the spec that would have used it, saying
// so), and a cluster.LogExporter's logs go to the spec's artifacts
// directory should the spec fail. It times the check into data.
func useSharedCluster(ctx context.Context, c cluster.Cluster, data *specData) error {
	endCheck := data.phase(timing.SharedCheck)
	if r, ok := c.(cluster.Recoverer); ok {
		rctx, cancel := context.WithTimeout(ctx, RecoverTimeout)
		err := r.Recover(rctx)
		cancel()
		if err != nil {
			return fmt.Errorf("the cluster %s the specs share is not fit for this spec: %w", c.Name(), err)
		}
	}
	if err := healthy(ctx, c); err != nil {
		return fmt.Errorf("the cluster %s the specs share is unhealthy before this spec (the spec before it in this process broke it, or it died): %w", c.Name(), err)
	}
	endCheck()
	if x, ok := c.(cluster.LogExporter); ok {
		DeferCleanup(ExportLogsTimeout, func(ctx context.Context) error {
			if !current().Failed() {
				return nil
			}
			dir := filepath.Join(SpecArtifactsDir(), "cluster-logs")
			if err := x.ExportLogs(ctx, dir); err != nil {
				AddReportEntry("cluster logs export failed", err.Error())
				return nil
			}
			AddReportEntry("cluster logs", dir)
			return nil
		})
	}
	return nil
}
