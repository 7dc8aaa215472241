package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/report"
)

// pathEnv are the environment variables naming files or directories the
// specs use: the artifacts root (report.EnvArtifacts, the harness's own:
// it gives each backend start a directory under it, cluster.Harness, and
// no backend reads the variable) and what each registered backend reads
// (cluster.Backend's PathEnv). go test and ginkgo run each suite in its
// package directory, so a relative path there would resolve against
// suites/<pkg>/, not where the user typed the command (which a test
// process cannot know).
func pathEnv() []string {
	names := []string{report.EnvArtifacts}
	for _, n := range cluster.BackendNames() {
		b, _ := cluster.LookupBackend(n)
		for _, v := range b.PathEnv {
			if !slices.Contains(names, v) {
				names = append(names, v)
			}
		}
	}
	return names
}

// CheckPathEnv says which of the path variables the specs read hold a
// relative path (KUBECONFIG may list several files).
func CheckPathEnv() error {
	var bad []string
	for _, name := range pathEnv() {
		for _, p := range filepath.SplitList(os.Getenv(name)) {
			if p != "" && !filepath.IsAbs(p) {
				bad = append(bad, fmt.Sprintf("%s=%s", name, p))
			}
		}
	}
	if len(bad) == 0 {
		return nil
	}
	wd, _ := os.Getwd()
	return fmt.Errorf("relative path in %s: go test and ginkgo run each suite in its package directory (here %s), "+
		"so the path would not resolve against the directory the command was typed in; give an absolute path "+
		"(make e2e makes KUBECONFIG, ARTIFACTS and INFORMER_CONFORMANCE_ASSETS absolute itself)", strings.Join(bad, ", "), wd)
}

// PrepareRun readies a suite's run before any spec: it checks the path
// variables (CheckPathEnv) and empties what earlier runs of the suite left
// in report.ArtifactsRoot (SuiteArtifactsDir and the suite's informer reports), so
// each spec's directory holds that spec's files of this run only. Suites
// call it from ReportBeforeSuite, which Ginkgo runs on process 1 while the
// other processes wait; a dry run changes nothing.
func PrepareRun(r ginkgo.Report) error {
	if r.SuiteConfig.DryRun {
		return nil
	}
	if err := CheckPathEnv(); err != nil {
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
