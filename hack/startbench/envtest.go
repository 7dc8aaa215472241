package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// envtestRow is controller-runtime's envtest with its defaults, given the
// same binaries through BinaryAssetsDirectory: a directory of symlinks named
// kube-apiserver and etcd. envtest needs no kubectl to start: it only
// records the path (process.BinPathFinder does not look at the file) for
// AuthenticatedUser.Kubectl, which nothing here runs.
func envtestRow(e *env) starter {
	assets := filepath.Join(e.tmp, "envtest-assets")
	return starter{
		name: "envtest",
		notes: "envtest.Environment{BinaryAssetsDirectory} Start + Stop; plain-HTTP etcd with --unsafe-no-fsync, " +
			"runs `kube-apiserver --help` and `etcd --help` per start (flag probes), waits for /healthz and the default namespace",
		prepare: func(context.Context) error {
			// These would take precedence over BinaryAssetsDirectory.
			for _, kv := range os.Environ() {
				k, _, _ := strings.Cut(kv, "=")
				if k == "KUBEBUILDER_ASSETS" || strings.HasPrefix(k, "TEST_ASSET_") {
					fmt.Fprintf(os.Stderr, "envtest: unsetting %s so that envtest runs the benchmark's binaries\n", k)
					os.Unsetenv(k)
				}
			}
			// Its controller-runtime logger, else it complains after 30 s.
			logf.SetLogger(logr.Discard())
			if err := os.MkdirAll(assets, 0o755); err != nil {
				return err
			}
			for name, target := range map[string]string{"kube-apiserver": e.bins.KubeAPIServer, "etcd": e.bins.Etcd} {
				if err := os.Symlink(target, filepath.Join(assets, name)); err != nil {
					return err
				}
			}
			return nil
		},
		start: envtestStarter(assets),
	}
}

func envtestStarter(assets string) startFunc {
	return func(ctx context.Context) (func(context.Context) error, error) {
		te := &envtest.Environment{BinaryAssetsDirectory: assets}
		// Stop takes no context: it bounds itself (StopTimeout, 20 s by default).
		stop := func(context.Context) error { return te.Stop() }
		// Start takes no context either; it bounds itself by
		// ControlPlaneStartTimeout (20 s per process, 5 tries).
		cfg, err := te.Start()
		if err != nil {
			return stop, err
		}
		return stop, waitReady(ctx, cfg)
	}
}
