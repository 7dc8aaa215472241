// Package e2e is the Ginkgo-aware harness between the specs in suites/ and
// the plain-Go backends in cluster/, each registered here by name
// (RegisterBackend, e2e/backend_<name>.go): it gives each spec a cluster of
// the selected backend (its own, cleaned up with the spec, or one shared by
// the process's specs, each in a namespace of its own), skips a spec the
// backend cannot serve, and keeps logs in a per-process artifacts directory
// so parallel Ginkgo processes never share one. Specs reach a cluster's
// faults only through cluster's capability interfaces (Require). The
// instruments (fault proxy, informer probe, reports) join it here.
package e2e

import (
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
