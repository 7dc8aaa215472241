// Package conformance holds the scenario specs of docs/scenarios.md
// (S1-S34), each labelled with its scenario and with what it needs of the
// backend (capability labels), with the negative controls that prove each
// assertion family can fail.
//
// The specs register themselves when the package is imported, so a
// downstream module runs them from its own test package, compiled against
// its own client-go (library mode):
//
//	import (
//		"testing"
//
//		_ "github.com/onsi/ginkgo/v2" // the ginkgo CLI runs the package as a Ginkgo suite
//
//		"github.com/informer-conformance/informer-conformance/e2e"
//		_ "github.com/informer-conformance/informer-conformance/suites/conformance"
//	)
//
//	func TestInformerConformance(t *testing.T) {
//		e2e.SetHooks(e2e.Hooks{Config: withOurTransport}) // optional
//		e2e.RunSpecs(t, "conformance")
//	}
//
// e2e.RunSpecs runs the specs only when INFORMER_CONFORMANCE=1: the
// repository's plain `go test ./...` skips them with one line saying how
// to run them (go test -v shows it), and they run in parallel Ginkgo
// processes with
//
//	INFORMER_CONFORMANCE=1 go run github.com/onsi/ginkgo/v2/ginkgo -procs=4 ./conformance
//
// (or `INFORMER_CONFORMANCE=1 go test ./conformance`, one process). The
// report names the client-go the package was compiled with, a replaced one
// (a fork, a local directory) with its replacement (e2e.ClientGoInUse).
//
// See fixtures/downstream for a complete module.
package conformance

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	// The backends a downstream gets with the specs, each registered by its
	// own package ($INFORMER_CONFORMANCE_BACKEND selects one): local (the
	// default) and existing. The kind backend is imported where it is
	// wanted (this repository's test package, backends_test.go; a
	// downstream's own test file), so that kind's library enters no other
	// module's graph.
	_ "github.com/informer-conformance/informer-conformance/cluster/existing"
	_ "github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/e2e"
)

// BinariesTimeout bounds building kube-apiserver and etcd from source on the
// first run (about 5 minutes on 2 cores; instant once cached).
const BinariesTimeout = 30 * time.Minute

// CloseTimeout bounds closing the clusters shared by a process's specs.
const CloseTimeout = 5 * time.Minute

// The binaries are built (or found in the cache) once, on process 1, before
// any spec starts its cluster: a downstream `go test` needs no make step.
var _ = SynchronizedBeforeSuite(func(ctx SpecContext) {
	Expect(e2e.EnsureBinaries(ctx)).To(Succeed())
}, func() {}, NodeTimeout(BinariesTimeout))

// Clusters a backend shares between the specs of a process (existing,
// kind) are closed once they are done. Registered here, not in the test
// file, so a downstream module importing the specs closes them too.
var _ = AfterSuite(func(ctx SpecContext) {
	Expect(e2e.CloseSharedClusters(ctx)).To(Succeed())
}, NodeTimeout(CloseTimeout))

// The specs not labelled Disruptive break only the client's side: on the
// local backend they share a cluster per Ginkgo process and cluster.Spec,
// each in a namespace of its own (the AfterSuite above closes them);
// Disruptive ones start their own (INFORMER_CONFORMANCE_CLUSTER_PER_SPEC=true:
// all do).
func init() { e2e.ShareClientSideClusters() }

// A spec constrained to client-go or kube-apiserver versions (e2e.ClientGo,
// e2e.KubeAPIServer) skips, saying why, on the others.
var _ = BeforeEach(func() { e2e.RequireVersions() })

// Before any spec: relative paths in the environment fail the run, and what
// earlier runs of the suite left in the artifacts directory goes.
var _ = ReportBeforeSuite(func(r Report) {
	if err := e2e.PrepareRun(r); err != nil {
		Fail(err.Error())
	}
})

var _ = ReportAfterSuite("informer report", func(r Report) {
	Expect(e2e.WriteReports(r)).To(Succeed())
})

// Decorations shared by the specs.
var (
	// NegativeControl labels a spec that runs a scenario against a
	// deliberately broken client and passes only if the scenario's
	// assertions fail.
	NegativeControl = Label(e2e.LabelNegativeControl)
	// Disruptive labels a spec that breaks the control plane itself
	// (restarts, compaction, restore), not only the client's connection.
	Disruptive = Label("disruptive")
	// Sample labels one spec per scenario (a table's, in both sync modes:
	// `sample && !sync:list` takes one): what the kind subset CI runs
	// (make e2e-kind) covers every scenario with.
	Sample = Label("sample")
	// Slow labels a spec that takes minutes; `LABEL_FILTER='!slow'` skips it.
	Slow = Label("slow")
	// Long labels a spec that takes five minutes or more because client-go
	// waits that long by design (a fixed period no option shortens): the
	// default `make e2e` leaves it out (LABEL_FILTER='!long'), CI runs it
	// in a step of its own (`make e2e-long`).
	Long = Label("long")
)

// Capability labels: what a spec needs of the backend beyond a kubeconfig
// (e2e.Capability: the name, the check and the label in one definition).
var (
	NeedsAPIServerRestart = e2e.CapabilityAPIServerRestart.Label()
	NeedsEtcdCompaction   = e2e.CapabilityEtcdCompaction.Label()
	NeedsEtcdSnapshot     = e2e.CapabilityEtcdSnapshot.Label()
	NeedsHA               = e2e.CapabilityHA.Label()
	NeedsCertRotation     = e2e.CapabilityCertRotation.Label()
	NeedsAPIServerUpgrade = e2e.CapabilityAPIServerUpgrade.Label()
)
