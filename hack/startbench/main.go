// Command startbench compares, in one run on one machine, how long ways of
// starting a throwaway control plane take: from "asked for a cluster" to
// "/readyz answers ok and a client lists namespaces" (waitReady, the same
// check for every row). Rows: this repo's local backend, controller-runtime's
// envtest and kwokctl's binary runtime, all running the same kube-apiserver
// and etcd binaries (binaries.Ensure, KUBE_VERSION / ETCD_VERSION).
//
//	cd hack/startbench && go run . [-n 10] [-warmup 1] [-only local,envtest] [-json FILE]
//
// Samples are taken round-robin over the starters (each round beginning one
// starter further on), so drifting machine load hits every row alike. Stop
// time is not measured. The table goes to stdout, progress to stderr. Run
// nothing else meanwhile: on 2 cores any other load shows in the numbers.
//
// A row that cannot run on this machine (kwok without kubectl on PATH, kind
// without Docker or its node image) is in the table as not run, saying why;
// that is no error. -json also writes the samples (package
// hack/runcheck/benchresult) for `make benchmarks`, which renders them into
// docs/benchmarks.md.
//
// To add a row, append to the slice in starters (see starter).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/kind"
	"github.com/informer-conformance/informer-conformance/cluster/kind/docker"
	"github.com/informer-conformance/informer-conformance/cluster/kind/nodeimage"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/hack/runcheck/benchresult"
	"github.com/informer-conformance/informer-conformance/report"
)

// startFunc starts a control plane and returns once waitReady passed on it.
// stop tears everything down (processes, directories); it is non-nil
// whenever anything may have been started, error or not, and the caller
// calls it exactly once.
type startFunc func(ctx context.Context) (stop func(context.Context) error, err error)

// starter is a row of the table.
type starter struct {
	name string
	// notes go to the table's notes column.
	notes string
	// prepare, if set, runs once before the first sample, unmeasured (e.g.
	// building a tool). When it fails the row shows its error and has no
	// samples.
	prepare func(ctx context.Context) error
	start   startFunc
}

// env is what the starters share.
type env struct {
	bins binaries.Paths
	// tmp is removed when the run ends.
	tmp string
}

// starters are the rows, in table order.
func starters(e *env) []starter {
	return []starter{
		{
			name:  "local",
			notes: "local.Start: etcd restored from the bootstrapped template (made by the warm-up if missing), TLS etcd, RBAC for the test user, the suite's CRDs established",
			start: localStarter(local.Options{Binaries: e.bins}),
		},
		{
			name:  "local, fresh etcd",
			notes: "local.Start with FreshEtcd: kube-apiserver bootstraps an empty etcd and Start waits for its full /readyz, then grants the test user and installs the CRDs (the local backend before templates)",
			start: localStarter(local.Options{Binaries: e.bins, FreshEtcd: true}),
		},
		{
			name:  "local, 3 apiservers",
			notes: "local.Start with APIServers: 3 (HA specs), from the template: the three start at once",
			start: localStarter(local.Options{Binaries: e.bins, APIServers: 3}),
		},
		envtestRow(e),
		{
			name:    "kind",
			notes:   "kind.Start (this repo's kind backend: kind's Go library, the node image make kind-image builds offline, one control-plane node, /readyz and the test user) + Close; not run without Docker or the image",
			prepare: kindAvailable,
			start: func(ctx context.Context) (func(context.Context) error, error) {
				c, err := kind.Start(ctx, kind.Options{})
				if err != nil {
					return nil, err // Start leaves nothing behind on error
				}
				return ready(ctx, c)
			},
		},
		kwokRow(e, "kwok", false),
		kwokRow(e, "kwok+controller", true),
	}
}

// localStarter is this repo's backend with opts; each cluster's logs go to
// <artifacts root>/<cluster name> (report.ArtifactsRoot:
// $INFORMER_CONFORMANCE_ARTIFACTS, which make sets, else ./_artifacts).
func localStarter(opts local.Options) startFunc {
	return func(ctx context.Context) (func(context.Context) error, error) {
		opts := opts
		opts.Name = local.NewName()
		opts.ArtifactsDir = filepath.Join(report.ArtifactsRoot(), opts.Name)
		c, err := local.Start(ctx, opts)
		if err != nil {
			return nil, err // Start leaves nothing behind on error
		}
		return ready(ctx, c)
	}
}

// ready waits for c, a cluster of this repo's backends, to pass waitReady
// as its admin; stop closes it.
func ready(ctx context.Context, c cluster.Cluster) (stop func(context.Context) error, err error) {
	stop = c.Close
	cfg, err := c.RESTConfig(cluster.Admin)
	if err != nil {
		return stop, err
	}
	return stop, waitReady(ctx, cfg)
}

// kindAvailable fails, saying why, where kind.Start could not start the
// kind row's cluster: no Docker, or no node image (what kind.Start's own
// check says, before it would create anything).
func kindAvailable(ctx context.Context) error {
	d, err := docker.New(ctx)
	if err != nil {
		return err
	}
	image := os.Getenv(kind.EnvNodeImage)
	if image == "" {
		v, err := binaries.FromEnv()
		if err != nil {
			return err
		}
		image = nodeimage.Tag(v.KubeAPIServer)
		if !d.ImageExists(ctx, image) {
			return fmt.Errorf("no kind node image %s in Docker (make kind-image builds it, or %s names a published one)", image, kind.EnvNodeImage)
		}
	}
	return nil // a published image kind.Start pulls if Docker lacks it
}

const stopTimeout = 2 * time.Minute

func main() {
	n := flag.Int("n", 10, "measured samples per starter")
	warmup := flag.Int("warmup", 1, "unmeasured starts per starter before sampling")
	only := flag.String("only", "", "comma-separated starter names to run (default all)")
	jsonOut := flag.String("json", "", "also write the results to this file as JSON (for make benchmarks)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "startbench: unexpected arguments %q\n", flag.Args())
		flag.Usage()
		os.Exit(2)
	}
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	args := []string{"-n", fmt.Sprint(*n), "-warmup", fmt.Sprint(*warmup)}
	if *only != "" {
		args = append(args, "-only", *only)
	}
	res := benchresult.New("hack/startbench", args, "a ready control plane: the local backend next to envtest, kind and kwok")
	rows, err := run(ctx, &res, *n, *warmup, *only)
	res.Rows = results(rows)
	if werr := benchresult.Write(*jsonOut, res, err); werr != nil {
		err = errors.Join(err, werr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "startbench:", err)
		stopSignals()
		os.Exit(1)
	}
}

type row struct {
	starter
	samples []time.Duration
	fails   int
	errs    []string
	skipped error // prepare failed
}

// run samples the starters named by only (all if empty) and prints the
// table; it returns the rows, with what they measured before any error.
func run(ctx context.Context, res *benchresult.Result, n, warmup int, only string) (rows []*row, err error) {
	if n < 1 || warmup < 0 {
		return nil, errors.New("-n must be at least 1 and -warmup not negative")
	}
	v, err := binaries.FromEnv()
	if err != nil {
		return nil, err
	}
	res.Setup = fmt.Sprintf("kube-apiserver %s and etcd %s for every row; a sample runs from asking for a control plane until /readyz answers ok "+
		"(but for cluster.BootstrapReconcileChecks), namespaces list and a ConfigMap is written; %d unmeasured warm-up start(s) per row, "+
		"then the rows sampled round-robin; stop time not measured", v.KubeAPIServer, v.Etcd, warmup)
	fmt.Fprintln(os.Stderr, "binaries: ensuring", v.KubeAPIServer, v.Etcd)
	bins, err := binaries.Ensure(ctx, v, binaries.Options{Progress: os.Stderr})
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "startbench-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if rerr := os.RemoveAll(tmp); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	e := &env{bins: bins, tmp: tmp}

	all := starters(e)
	if only == "" {
		for _, s := range all {
			rows = append(rows, &row{starter: s})
		}
	} else {
		for name := range strings.SplitSeq(only, ",") {
			name = strings.TrimSpace(name)
			i := slices.IndexFunc(all, func(s starter) bool { return s.name == name })
			if i < 0 {
				var names []string
				for _, s := range all {
					names = append(names, s.name)
				}
				return nil, fmt.Errorf("-only: no starter %q (have %s)", name, strings.Join(names, ", "))
			}
			rows = append(rows, &row{starter: all[i]})
		}
	}

	for _, r := range rows {
		if r.prepare == nil {
			continue
		}
		fmt.Fprintf(os.Stderr, "%s: preparing\n", r.name)
		if err := r.prepare(ctx); err != nil {
			if ctx.Err() != nil {
				return rows, ctx.Err()
			}
			r.skipped = err
			fmt.Fprintf(os.Stderr, "%s: skipped: %v\n", r.name, err)
		}
	}

	rounds := warmup + n
	for round := 0; round < rounds && ctx.Err() == nil; round++ {
		for k := range rows {
			if ctx.Err() != nil {
				break
			}
			r := rows[(round+k)%len(rows)]
			if r.skipped != nil {
				continue
			}
			label := fmt.Sprintf("sample %d/%d", round-warmup+1, n)
			if round < warmup {
				label = fmt.Sprintf("warm-up %d/%d", round+1, warmup)
			}
			d, err := sample(ctx, r.start)
			if ctx.Err() != nil {
				fmt.Fprintf(os.Stderr, "%-16s %s: interrupted (stopped what it started)\n", r.name, label)
				break // an interrupted sample is no sample
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "%-16s %s: failed after %s: %v\n", r.name, label, fmtDur(d), err)
			} else {
				fmt.Fprintf(os.Stderr, "%-16s %s: %s\n", r.name, label, fmtDur(d))
			}
			if round < warmup {
				continue
			}
			if err != nil {
				r.fails++
				r.errs = append(r.errs, oneLine(err))
				continue
			}
			r.samples = append(r.samples, d)
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "interrupted; the table holds the samples taken so far")
	}
	printTable(os.Stdout, rows)
	return rows, ctx.Err()
}

// results are rows as benchmark results: a row whose prepare failed is
// not run, saying why.
func results(rows []*row) []benchresult.Row {
	var out []benchresult.Row
	for _, r := range rows {
		br := benchresult.Row{Name: r.name, Notes: r.notes, Seconds: benchresult.Seconds(r.samples), Failed: r.fails}
		if r.skipped != nil {
			br.NotRun = oneLine(r.skipped)
		}
		if len(r.errs) > 0 {
			br.FirstError = r.errs[0]
		}
		out = append(out, br)
	}
	return out
}

// sample times one start; the stop that follows is not timed.
func sample(ctx context.Context, start startFunc) (time.Duration, error) {
	t0 := time.Now()
	stop, err := start(ctx)
	d := time.Since(t0)
	if stop != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer cancel()
		if serr := stop(sctx); serr != nil {
			err = errors.Join(err, fmt.Errorf("stop: %w", serr))
		}
	}
	return d, err
}

func printTable(w io.Writer, rows []*row) {
	fmt.Fprintln(w, "| starter | n | p50 | p95 | min | max | notes |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range rows {
		notes := r.notes
		if r.skipped != nil {
			fmt.Fprintf(w, "| %s | 0 | - | - | - | - | **not run: %s** %s |\n", r.name, cell(oneLine(r.skipped)), cell(notes))
			continue
		}
		if r.fails > 0 {
			notes = fmt.Sprintf("**%d failed, first: %s** %s", r.fails, oneLine(errors.New(r.errs[0])), notes)
		}
		if len(r.samples) == 0 {
			fmt.Fprintf(w, "| %s | 0 | - | - | - | - | %s |\n", r.name, cell(notes))
			continue
		}
		s := slices.Clone(r.samples)
		slices.Sort(s)
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s |\n", r.name, len(s),
			fmtDur(quantile(s, 0.5)), fmtDur(quantile(s, 0.95)), fmtDur(s[0]), fmtDur(s[len(s)-1]), cell(notes))
	}
}

// quantile of sorted s, linearly interpolated between order statistics
// (q=0.5 is the median).
func quantile(s []time.Duration, q float64) time.Duration {
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	return s[lo] + time.Duration((pos-float64(lo))*float64(s[hi]-s[lo]))
}

func fmtDur(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// oneLine shortens err for a table cell.
func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
