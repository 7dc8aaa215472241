package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// EnvRun opts a test binary into running the specs: RunSpecs runs them
// when INFORMER_CONFORMANCE=1, and otherwise skips its test with one line
// saying how to run them, so that a repository's plain `go test ./...`
// neither builds kube-apiserver nor runs the specs one at a time past go
// test's 10-minute timeout.
const EnvRun = "INFORMER_CONFORMANCE"

// RunSpecs runs the Ginkgo specs of the test binary (the conformance specs
// a downstream test package imports, the suites of this repository) when
// INFORMER_CONFORMANCE=1 (EnvRun): it registers Gomega's fail handler and
// calls ginkgo.RunSpecs(t, description, args...). A downstream's test file
// calls it instead of the RegisterFailHandler and RunSpecs pair:
//
//	func TestInformerConformance(t *testing.T) {
//		e2e.RunSpecs(t, "conformance")
//	}
//
// One of the package's _test.go files must import ginkgo (any test file
// using its DSL does; else a blank import): the ginkgo CLI runs a package
// as a Ginkgo suite, in parallel processes and with its flags, only then
// (ginkgo/internal/test_suite.go filesHaveGinkgoSuite greps for it).
//
// Without the variable (or with INFORMER_CONFORMANCE=0) the test skips
// with one line naming the command that runs the specs in parallel Ginkgo
// processes (go test -v prints it; go test ./... prints only "ok"):
//
//	informer-conformance specs not run: set INFORMER_CONFORMANCE=1 (INFORMER_CONFORMANCE=1 go run github.com/onsi/ginkgo/v2/ginkgo -procs=4 ./conformance)
//
// Any other value fails the test, saying so; under go test -short the
// specs are skipped whatever the variable says (they need clusters).
//
// A run whose label filter, focus or skip selects no spec fails, on every
// process count and in a dry run too, naming the filter and the labels the
// suite's specs have (a filter naming a label of another suite would
// otherwise run nothing and pass); INFORMER_CONFORMANCE_ALLOW_EMPTY=true
// lets it pass, for a caller running several suites with one filter that
// judges the run as a whole. A run whose selected specs all skip (a
// capability the backend lacks) is not failed here: each says why.
//
// RunSpecs also records its caller's directory, the test package's: the
// client-go version of the report and of the version-dependent checks is
// read from that package's module (ClientGoInUse), wherever the test
// binary runs.
func RunSpecs(t *testing.T, description string, args ...any) bool {
	t.Helper()
	_, file, _, _ := runtime.Caller(1)
	rc, cerr := Config()
	skip, err := optedOut(rc.Env.Get(EnvRun), testing.Short(), packageArg(file))
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	if cerr != nil {
		t.Fatal(cerr) // before any spec: a bad value fails the run once, saying what it means
	}
	recordTestPackage(file)
	gomega.RegisterFailHandler(failWithVerdict)
	// Registered here, before Ginkgo builds the tree, so that every suite
	// run through RunSpecs has it, a downstream's too.
	ginkgo.ReportAfterSuite("informer-conformance: the selection", checkSelection)
	return ginkgo.RunSpecs(t, description, args...)
}

// checkSelection fails the run when its selection is empty
// (emptySelection), unless EnvAllowEmpty says the caller judges the run.
func checkSelection(r ginkgo.Report) {
	rc, _ := Config()
	if rc.Env.Flag(EnvAllowEmpty) {
		return
	}
	if err := emptySelection(r); err != nil {
		ginkgo.Fail(err.Error())
	}
}

// optedOut is why RunSpecs skips ("" = it runs the specs), from the value
// of INFORMER_CONFORMANCE, go test -short and the package's path for the
// command to print; an error for a value other than "", "0" and "1".
func optedOut(value string, short bool, pkg string) (string, error) {
	switch value {
	case "", "0":
		return fmt.Sprintf("informer-conformance specs not run: set %[1]s=1 (%[1]s=1 go run github.com/onsi/ginkgo/v2/ginkgo -procs=4 %[2]s)", EnvRun, pkg), nil
	case "1":
		if short {
			return "-short: the informer-conformance specs need clusters", nil
		}
		return "", nil
	}
	return "", fmt.Errorf("%s=%q: set it to 1 to run the informer-conformance specs, or leave it unset (or 0) to skip them", EnvRun, value)
}

// packageArg is the test package's directory as ginkgo takes it from the
// root of its module ("./conformance"; "." at the root), from the path of
// one of its files; "." when that path does not tell (-trimpath).
func packageArg(file string) string {
	if !filepath.IsAbs(file) {
		return "."
	}
	dir := filepath.Dir(file)
	for root := dir; ; {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			rel, err := filepath.Rel(root, dir)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "."
		}
		root = parent
	}
}
