// Package smoke holds the first end-to-end specs on the local backend: the
// control plane is real, the informer is built the way controllers build it,
// and every instrument (fault proxy, probe, classifier, checks, reports) is
// in the path. The scenario suites (S1-S12) come next to it.
package smoke

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
)

func TestSmoke(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "smoke")
}

var _ = ReportAfterSuite("informer report", func(r Report) {
	Expect(e2e.WriteReports(r)).To(Succeed())
})
