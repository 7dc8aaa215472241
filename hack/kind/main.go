// Command kind manages the kind backend's clusters outside a test run.
//
//	go run ./hack/kind up      create a cluster, print its kubeconfig, keep it until Ctrl-C
//	go run ./hack/kind clean   delete what dead runs left (clusters, labelled containers, the network, kind's load balancer name left on the stand-in)
//	go run ./hack/kind bench   create-to-ready, restart and compaction timings (markdown)
//
// up and bench take -apiservers N: N control-plane nodes behind kind's load
// balancer (bench then restarts the last one while the others serve).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/kind"
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
	_ = fs.Parse(os.Args[2:])
	opts := kind.Options{Progress: os.Stderr, APIServers: *apiservers}
	var err error
	switch os.Args[1] {
	case "up":
		err = up(ctx, opts)
	case "clean":
		err = kind.Clean(ctx, os.Stdout)
	case "bench":
		err = bench(ctx, opts)
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

func bench(ctx context.Context, opts kind.Options) error {
	t0 := time.Now()
	c, err := kind.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	rows := [][2]string{{fmt.Sprintf("create to ready, %d control-plane node(s) (kind create + /readyz of each + test user)", c.NumAPIServers()), time.Since(t0).Round(100 * time.Millisecond).String()}}
	last := c.NumAPIServers() - 1
	for _, m := range []cluster.StopMode{cluster.Hard, cluster.Graceful} {
		t := time.Now()
		if err := c.RestartAPIServer(ctx, last, m); err != nil {
			return err
		}
		rows = append(rows, [2]string{fmt.Sprintf("kube-apiserver %d restart, %s, to its /readyz", last, m), time.Since(t).Round(100 * time.Millisecond).String()})
	}
	t := time.Now()
	if _, err := c.CompactEtcd(ctx, 0); err != nil {
		return err
	}
	rows = append(rows, [2]string{"etcd compaction (client from the host)", time.Since(t).Round(time.Millisecond).String()})
	t = time.Now()
	if err := c.Close(ctx); err != nil {
		return err
	}
	rows = append(rows, [2]string{"delete", time.Since(t).Round(100 * time.Millisecond).String()})
	fmt.Printf("| kind backend (%s) | time |\n|---|---|\n", c.Image())
	for _, r := range rows {
		fmt.Printf("| %s | %s |\n", r[0], r[1])
	}
	return nil
}
