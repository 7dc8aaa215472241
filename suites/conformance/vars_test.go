package conformance

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// TestVarsDocumented: every variable the harness, the backends and the
// scenarios read has a row in docs/running.md's environment table, so the docs list what
// a run reads; a variable added without its row fails here.
func TestVarsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(packageDir(), "..", "..", "docs", "running.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "\n## Environment\n")
	if !ok {
		t.Fatal("docs/running.md has no Environment section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	documented := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range regexp.MustCompile("`([A-Z0-9_]+)`").FindAllStringSubmatch(cells[1], -1) {
			documented[m[1]] = true
		}
	}
	vars := slices.Clone(e2e.HarnessVars)
	for _, n := range cluster.BackendNames() {
		b, _ := cluster.LookupBackend(n)
		vars = append(vars, b.Vars...)
	}
	for _, s := range scenarios.All() {
		vars = append(vars, s.Vars...)
	}
	names := cluster.VarNames(vars...)
	if len(names) < 10 {
		t.Fatalf("only %d variables: %v", len(names), names)
	}
	for _, name := range names {
		if !documented[name] {
			t.Errorf("%s is read by the run but has no row in docs/running.md's Environment table", name)
		}
	}
}
