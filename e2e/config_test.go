package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/informer-conformance/informer-conformance/cluster"
)

// setenv sets an environment variable for the test and has the run's
// configuration read again, now and when the test ends.
func setenv(t *testing.T, name, value string) {
	t.Helper()
	t.Setenv(name, value)
	rereadConfig()
	t.Cleanup(rereadConfig)
}

// allVarNames are the variables of the harness and of every registered
// backend.
func allVarNames() []string {
	vars := slices.Clone(HarnessVars)
	for _, n := range cluster.BackendNames() {
		b, _ := cluster.LookupBackend(n)
		vars = append(vars, b.Vars...)
	}
	return cluster.VarNames(vars...)
}

// TestVarsDocumented: every variable the harness and the backends read
// has a row in docs/running.md's environment table, so the docs list what
// a run reads; a variable added without its row fails here.
func TestVarsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "running.md"))
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
	names := allVarNames()
	if len(names) < 10 {
		t.Fatalf("only %d variables: %v", len(names), names)
	}
	for _, name := range names {
		if !documented[name] {
			t.Errorf("%s is read by the run but has no row in docs/running.md's Environment table", name)
		}
	}
}
