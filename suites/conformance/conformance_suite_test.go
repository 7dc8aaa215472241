package conformance

import (
	"testing"

	// The ginkgo CLI runs a package as a Ginkgo suite (parallel processes,
	// its flags passed on) only when one of its _test.go files imports
	// ginkgo (ginkgo/internal/test_suite.go filesHaveGinkgoSuite).
	_ "github.com/onsi/ginkgo/v2"

	"github.com/informer-conformance/informer-conformance/e2e"
)

// TestConformance runs the specs this package registers, as a downstream
// module does after importing it (library mode; fixtures/downstream), when
// INFORMER_CONFORMANCE=1 (the Makefile sets it). It is an in-package test
// so that `ginkgo labels` reads the specs' labels.
func TestConformance(t *testing.T) {
	e2e.RunSpecs(t, "conformance")
}
