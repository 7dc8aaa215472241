// Command localbench measures the local backend on this machine and prints a
// markdown table: start to ready with cached binaries, apiserver restart
// downtime (hard, graceful, graceful with an informer's watch open, with the
// default flags and the fast-graceful-shutdown profile), etcd restart and
// compaction time.
//
//	go run ./hack/localbench [-n 5] [-history 2000] [-slow 1] [-json FILE]
//
// -json also writes the samples (package hack/runcheck/benchresult), for
// `make benchmarks`, which renders them into docs/benchmarks.md; on an
// error the file holds what was measured before it, and the error.
//
// Downtime is measured from the stop signal until /readyz of the new process
// answers ok (what RestartAPIServer waits for). -slow N adds N samples of the graceful
// restart with a watch open on default flags (about a minute per sample).
// Run nothing else meanwhile: on 2 cores any other load shows in the numbers.
// Each cluster's logs go to <artifacts root>/<cluster name>
// (report.ArtifactsRoot: $INFORMER_CONFORMANCE_ARTIFACTS, which make sets,
// else ./_artifacts).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/hack/runcheck/benchresult"
	"github.com/informer-conformance/informer-conformance/report"
)

type row struct {
	name    string
	samples []time.Duration
}

func main() {
	n := flag.Int("n", 5, "samples per measurement")
	history := flag.Int("history", 2000, "etcd revisions written before measuring compaction")
	slow := flag.Int("slow", 0, "samples of a graceful restart with a watch open on default flags (~60 s each)")
	jsonOut := flag.String("json", "", "also write the results to this file as JSON (for make benchmarks)")
	flag.Parse()
	if flag.NArg() > 0 || *n < 1 || *history < 1 || *slow < 0 {
		fmt.Fprintln(os.Stderr, "localbench: -n and -history must be at least 1, -slow not negative, and no arguments")
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res := benchresult.New("hack/localbench", []string{"-n", fmt.Sprint(*n), "-history", fmt.Sprint(*history), "-slow", fmt.Sprint(*slow)},
		"the local backend: cold start, restart downtime, compaction")
	var t table
	err := run(ctx, &t, &res, *n, *history, *slow)
	if err == nil {
		t.print(os.Stdout)
	}
	res.Rows = t.results()
	if werr := benchresult.Write(*jsonOut, res, err); werr != nil {
		fmt.Fprintln(os.Stderr, "localbench:", werr)
		os.Exit(1)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "localbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, t *table, res *benchresult.Result, n, history, slowN int) error {
	v, err := binaries.FromEnv()
	if err != nil {
		return err
	}
	res.Setup = fmt.Sprintf("kube-apiserver %s, etcd %s, cached binaries; a restart's downtime runs from the stop signal until /readyz of the new process answers ok (what RestartAPIServer waits for)", v.KubeAPIServer, v.Etcd)
	t.title = fmt.Sprintf("local backend, kube-apiserver %s, etcd %s, %d samples each (cached binaries)", v.KubeAPIServer, v.Etcd, n)
	bins, err := binaries.Ensure(ctx, v, binaries.Options{Progress: os.Stderr})
	if err != nil {
		return err
	}
	opts := local.Options{Binaries: bins}
	if err := coldStarts(ctx, t.add("start to ready (local.Start: etcd from the bootstrapped template, kube-apiserver, certificates, RBAC)"), opts, n); err != nil {
		return err
	}

	c, err := local.Start(ctx, withLogs(opts))
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	if err := restarts(ctx, t, c, n); err != nil {
		return err
	}
	if err := compactions(ctx, t.add(fmt.Sprintf("etcd compaction of %d revisions (as kube-apiserver does)", history)), c, n, history); err != nil {
		return err
	}

	// Graceful restarts while an informer-like watch is open.
	p, err := local.LoadProfile("fast-graceful-shutdown")
	if err != nil {
		return err
	}
	fast, err := local.Start(ctx, withLogs(local.Options{Binaries: bins, Profile: p}))
	if err != nil {
		return err
	}
	defer fast.Close(context.WithoutCancel(ctx))
	if err := watchedRestarts(ctx, fast, t.add("kube-apiserver graceful restart, watch open, profile fast-graceful-shutdown"), n); err != nil {
		return err
	}
	if slowN > 0 {
		if err := watchedRestarts(ctx, c, t.add("kube-apiserver graceful restart, watch open, default flags"), slowN); err != nil {
			return err
		}
	}
	return nil
}

// table is the measurements in the order they are printed.
type table struct {
	title    string
	measured []*row
}

// add appends a row named name and returns it for its samples.
func (t *table) add(name string) *row {
	r := &row{name: name}
	t.measured = append(t.measured, r)
	return r
}

// print writes the table in markdown with each row's min, median and max.
func (t *table) print(w io.Writer) {
	fmt.Fprintf(w, "\n%s\n\n", t.title)
	fmt.Fprintln(w, "| measurement | min | median | max |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, r := range t.measured {
		if len(r.samples) == 0 {
			continue
		}
		s := slices.Clone(r.samples)
		slices.Sort(s)
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", r.name, fmtDur(s[0]), fmtDur(s[len(s)/2]), fmtDur(s[len(s)-1]))
	}
}

// results are the measurements as results; a row an error ended early
// keeps the samples it had, and rows never reached are not there.
func (t *table) results() []benchresult.Row {
	var rows []benchresult.Row
	for _, r := range t.measured {
		rows = append(rows, benchresult.Row{Name: r.name, Seconds: benchresult.Seconds(r.samples)})
	}
	return rows
}

// timed runs f samples times and adds each run's duration to r.
func timed(r *row, samples int, f func() error) error {
	for i := range samples {
		fmt.Fprintf(os.Stderr, "%s %d/%d\n", r.name, i+1, samples)
		start := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		r.samples = append(r.samples, time.Since(start))
	}
	return nil
}

// coldStarts starts and closes a cluster n times, timing each start.
func coldStarts(ctx context.Context, r *row, opts local.Options, n int) error {
	for i := range n {
		fmt.Fprintf(os.Stderr, "cold start %d/%d\n", i+1, n)
		start := time.Now()
		c, err := local.Start(ctx, withLogs(opts))
		if err != nil {
			return err
		}
		r.samples = append(r.samples, time.Since(start))
		if err := c.Close(ctx); err != nil {
			return err
		}
	}
	return nil
}

// restarts times n restarts of each kind on c, with no watch open: the
// kube-apiserver hard (to ready and to the first successful GET) and
// graceful, and etcd hard.
func restarts(ctx context.Context, t *table, c *local.Cluster, n int) error {
	if err := timed(t.add("kube-apiserver hard restart (SIGKILL to ready)"), n, func() error {
		return c.RestartAPIServer(ctx, 0, cluster.Hard)
	}); err != nil {
		return err
	}
	// What a client sees: the apiserver answers requests before /readyz is
	// ok; two post-start hooks (rbac/bootstrap-roles,
	// scheduling/bootstrap-system-priority-classes) start with a fixed 1 s
	// wait.Poll in kube-apiserver 1.36 and hold /readyz back.
	cs, err := clientset(c)
	if err != nil {
		return err
	}
	if err := timed(t.add("kube-apiserver hard restart (SIGKILL to first successful GET)"), n, func() error {
		return firstGET(ctx, c, cs)
	}); err != nil {
		return err
	}
	if err := timed(t.add("kube-apiserver graceful restart, no watch open (SIGTERM to ready)"), n, func() error {
		return c.RestartAPIServer(ctx, 0, cluster.Graceful)
	}); err != nil {
		return err
	}
	return timed(t.add("etcd hard restart (SIGKILL to healthy)"), n, func() error {
		return c.RestartEtcd(ctx, cluster.Hard)
	})
}

// compactions times n etcd compactions on c, each after writing history
// revisions.
func compactions(ctx context.Context, r *row, c *local.Cluster, n, history int) error {
	cs, err := clientset(c)
	if err != nil {
		return err
	}
	for i := range n {
		fmt.Fprintf(os.Stderr, "compaction %d/%d: writing %d revisions\n", i+1, n, history)
		if err := writeHistory(ctx, cs, history); err != nil {
			return err
		}
		start := time.Now()
		if _, err := c.CompactEtcd(ctx, 0); err != nil {
			return err
		}
		r.samples = append(r.samples, time.Since(start))
	}
	return nil
}

// watchedRestarts times samples graceful restarts of c's kube-apiserver,
// each with an informer-like watch open.
func watchedRestarts(ctx context.Context, c *local.Cluster, r *row, samples int) error {
	cs, err := clientset(c)
	if err != nil {
		return err
	}
	return timed(r, samples, func() error {
		w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		defer w.Stop()
		return c.RestartAPIServer(ctx, 0, cluster.Graceful)
	})
}

// withLogs is opts for a new cluster whose logs go to a directory of its
// own under the artifacts root, named as the cluster.
func withLogs(opts local.Options) local.Options {
	opts.Name = local.NewName()
	opts.ArtifactsDir = filepath.Join(report.ArtifactsRoot(), opts.Name)
	return opts
}

func clientset(c *local.Cluster) (kubernetes.Interface, error) {
	cfg, err := c.RESTConfig(cluster.Admin)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	return kubernetes.NewForConfig(cfg)
}

// writeHistory makes n etcd revisions by updating one configmap.
func writeHistory(ctx context.Context, cs kubernetes.Interface, n int) error {
	cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "history", metav1.GetOptions{})
	if err != nil {
		cm, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "history"}, Data: map[string]string{}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
	}
	for i := range n {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data["i"] = fmt.Sprint(i)
		if cm, err = cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// firstGET kills apiserver 0, starts it again in the background and returns
// when a GET through cs first succeeds.
func firstGET(ctx context.Context, c *local.Cluster, cs kubernetes.Interface) error {
	if err := c.StopAPIServer(ctx, 0, cluster.Hard); err != nil {
		return err
	}
	started := make(chan error, 1)
	go func() { started <- c.StartAPIServer(ctx, 0) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return <-started
		}
		select {
		case err := <-started:
			if err != nil {
				return err
			}
			started <- nil // ready, so the next GET succeeds
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func fmtDur(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
