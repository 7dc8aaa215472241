// Package localtest starts local clusters for plain Go tests: logs under
// $INFORMER_CONFORMANCE_ARTIFACTS/go-test (kept for failed tests) or the
// test's temp dir, closed when the test ends.
package localtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster/local"
)

// StartTimeout bounds starting a cluster with cached binaries (or building
// them once, which the first test of a fresh machine may do).
const StartTimeout = 10 * time.Minute

// Start starts a cluster for t and closes it when t ends; with -short it
// skips t (SkipIfShort).
func Start(t testing.TB, opts local.Options) *local.Cluster {
	t.Helper()
	SkipIfShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if opts.ArtifactsDir == "" {
		opts.ArtifactsDir = ArtifactsDir(t)
	}
	c, err := local.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start local cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("close local cluster: %v", err)
		}
		if t.Failed() {
			t.Logf("process logs: %s", c.ArtifactsDir())
		}
	})
	return c
}

// SkipIfShort skips t under go test -short: t needs a real control plane,
// hence kube-apiserver and etcd built from source (make binaries, about 5
// minutes on a fresh machine). make test-unit runs the tests that need
// neither.
func SkipIfShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: needs a real control plane (kube-apiserver and etcd, make binaries)")
	}
}

// EnvArtifacts is report.EnvArtifacts, the run's artifacts root (make test
// sets it). Package report resolves it for everything else
// (report.ArtifactsRoot); the tests of cluster/, which may not import
// report (hack/importrules), start their clusters here, so this is the one
// other reader, and it has a default of its own: the test's temp dir, not
// ./_artifacts. e2e's TestArtifactsVariable checks the two names agree.
const EnvArtifacts = "INFORMER_CONFORMANCE_ARTIFACTS"

// ArtifactsDir is where t's process logs go: $EnvArtifacts/go-test/<test>,
// else t's temp dir.
func ArtifactsDir(t testing.TB) string {
	if a := os.Getenv(EnvArtifacts); a != "" {
		return filepath.Join(a, "go-test", strings.ReplaceAll(t.Name(), "/", "_"))
	}
	return t.TempDir()
}
