// Package conformance holds the scenario specs of ../shared/docs/scenarios.md
// (S1-S12), each labelled with its scenario, on the local backend, with the
// negative controls that prove each assertion family can fail.
package conformance

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
)

func TestConformance(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "conformance")
}

var _ = ReportAfterSuite("informer report", func(r Report) {
	Expect(e2e.WriteReports(r)).To(Succeed())
})

// NegativeControl labels a spec that runs a scenario against a deliberately
// broken client and passes only if the scenario's assertions fail.
var NegativeControl = Label("negative-control")
