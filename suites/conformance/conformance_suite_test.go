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

// Decorations shared by the specs.
var (
	// NegativeControl labels a spec that runs a scenario against a
	// deliberately broken client and passes only if the scenario's
	// assertions fail.
	NegativeControl = Label("negative-control")
	// Disruptive labels a spec that breaks the control plane itself
	// (restarts, compaction, restore), not only the client's connection.
	Disruptive = Label("disruptive")
	// Slow labels a spec that takes minutes; `LABEL_FILTER='!slow'` skips it.
	Slow = Label("slow")
)

// Capability labels: what a spec needs of the backend beyond a kubeconfig.
var (
	NeedsAPIServerRestart = Label("capability:apiserver-restart")
	NeedsEtcdCompaction   = Label("capability:etcd-compaction")
	NeedsEtcdSnapshot     = Label("capability:etcd-snapshot")
	NeedsHA               = Label("capability:ha")
)
