package conformance

import (
	"testing"

	"github.com/informer-conformance/informer-conformance/e2e"
)

// TestConformance runs the specs this package registers, as a downstream
// module does after importing it (library mode; fixtures/downstream), when
// INFORMER_CONFORMANCE=1 (the Makefile sets it). It is an in-package test
// so that `ginkgo labels` reads the specs' labels.
func TestConformance(t *testing.T) {
	e2e.RunSpecs(t, "conformance")
}
