package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOptedOut: only INFORMER_CONFORMANCE=1 runs the specs; unset or 0
// skips with the one line naming the command; -short skips whatever the
// variable says; any other value is an error, not a silent skip.
func TestOptedOut(t *testing.T) {
	for _, tc := range []struct {
		value   string
		short   bool
		skip    string // "" = runs
		wantErr bool
	}{
		{value: "", skip: "informer-conformance specs not run: set INFORMER_CONFORMANCE=1 (INFORMER_CONFORMANCE=1 go run github.com/onsi/ginkgo/v2/ginkgo -procs=4 ./conformance)"},
		{value: "0", skip: "informer-conformance specs not run: set INFORMER_CONFORMANCE=1"},
		{value: "", short: true, skip: "informer-conformance specs not run: set INFORMER_CONFORMANCE=1"},
		{value: "1"},
		{value: "1", short: true, skip: "-short"},
		{value: "true", wantErr: true},
		{value: "yes", short: true, wantErr: true},
	} {
		skip, err := optedOut(tc.value, tc.short, "./conformance")
		if (err != nil) != tc.wantErr || tc.skip == "" && skip != "" || !strings.HasPrefix(skip, tc.skip) {
			t.Errorf("INFORMER_CONFORMANCE=%q short=%t: skip %q, error %v; want skip %q, error %t", tc.value, tc.short, skip, err, tc.skip, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "set it to 1") {
			t.Errorf("INFORMER_CONFORMANCE=%q: the error %q does not say what to set", tc.value, err)
		}
		if strings.Contains(skip, "\n") {
			t.Errorf("the skip reason is more than one line: %q", skip)
		}
	}
}

// TestPackageArg: the command in the skip line names the test package
// from the root of its module.
func TestPackageArg(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{"test/conformance", "nomodule"} {
		if err := os.MkdirAll(filepath.Join(root, "mod", dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "mod", "go.mod"), []byte("module example.com/m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		filepath.Join(root, "mod", "test", "conformance", "c_test.go"): "./test/conformance",
		filepath.Join(root, "mod", "c_test.go"):                        ".",
		"example.com/m/test/conformance/c_test.go":                     ".", // -trimpath
	} {
		if got := packageArg(file); got != want {
			t.Errorf("packageArg(%q) = %q, want %q", file, got, want)
		}
	}
}

// TestRunSpecsCallersImportGinkgo: every package of this repository whose
// tests call e2e.RunSpecs imports ginkgo in a _test.go file, as the ginkgo
// CLI's test for a Ginkgo suite wants (its regular expression, from
// ginkgo/internal/test_suite.go filesHaveGinkgoSuite); without it `ginkgo
// -procs=4` runs the package as plain go test: one process, its label
// filter ignored, every spec run.
func TestRunSpecsCallersImportGinkgo(t *testing.T) {
	reGinkgo := regexp.MustCompile(`package ginkgo|\/ginkgo"|\/ginkgo\/v2"|\/ginkgo\/v2/dsl/`)
	callers, importers := map[string]bool{}, map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "_artifacts") && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		callers[dir] = callers[dir] || strings.Contains(string(data), "e2e.RunSpecs(t,")
		importers[dir] = importers[dir] || reGinkgo.Match(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for dir := range callers {
		if !callers[dir] {
			continue
		}
		n++
		if !importers[dir] {
			t.Errorf("%s: its tests call e2e.RunSpecs but no _test.go file imports ginkgo: the ginkgo CLI would run it as a plain go test package", dir)
		}
	}
	if n < 4 { // suites/conformance, suites/smoke, fixtures/downstream, integrations/controllerruntime
		t.Errorf("found %d packages calling e2e.RunSpecs, want at least 4: the walk missed them", n)
	}
}
