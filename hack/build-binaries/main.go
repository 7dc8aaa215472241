// Command build-binaries builds (or finds in the cache) the kube-apiserver,
// etcd and etcdutl binaries the local backend runs, and prints their paths.
//
//	go run ./hack/build-binaries [-kube-version v1.36.3] [-etcd-version v3.6.16] [-upgrade] [-print-key]
//
// -upgrade also builds the kube-apiserver a rolling upgrade to that version
// starts from (S25: binaries.PreviousRelease, $KUBE_UPGRADE_FROM).
// Versions default to $KUBE_VERSION / $ETCD_VERSION, then to the pinned
// defaults. -print-key builds nothing and prints the cache key of those
// binaries (binaries.CacheKey): the reusable workflow keys its cache with
// it, run from the caller's module, so the key follows the suite version
// that module resolves.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/informer-conformance/informer-conformance/cluster/binaries"
)

func main() {
	kube := flag.String("kube-version", os.Getenv(binaries.EnvKubeVersion), "kube-apiserver version (1.31.x-1.37.x; built from source 1.33.x-1.37.x only)")
	etcd := flag.String("etcd-version", os.Getenv(binaries.EnvEtcdVersion), "etcd version (3.5.x to 3.7.x)")
	upgrade := flag.Bool("upgrade", false, "also build the kube-apiserver a rolling upgrade to that version starts from ("+binaries.EnvUpgradeFrom+", default the previous minor's pinned patch)")
	printKey := flag.Bool("print-key", false, "print the cache key of the binaries (recipe and versions) and build nothing")
	flag.Parse()
	if *printKey {
		key, err := binaries.CacheKey(binaries.Versions{KubeAPIServer: *kube, Etcd: *etcd})
		if err != nil {
			fmt.Fprintln(os.Stderr, "build-binaries:", err)
			os.Exit(1)
		}
		fmt.Println(key)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p, err := binaries.Ensure(ctx, binaries.Versions{KubeAPIServer: *kube, Etcd: *etcd}, binaries.Options{Progress: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "build-binaries:", err)
		os.Exit(1)
	}
	fmt.Printf("kube-apiserver %s\netcd %s\netcdutl %s\n", p.KubeAPIServer, p.Etcd, p.Etcdutl)
	if *upgrade {
		var up binaries.Paths
		from, err := binaries.PreviousRelease(p.Versions.KubeAPIServer, os.Getenv(binaries.EnvUpgradeFrom))
		if err == nil {
			up, err = binaries.Ensure(ctx, binaries.Versions{KubeAPIServer: from, Etcd: p.Versions.Etcd}, binaries.Options{Progress: os.Stderr})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "build-binaries: the kube-apiserver to upgrade from:", err)
			os.Exit(1)
		}
		fmt.Printf("kube-apiserver (upgrade from) %s\n", up.KubeAPIServer)
	}
}
