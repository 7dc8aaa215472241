// Package smoke holds the first end-to-end spec: the control plane is real,
// the informer is built the way controllers build it, and every instrument
// (fault proxy, probe, classifier, checks, reports) is in the path. The
// scenarios (every one in docs/scenarios.md) are in suites/conformance.
package smoke

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	// Every backend, registered by its own package: $INFORMER_CONFORMANCE_BACKEND selects one.
	_ "github.com/informer-conformance/informer-conformance/cluster/backends"
	"github.com/informer-conformance/informer-conformance/e2e"
)

// TestSmoke runs the smoke spec when INFORMER_CONFORMANCE=1 (the Makefile
// sets it).
func TestSmoke(t *testing.T) {
	e2e.RunSpecs(t, "smoke")
}

// The backend is checked and its binaries built (or found in the cache)
// once, on process 1, before any spec: a bad INFORMER_CONFORMANCE_BACKEND is
// one failure, not one per spec.
var _ = SynchronizedBeforeSuite(func(ctx SpecContext) {
	Expect(e2e.EnsureBinaries(ctx)).To(Succeed())
}, func() {}, NodeTimeout(30*time.Minute))

// Clusters a backend shares between the specs of a process are closed once
// they are done.
var _ = AfterSuite(func(ctx SpecContext) {
	Expect(e2e.CloseSharedClusters(ctx)).To(Succeed())
}, NodeTimeout(5*time.Minute))

var _ = ReportBeforeSuite(func(r Report) {
	if err := e2e.PrepareRun(r); err != nil {
		Fail(err.Error())
	}
})

var _ = ReportAfterSuite("informer report", func(r Report) {
	Expect(e2e.WriteReports(r)).To(Succeed())
})
