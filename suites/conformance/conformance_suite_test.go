package conformance

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// TestConformance runs the specs this package registers, as a downstream
// module does after importing it (library mode; fixtures/downstream). It is
// an in-package test so that `ginkgo labels` reads the specs' labels.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the specs need clusters (make e2e)")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "conformance")
}
