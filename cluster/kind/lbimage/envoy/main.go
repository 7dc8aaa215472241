// Command envoy is the "envoy" of the load balancer image the kind backend
// builds offline (cluster/kind/lbimage): kind starts its load balancer
// container with `envoy -c /home/envoy/envoy.yaml` (kind v0.33
// pkg/cluster/internal/loadbalancer GenerateBootstrapCommand); this program
// takes the same flag, renders a haproxy configuration from the Envoy
// configuration kind writes and runs haproxy, reloading it when kind
// replaces its files (package translator). It is not Envoy: other flags are
// refused.
//
//	envoy -c /home/envoy/envoy.yaml
//	envoy --version
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/informer-conformance/informer-conformance/cluster/kind/lbimage/translator"
)

func main() {
	fs := flag.NewFlagSet("envoy", flag.ContinueOnError)
	bootstrap := fs.String("c", "", "path of the Envoy bootstrap configuration (file-based xDS)")
	fs.StringVar(bootstrap, "config-path", "", "same as -c")
	version := fs.Bool("version", false, "print what this program is and exit")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *version {
		fmt.Println("envoy: informer-conformance's translator of kind's Envoy configuration to haproxy (not Envoy)")
		return
	}
	if *bootstrap == "" || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: envoy -c <bootstrap.yaml>")
		os.Exit(2)
	}
	// docker stop's SIGTERM, or an interrupt: stop haproxy and exit 0 (kind's
	// bootstrap loop then ends).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := &translator.Supervisor{Bootstrap: *bootstrap}
	if err := s.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "envoy(haproxy):", err)
		os.Exit(1)
	}
}
