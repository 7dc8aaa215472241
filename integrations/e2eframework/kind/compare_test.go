package kind_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	e2ekind "sigs.k8s.io/e2e-framework/support/kind"

	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/integrations/e2eframework/kind"
)

// EnvCompare turns on TestCompareWithE2EFrameworkKind, a measurement (make
// e2eframework-compare), not a check.
const EnvCompare = "INFORMER_CONFORMANCE_COMPARE_KIND"

// TestCompareWithE2EFrameworkKind times the create of a kind cluster through
// this module's kind provider and through e2e-framework's own
// (support/kind: it runs the kind CLI, built here from the kind module this
// module already requires), on the same node image and kind configuration.
// e2e-framework's WaitForControlPlane is not timed: it waits for the
// kindnet, CoreDNS and kube-proxy pods (third_party/kind/kind.go
// WaitForControlPlane), which a node image built offline does not run.
func TestCompareWithE2EFrameworkKind(t *testing.T) {
	if os.Getenv(EnvCompare) != "1" {
		t.Skipf("a measurement: set %s=1", EnvCompare)
	}
	needKind(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	// Ours, through envfuncs: create and WaitForControlPlane (/readyz).
	cfg := envconf.New()
	ours := kind.NewProvider()
	start := time.Now()
	if _, err := envfuncs.CreateCluster(ours, "ic-compare-ours")(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	oursReady := time.Since(start)
	c, err := ours.(*kind.Provider).Cluster()
	if err != nil {
		t.Fatal(err)
	}
	kindConfig := filepath.Join(t.TempDir(), "kind.yaml")
	if err := os.WriteFile(kindConfig, []byte(c.KindConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := ours.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	oursDestroy := time.Since(start)

	// e2e-framework's, with the kind CLI on PATH, after the restricted-host
	// adapter (installed by the create above, where the host needs it).
	bin := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, "kind"), "sigs.k8s.io/kind")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the kind CLI: %v\n%s", err, out)
	}
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	if cache, err := binaries.CacheDir(""); err == nil {
		if _, err := os.Stat(filepath.Join(cache, "kind-docker-adapter", "docker")); err == nil {
			path = filepath.Join(cache, "kind-docker-adapter") + string(os.PathListSeparator) + path
		}
	}
	t.Setenv("PATH", path)
	theirs := e2ekind.NewProvider().WithName("ic-compare-theirs").WithOpts(e2ekind.WithImage(c.Image()))
	start = time.Now()
	if _, err := theirs.CreateWithConfig(ctx, kindConfig); err != nil {
		t.Fatal(err)
	}
	theirsCreate := time.Since(start)
	start = time.Now()
	if err := theirs.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	theirsDestroy := time.Since(start)
	t.Logf("this module's kind provider: create to /readyz %s, destroy %s", oursReady.Round(100*time.Millisecond), oursDestroy.Round(100*time.Millisecond))
	t.Logf("e2e-framework's kind provider (kind CLI): create %s (WaitForControlPlane not run, see above), destroy %s", theirsCreate.Round(100*time.Millisecond), theirsDestroy.Round(100*time.Millisecond))
}
