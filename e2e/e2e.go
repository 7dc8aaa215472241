// Package e2e is the Ginkgo-aware harness between the specs in suites/ and
// the plain-Go backends in cluster/, each registered by name from its own
// package (cluster.RegisterBackend; a suite imports cluster/backends, the
// harness names no backend): it gives each spec a cluster of the selected
// backend (its own, cleaned up with the spec, or one shared by
// the process's specs, each in a namespace of its own), skips a spec the
// backend cannot serve, and keeps each spec's logs in a directory of its
// own, new in each run (SpecArtifactsDir, PrepareRun). Specs reach a cluster's
// faults only through cluster's capability interfaces (Require). The
// instruments (fault proxy, informer probe, reports) join it here.
package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/informer-conformance/informer-conformance/report"
)

// Named timeouts used by specs and helpers.
const (
	// SyncTimeout bounds an informer's initial sync.
	SyncTimeout = 30 * time.Second
	// EventTimeout bounds the arrival of a single expected event.
	EventTimeout = 30 * time.Second
)

// suiteKey names the running suite's directory in the artifacts root
// (report.ArtifactsRoot, the one place that resolves it): the base
// name of its package directory, where go test and ginkgo run each suite
// (the same in every Ginkgo process of the suite, and distinct for suites
// that go test runs side by side into one root).
func suiteKey() string {
	wd, err := os.Getwd()
	if err != nil {
		return "suite"
	}
	return report.SafeName(filepath.Base(wd))
}

// SuiteArtifactsDir holds the running suite's per-spec directories; the
// suite empties it before its first spec (PrepareRun).
func SuiteArtifactsDir() string {
	return filepath.Join(report.ArtifactsRoot(), suiteKey())
}

// processArtifactsDir is a directory of this Ginkgo process in
// SuiteArtifactsDir (a shared cluster's logs).
func processArtifactsDir(name string) string {
	return filepath.Join(SuiteArtifactsDir(), fmt.Sprintf("%s-p%d", name, ginkgo.GinkgoParallelProcess()))
}

// SpecArtifactsDir is the current spec's directory in SuiteArtifactsDir:
// its own (the two sync-mode entries of a table included), and new in each
// run (PrepareRun empties SuiteArtifactsDir first).
func SpecArtifactsDir(ctx context.Context) string { return FrontEndOf(ctx).ArtifactsDir() }

// specArtifactsDir is SpecArtifactsDir of a Ginkgo spec.
func specArtifactsDir(r types.SpecReport) string {
	return filepath.Join(SuiteArtifactsDir(), specDirName(r))
}

// Lengths in a spec's directory name: the name is kept whole up to
// maxSpecDirText, else its head and tail (the tail says the sync mode);
// the hash of the full name and the spec's location makes it unique.
const (
	maxSpecDirText = 100
	specDirHead    = 64
	specDirTail    = 32
)

// specDirName is the directory name of spec r: its readable name, cut to
// head and tail when long, and a short hash of its full name and location,
// well within a file name's 255 bytes.
func specDirName(r types.SpecReport) string {
	full := strings.Join(append(slices.Clone(r.ContainerHierarchyTexts), r.LeafNodeText), "_")
	return dirName(full, full+"\x00"+r.LeafNodeLocation.String())
}

// dirName is name made safe for a path, cut to head and tail when long,
// with a short hash of what makes it unique.
func dirName(name, unique string) string {
	name = strings.Trim(report.SafeName(name), "-")
	if len(name) > maxSpecDirText {
		name = name[:specDirHead] + "--" + name[len(name)-specDirTail:]
	}
	sum := sha256.Sum256([]byte(unique))
	return name + "-" + hex.EncodeToString(sum[:4])
}
