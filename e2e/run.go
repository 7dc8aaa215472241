package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/onsi/ginkgo/v2"

	"github.com/informer-conformance/informer-conformance/report"
)

// PrepareRun readies a suite's run before any spec: it reads the run's
// configuration (Config: a bad value, a relative path among them, fails
// the run here) and empties what earlier runs of the suite left
// in report.ArtifactsRoot (SuiteArtifactsDir and the suite's informer reports), so
// each spec's directory holds that spec's files of this run only. Suites
// call it from ReportBeforeSuite, which Ginkgo runs on process 1 while the
// other processes wait; a dry run changes nothing.
func PrepareRun(r ginkgo.Report) error {
	if r.SuiteConfig.DryRun {
		return nil
	}
	if _, err := Config(); err != nil {
		return err
	}
	if err := removeOldLayout(report.ArtifactsRoot()); err != nil {
		return err
	}
	return emptyEarlierRun(SuiteArtifactsDir(), r.SuiteDescription)
}

// emptyEarlierRun removes a suite's artifacts directory and its informer
// reports, as an earlier run left them.
func emptyEarlierRun(dir, suite string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("empty the suite's artifacts of earlier runs: %w", err)
	}
	for _, p := range reportFiles(suite).All() {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove the report of an earlier run: %w", err)
		}
	}
	return nil
}

// oldProcessDir names a directory of the layout before per-suite
// directories: <root>/p<N>/<spec>, one per Ginkgo process, shared by every
// suite and never emptied.
var oldProcessDir = regexp.MustCompile(`^p[0-9]+$`)

// removeOldLayout removes the p<N> directories earlier versions of the suite
// left in root, so that a root holds only this layout's directories. Root
// may be a directory other tools write to too (CI's $ARTIFACTS): a p<N> is
// removed only if it holds what that layout wrote, a backend-<name>
// directory or a spec directory with a probe-*.json record.
func removeOldLayout(root string) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("read the artifacts directory: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || !oldProcessDir.MatchString(e.Name()) {
			continue
		}
		dir := filepath.Join(root, e.Name())
		backends, _ := filepath.Glob(filepath.Join(dir, "backend-*"))
		probes, _ := filepath.Glob(filepath.Join(dir, "*", "probe-*.json"))
		if len(backends)+len(probes) == 0 {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove %s, left by an earlier version of the suite: %w", dir, err)
		}
	}
	return nil
}
