package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/lifetime"
	"github.com/informer-conformance/informer-conformance/cluster/pool"
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
// harness names none), or why the run's configuration is refused
// (Config).
func Backend() (cluster.Backend, error) {
	rc, err := Config()
	return rc.Backend, err
}

// clusterHarness is what the harness gives backend starts: logs in
// artifactsDir, progress to the spec's log, the run's configuration.
func (h *Harness) clusterHarness(artifactsDir string) cluster.Harness {
	rc, _ := h.Config() // a run with a bad configuration starts no cluster
	return cluster.Harness{
		Env:          rc.Env,
		ArtifactsDir: artifactsDir,
		Progress:     ginkgo.GinkgoWriter,
		ProcessDir:   processArtifactsDir,
		Warn:         warnOnce,
	}
}

// warnOnce says something a user must see whatever the verbosity, once per
// process: to stderr (Ginkgo prints a parallel process's output) and to the
// spec's log.
func warnOnce(msg string) {
	if _, seen := process.warned.LoadOrStore(msg, true); seen {
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

// sharedCluster is d's cluster in this process for specs without a flag
// profile, started on first use (pool.Pool.Get).
func sharedCluster(ctx context.Context, d cluster.Backend) (cluster.Cluster, error) {
	c, _, err := theHarness.keptFor(d).Get(ctx, cluster.Spec{})
	return c, err
}

// EnvSpares=true starts the next cluster of its own of each test process,
// on a backend that starts one per spec (local), while the current spec
// runs (pool.Spares), for the same cluster.Spec as the current one. Off by
// default: on 2 cores and 4 processes the starts ahead, mostly for a spec
// that never comes (the next spec of a process is rarely of the same
// cluster.Spec), cost more than they save. On a machine with cores to
// spare, or with one process, it hides the starts.
const EnvSpares = "INFORMER_CONFORMANCE_SPARES"

// startOwn starts a cluster the current spec has to itself on backend d,
// closed with the spec: with EnvSpares, the spare started for the same
// spec while the spec before ran (how says so, for the report).
func startOwn(ctx context.Context, d cluster.Backend, spec cluster.Spec, h cluster.Harness) (cluster.Cluster, string, error) {
	if !h.Env.Flag(EnvSpares) {
		sctx, cancel := pool.StartContext(ctx, d)
		defer cancel()
		c, err := d.Start(sctx, spec, h)
		return c, string(pool.Started), err
	}
	s := theHarness.sparesFor(d, func() *pool.Spares {
		return &pool.Spares{Backend: d, ArtifactsDir: processArtifactsDir("spares"),
			Errors: func(err error) { fmt.Fprintln(h.Progress, err) }}
	})
	c, how, err := s.Take(ctx, spec, h)
	if err == nil && how != pool.Started {
		fmt.Fprintf(h.Progress, "%s cluster %s (%s), its logs in %s\n", d.Name, c.Name(), how, c.ArtifactsDir())
	}
	return c, string(how), err
}

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
func ShareClientSideClusters() { theHarness.ShareClientSideClusters() }

// EnvClusterPerSpec=true gives every spec a cluster of its own even where
// the suite shares clusters among client-side specs (ShareClientSideClusters).
const EnvClusterPerSpec = "INFORMER_CONFORMANCE_CLUSTER_PER_SPEC"

// disruptiveLabel marks specs that break the control plane itself
// (suites' Disruptive decoration): they never share a cluster on a
// backend that can give them their own.
const disruptiveLabel = "disruptive"

// CloseSharedClusters closes the clusters of this process that outlive a
// spec (pool.Pool.Close) and stops the clusters started ahead; later specs
// cannot start them again. Suites call it from an AfterSuite. Closing a
// cluster already closed, or never started, is fine.
func CloseSharedClusters(ctx context.Context) error { return theHarness.CloseSharedClusters(ctx) }

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
// (spec, capability and backend labels): a cluster of this process's pool
// (a Shared backend's for what the spec asks, pool.Key, or the one the
// client-side specs asking for spec share), or a new cluster closed when
// the spec ends.
func startCluster(ctx context.Context, spec cluster.Spec, rec SpecRecord) (d cluster.Backend, c cluster.Cluster, shared bool) {
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
	if len(early) > 0 {
		// A kind cluster takes half a minute: a spec that cannot run on
		// the backend anyway skips before it, naming the capabilities it
		// needs when the process's cluster is already there to check them.
		if d.Shared {
			if c := theHarness.keptFor(d).Started(spec); c != nil {
				early = append(capabilityGaps(c, labels), early...)
			}
		}
		skipLacking(d.Name, early)
	}
	if d.Shared || theHarness.sharing.Load() && !slices.Contains(labels, disruptiveLabel) {
		return d, joinShared(ctx, d, labels, spec, rec), true
	}
	end := rec.Phase(timing.ClusterStart)
	c, how, err := startOwn(ctx, d, spec, theHarness.clusterHarness(specArtifactsDir(ginkgo.CurrentSpecReport())))
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("start %s cluster: %v", d.Name, err))
	}
	rec.ClusterFrom(how)
	end()
	ginkgo.DeferCleanup(func(ctx context.Context) error {
		if ginkgo.CurrentSpecReport().Failed() {
			ginkgo.AddReportEntry("process logs", c.ArtifactsDir())
		}
		defer rec.Phase(timing.ClusterClose)()
		return c.Close(ctx)
	})
	if missing := capabilityGaps(c, labels); len(missing) > 0 {
		skipLacking(d.Name, missing)
	}
	return d, c, false
}

// joinShared gives the current spec the cluster of this process's pool for
// spec (started by the first spec that asks, its start timed as that
// spec's), or skips the spec when the cluster lacks a capability it is
// labelled with, and readies it (useShared).
func joinShared(ctx context.Context, d cluster.Backend, labels []string, spec cluster.Spec, rec SpecRecord) cluster.Cluster {
	ginkgo.GinkgoHelper()
	end := rec.Phase(timing.ClusterStart)
	c, started, err := theHarness.keptFor(d).Get(ctx, spec)
	if err != nil {
		ginkgo.Fail(err.Error())
	}
	if started {
		end()
	}
	if missing := capabilityGaps(c, labels); len(missing) > 0 {
		skipLacking(d.Name, missing)
	}
	useShared(ctx, d.Name, c, rec)
	return c
}

// useShared readies a shared cluster for the current spec and, should the
// spec fail, exports the cluster's logs into the spec's artifacts.
func useShared(ctx context.Context, backend string, c cluster.Cluster, rec SpecRecord) {
	ginkgo.GinkgoHelper()
	if err := useSharedCluster(ctx, c, rec); err != nil {
		Fail(ctx, fmt.Sprintf("backend %s: %v", backend, err))
	}
}

// ExportLogsTimeout bounds exporting a shared cluster's logs for a failed spec.
const ExportLogsTimeout = 2 * time.Minute

// UseSharedCluster gives the current spec c, a cluster of its caller's that
// outlives the spec, for a front end's Cluster: it skips the spec, naming
// what is missing, when c lacks what spec asks (cluster.Lacks), and fails
// it when c is unhealthy (useSharedCluster). The phases go to rec.
func UseSharedCluster(ctx context.Context, c cluster.Cluster, spec cluster.Spec, rec SpecRecord) cluster.Cluster {
	if missing := cluster.Lacks(c, spec); len(missing) > 0 {
		Skip(ctx, fmt.Sprintf("cluster %s lacks %s (create it with them to run this scenario)", c.Name(), strings.Join(missing, " and ")))
	}
	if err := useSharedCluster(ctx, c, rec); err != nil {
		Fail(ctx, err.Error())
	}
	return c
}

// useSharedCluster readies c, a cluster that outlives the current spec,
// for it (pool.Ready: an unhealthy shared cluster fails the spec that
// would have used it, saying so), and a cluster.LogExporter's logs go to
// the spec's artifacts directory should the spec fail. It times the check
// into rec.
func useSharedCluster(ctx context.Context, c cluster.Cluster, rec SpecRecord) error {
	endCheck := rec.Phase(timing.SharedCheck)
	if err := pool.Ready(ctx, c); err != nil {
		return err
	}
	endCheck()
	if x, ok := c.(cluster.LogExporter); ok {
		DeferCleanup(ctx, ExportLogsTimeout, func(ctx context.Context) error {
			if !FrontEndOf(ctx).Failed() {
				return nil
			}
			dir := filepath.Join(SpecArtifactsDir(ctx), "cluster-logs")
			if err := x.ExportLogs(ctx, dir); err != nil {
				AddReportEntry(ctx, "cluster logs export failed", err.Error())
				return nil
			}
			AddReportEntry(ctx, "cluster logs", dir)
			return nil
		})
	}
	return nil
}
