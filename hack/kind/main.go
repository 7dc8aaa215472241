// Command kind manages the kind backend's clusters outside a test run.
//
//	go run ./hack/kind up      create a cluster, print its kubeconfig, keep it until Ctrl-C
//	go run ./hack/kind clean   delete what dead runs left (clusters, labelled containers, the network, kind's load balancer name left on the stand-in)
//	go run ./hack/kind bench   create-to-ready, restart, compaction and delete timings (markdown)
//
// up and bench take -apiservers N: N control-plane nodes behind kind's load
// balancer (bench then restarts the last one while the others serve).
// bench -json FILE also writes its timings (package
// hack/runcheck/benchresult) for `make benchmarks`, which renders them into
// docs/benchmarks.md; with -skip-unavailable, no Docker or no node image
// is no error: the file says the bench did not run, and why.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/kind"
	"github.com/informer-conformance/informer-conformance/cluster/kind/docker"
	"github.com/informer-conformance/informer-conformance/cluster/kind/nodeimage"
	"github.com/informer-conformance/informer-conformance/hack/runcheck/benchresult"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kind up|clean|bench")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	apiservers := fs.Int("apiservers", 1, fmt.Sprintf("control-plane nodes (1-%d)", kind.MaxAPIServers))
	var jsonOut *string
	var skipUnavailable *bool
	if os.Args[1] == "bench" {
		jsonOut = fs.String("json", "", "also write the timings to this file as JSON (for make benchmarks)")
		skipUnavailable = fs.Bool("skip-unavailable", false, "without Docker or the node image, write (-json) that the bench did not run, and why, and exit 0")
	}
	_ = fs.Parse(os.Args[2:])
	opts := kind.Options{Progress: os.Stderr, APIServers: *apiservers}
	var err error
	switch os.Args[1] {
	case "up":
		err = up(ctx, opts)
	case "clean":
		err = kind.Clean(ctx, os.Stdout)
	case "bench":
		err = benchMain(ctx, opts, *jsonOut, *skipUnavailable)
	default:
		err = fmt.Errorf("unknown command %q: use up, clean or bench", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kind:", err)
		os.Exit(1)
	}
}

func up(ctx context.Context, opts kind.Options) error {
	c, err := kind.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	kc, err := c.KubeconfigPath(cluster.Admin)
	if err != nil {
		return err
	}
	fmt.Printf("export KUBECONFIG=%s\n", kc)
	fmt.Fprintln(os.Stderr, "cluster", c.KindName(), "is up; Ctrl-C deletes it")
	<-ctx.Done()
	return nil
}

// benchMain runs bench and writes its results to jsonOut (if set); with
// skipUnavailable, a machine without Docker or the node image gets a
// result saying the bench did not run, and no error.
func benchMain(ctx context.Context, opts kind.Options, jsonOut string, skipUnavailable bool) error {
	res := benchresult.New("hack/kind bench", []string{"-apiservers", fmt.Sprint(opts.APIServers)},
		"the kind backend: create to ready, kube-apiserver restarts, etcd compaction, delete")
	res.Setup = "one sample of each, on one cluster of this repository's kind backend (kind's Go library, the node image of make kind-image or KIND_NODE_IMAGE)"
	var why, err error
	if skipUnavailable {
		why = unavailable(ctx)
	}
	if why != nil {
		res.NotRun = why.Error()
		fmt.Fprintln(os.Stderr, "kind: bench not run:", why)
	} else {
		var rows []benchresult.Row
		rows, err = bench(ctx, opts, &res)
		res.Rows = rows
		if err == nil {
			fmt.Printf("%s\n\n| kind backend | time |\n|---|---|\n", res.Setup)
			for _, r := range rows {
				fmt.Printf("| %s | %.2f s |\n", r.Name, r.Seconds[0])
			}
		}
	}
	if werr := benchresult.Write(jsonOut, res, err); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// unavailable says why kind.Start could not start a cluster here: no
// Docker, or no node image (a published one, KIND_NODE_IMAGE, kind pulls).
func unavailable(ctx context.Context) error {
	d, err := docker.New(ctx)
	if err != nil {
		return err
	}
	if os.Getenv(kind.EnvNodeImage) != "" {
		return nil
	}
	v, err := binaries.FromEnv()
	if err != nil {
		return err
	}
	if image := nodeimage.Tag(v.KubeAPIServer); !d.ImageExists(ctx, image) {
		return fmt.Errorf("no kind node image %s in Docker (make kind-image builds it, or %s names a published one)", image, kind.EnvNodeImage)
	}
	return nil
}

// bench creates a cluster and times its create, a hard and a graceful
// restart of its last kube-apiserver, a compaction and its delete; the
// rows it returns hold what it timed before any error.
func bench(ctx context.Context, opts kind.Options, res *benchresult.Result) (rows []benchresult.Row, err error) {
	timed := func(name string, since time.Time) {
		rows = append(rows, benchresult.Row{Name: name, Seconds: []float64{time.Since(since).Seconds()}})
	}
	t0 := time.Now()
	c, err := kind.Start(ctx, opts)
	if err != nil {
		return rows, err
	}
	defer c.Close(context.Background())
	res.Setup = fmt.Sprintf("one sample of each, on one cluster of this repository's kind backend (kind's Go library), node image %s", c.Image())
	timed(fmt.Sprintf("create to ready, %d control-plane node(s) (kind create + /readyz of each + test user)", c.NumAPIServers()), t0)
	last := c.NumAPIServers() - 1
	for _, m := range []cluster.StopMode{cluster.Hard, cluster.Graceful} {
		t := time.Now()
		if err := c.RestartAPIServer(ctx, last, m); err != nil {
			return rows, err
		}
		timed(fmt.Sprintf("kube-apiserver %d restart, %s, to its /readyz", last, m), t)
	}
	t := time.Now()
	if _, err := c.CompactEtcd(ctx, 0); err != nil {
		return rows, err
	}
	timed("etcd compaction (client from the host)", t)
	t = time.Now()
	if err := c.Close(ctx); err != nil {
		return rows, err
	}
	timed("delete", t)
	return rows, nil
}
