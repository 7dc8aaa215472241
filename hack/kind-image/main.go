// Command kind-image builds (or finds in Docker) the kind node image for a
// Kubernetes version, offline, from pinned sources, and makes sure kind's
// load balancer (clusters of several control-plane nodes) has an image:
// kind's own where Docker has or can pull it, else a stand-in with haproxy
// (package lbimage); it prints each step, then the two images' names.
//
//	go run ./hack/kind-image [-kube-version v1.36.3]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/kind/lbimage"
	"github.com/informer-conformance/informer-conformance/cluster/kind/nodeimage"
)

func main() {
	kube := flag.String("kube-version", os.Getenv(binaries.EnvKubeVersion), "Kubernetes version (default "+binaries.DefaultKubeVersion+")")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tag, err := nodeimage.Build(ctx, nodeimage.Options{KubeVersion: *kube, Progress: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "kind-image:", err)
		os.Exit(1)
	}
	fmt.Println(tag)
	lb, err := lbimage.Build(ctx, lbimage.Options{Progress: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "kind-image:", err)
		os.Exit(1)
	}
	fmt.Println(lb)
}
