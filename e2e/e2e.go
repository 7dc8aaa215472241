// Package e2e is the Ginkgo-aware harness between the specs in suites/ and
// the plain-Go backends in cluster/: it gives each spec a cluster whose
// processes and files are cleaned up with the spec, and keeps their logs in
// a per-process artifacts directory so parallel Ginkgo processes never share
// one. The instruments (fault proxy, informer probe, reports) join it here.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/informer-conformance/informer-conformance/cluster/local"
)

// Named timeouts used by specs and helpers.
const (
	// ClusterStartTimeout bounds starting a local cluster with cached binaries.
	ClusterStartTimeout = 2 * time.Minute
	// SyncTimeout bounds an informer's initial sync.
	SyncTimeout = 30 * time.Second
	// EventTimeout bounds the arrival of a single expected event.
	EventTimeout = 30 * time.Second
)

// ArtifactsRoot is $INFORMER_CONFORMANCE_ARTIFACTS, or _artifacts under the
// current directory.
func ArtifactsRoot() string {
	if a := os.Getenv(local.EnvArtifacts); a != "" {
		return a
	}
	abs, err := filepath.Abs("_artifacts")
	if err != nil {
		return "_artifacts"
	}
	return abs
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// SpecArtifactsDir is a directory for the current spec, unique per Ginkgo
// process and spec.
func SpecArtifactsDir() string {
	r := ginkgo.CurrentSpecReport()
	name := unsafeChars.ReplaceAllString(strings.Join(append(r.ContainerHierarchyTexts, r.LeafNodeText), "_"), "-")
	if len(name) > 100 {
		name = name[:100]
	}
	return filepath.Join(ArtifactsRoot(), fmt.Sprintf("p%d", ginkgo.GinkgoParallelProcess()), name)
}

// StartLocal starts a local cluster for the current spec and closes it when
// the spec ends. Its process logs go to SpecArtifactsDir; on failure the
// spec's report names that directory.
func StartLocal(ctx context.Context, opts local.Options) *local.Cluster {
	ginkgo.GinkgoHelper()
	if b, err := Backend(); err != nil || b != BackendLocal {
		if err != nil {
			ginkgo.Fail(err.Error())
		}
		ginkgo.Skip(fmt.Sprintf("backend %s: this spec starts a local control plane of its own", b))
	}
	if opts.ArtifactsDir == "" {
		opts.ArtifactsDir = SpecArtifactsDir()
	}
	if opts.Progress == nil {
		opts.Progress = ginkgo.GinkgoWriter
	}
	ctx, cancel := context.WithTimeout(ctx, ClusterStartTimeout)
	defer cancel()
	c, err := local.Start(ctx, opts)
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("start local cluster: %v", err))
	}
	ginkgo.DeferCleanup(func(ctx context.Context) error {
		if ginkgo.CurrentSpecReport().Failed() {
			ginkgo.AddReportEntry("process logs", c.ArtifactsDir())
		}
		return c.Close(ctx)
	})
	return c
}
