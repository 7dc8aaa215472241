// Command local-up starts a local control plane (etcd + kube-apiserver built
// from pinned source) and keeps it running until Ctrl-C, like
// `kind create cluster` for the suite's default backend.
//
//	go run ./hack/local-up [-apiservers 2] [-profile no-watch-cache]
//
// It prints the admin kubeconfig path; kubectl, client-go programs and the
// suite (backend "existing") can use it. The processes' logs go to
// <artifacts root>/<cluster name> (report.ArtifactsRoot:
// $INFORMER_CONFORMANCE_ARTIFACTS, which make sets, else ./_artifacts) and
// stay there after Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/fixtures"
	"github.com/informer-conformance/informer-conformance/report"
)

func main() {
	apiservers := flag.Int("apiservers", 1, "number of kube-apiservers over the one etcd")
	profile := flag.String("profile", "default", "flag profile: one of "+strings.Join(fixtures.ProfileNames(), ", ")+", or a YAML file")
	flag.Parse()
	if err := run(*apiservers, *profile); err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		os.Exit(1)
	}
}

func run(apiservers int, profileName string) error {
	// SIGHUP too: a closed terminal stops and removes the cluster like Ctrl-C.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	p, err := local.LoadProfile(profileName)
	if err != nil {
		return err
	}
	name := local.NewName()
	c, err := local.Start(ctx, local.Options{Name: name, APIServers: apiservers, Profile: p, Progress: os.Stderr,
		ArtifactsDir: filepath.Join(report.ArtifactsRoot(), name)})
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	admin, _ := c.KubeconfigPath(cluster.Admin)
	user, _ := c.KubeconfigPath(cluster.TestUser)
	for i := range c.NumAPIServers() {
		fmt.Printf("kube-apiserver-%d: %s\n", i, c.APIServerURL(i))
	}
	fmt.Printf("etcd:             %s\nlogs:             %s\nadmin kubeconfig: %s\ntest-user kubeconfig: %s\n\nexport KUBECONFIG=%s\n\nPress Ctrl-C to stop and remove the cluster.\n",
		c.EtcdURL(), c.ArtifactsDir(), admin, user, admin)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping")
	return nil
}
