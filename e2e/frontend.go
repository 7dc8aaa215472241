package e2e

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/report"
)

// FrontEnd is the test framework a spec runs under. The instruments (StartEnv,
// StartProbe, the convergence checks, the reports) and the scenarios
// (package scenarios) reach the framework only through it, so one scenario
// implementation serves two front ends: Ginkgo, the suites' and the default,
// and a plain testing.T, which integrations/e2eframework uses to run the
// scenarios as e2e-framework features (NewTestingFrontEnd).
//
// Assertions are Gomega's either way: under Ginkgo its fail handler is
// Ginkgo's, under a testing.T the front end registers t as Gomega's.
type FrontEnd interface {
	// Fail fails the current spec and ends it.
	Fail(message string)
	// Skip ends the current spec as skipped, saying why.
	Skip(reason string)
	// Failed says whether the current spec has failed so far.
	Failed() bool
	// DeferCleanup runs f when the spec ends (the last registered first)
	// with a context bounded by timeout (none if 0); an error fails the
	// spec.
	DeferCleanup(timeout time.Duration, f func(ctx context.Context) error)
	// AddReportEntry attaches a value to the spec's report.
	AddReportEntry(name string, value any)
	// By names the step the spec is at.
	By(text string)
	// Writer is the spec's log.
	Writer() io.Writer
	// ArtifactsDir is the spec's own directory for its records and logs.
	ArtifactsDir() string
	// TB is the spec as a testing.TB, for helpers that take one (client-go's
	// feature-gate override, Setenv).
	TB() testing.TB
	// Cluster gives the spec a cluster fit for spec, or skips it saying
	// why; shared says the cluster outlives the spec (the spec then works
	// in a namespace of its own). It times its phases into rec. A front
	// end whose specs share a cluster of their caller's returns
	// UseSharedCluster's.
	Cluster(ctx context.Context, spec cluster.Spec, rec SpecRecord) (c cluster.Cluster, shared bool)
}

// SpecRecord is what a front end's Cluster records in the spec's report:
// the time of its phases (package report/timing's names) and where its
// cluster came from (report.Spec's Time and ClusterFrom).
type SpecRecord interface {
	// Phase starts timing a phase; the func it returns ends it.
	Phase(name string) (end func())
	// ClusterFrom records where the spec's own cluster came from.
	ClusterFrom(how string)
}

var (
	frontEndMu  sync.Mutex
	frontEndSet FrontEnd // nil: Ginkgo
	frontEndUse sync.Mutex
)

// current is the front end of the running spec.
func current() FrontEnd {
	frontEndMu.Lock()
	defer frontEndMu.Unlock()
	if frontEndSet == nil {
		return ginkgoFrontEnd{}
	}
	return frontEndSet
}

// UseFrontEnd makes fe the front end of the instruments until the returned
// function is called. Specs share process-wide state (client-go's
// feature gates, the environment), so one spec runs at a time per process:
// a second UseFrontEnd before the first is undone fails.
func UseFrontEnd(fe FrontEnd) (undo func(), err error) {
	if !frontEndUse.TryLock() {
		return nil, fmt.Errorf("e2e.UseFrontEnd: another scenario is running in this process; " +
			"informer-conformance scenarios run one at a time per process (they share client-go's feature gates and the environment)")
	}
	frontEndMu.Lock()
	frontEndSet = fe
	frontEndMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			frontEndMu.Lock()
			frontEndSet = nil
			frontEndMu.Unlock()
			frontEndUse.Unlock()
		})
	}, nil
}

// By names the step the current spec is at (ginkgo.By under Ginkgo).
func By(text string) { current().By(text) }

// AddReportEntry attaches a value to the current spec's report.
func AddReportEntry(name string, value any) { current().AddReportEntry(name, value) }

// DeferCleanup runs f when the current spec ends, with a context bounded by
// timeout (none if 0); an error f returns fails the spec.
func DeferCleanup(timeout time.Duration, f func(ctx context.Context) error) {
	current().DeferCleanup(timeout, f)
}

// Defer runs f when the current spec ends (DeferCleanup of a step that
// cannot fail: an undo, a Stop).
func Defer(f func()) {
	current().DeferCleanup(0, func(context.Context) error { f(); return nil })
}

// Logf writes a line to the current spec's log.
func Logf(format string, args ...any) {
	fmt.Fprintf(current().Writer(), format+"\n", args...)
}

// Setenv sets an environment variable for the rest of the current spec.
func Setenv(key, value string) { current().TB().Setenv(key, value) }

// TB is the current spec as a testing.TB (ginkgo.GinkgoTB under Ginkgo),
// for helpers that take one: client-go's feature-gate override, TempDir.
func TB() testing.TB { return current().TB() }

// Fail fails the current spec and ends it.
func Fail(message string) { current().Fail(message) }

// Skip ends the current spec as skipped, saying why.
func Skip(reason string) { current().Skip(reason) }

// ginkgoFrontEnd is Ginkgo's: the suites' specs.
type ginkgoFrontEnd struct{}

func (ginkgoFrontEnd) Fail(message string) {
	ginkgo.Fail(withVerdict(message, ginkgo.CurrentSpecReport()), 2)
}
func (ginkgoFrontEnd) Skip(reason string) { ginkgo.Skip(reason, 2) }
func (ginkgoFrontEnd) Failed() bool       { return ginkgo.CurrentSpecReport().Failed() }
func (ginkgoFrontEnd) DeferCleanup(timeout time.Duration, f func(ctx context.Context) error) {
	args := []any{func(ctx ginkgo.SpecContext) error { return f(ctx) }, ginkgo.Offset(2)}
	if timeout > 0 {
		args = append(args, ginkgo.NodeTimeout(timeout))
	}
	ginkgo.DeferCleanup(args...)
}
func (ginkgoFrontEnd) AddReportEntry(name string, value any) {
	if _, ok := value.(report.Spec); ok {
		// Drawn and summed by the reports; on the console (its String:
		// the numbers per informer) where a failure is read.
		ginkgo.AddReportEntry(name, value, ginkgo.Offset(2), ginkgo.ReportEntryVisibilityFailureOrVerbose)
		return
	}
	ginkgo.AddReportEntry(name, value, ginkgo.Offset(2))
}
func (ginkgoFrontEnd) By(text string)       { ginkgo.By(text) }
func (ginkgoFrontEnd) Writer() io.Writer    { return ginkgo.GinkgoWriter }
func (ginkgoFrontEnd) ArtifactsDir() string { return specArtifactsDir(ginkgo.CurrentSpecReport()) }
func (ginkgoFrontEnd) TB() testing.TB       { return ginkgo.GinkgoTB() }
func (ginkgoFrontEnd) Cluster(ctx context.Context, spec cluster.Spec, rec SpecRecord) (cluster.Cluster, bool) {
	_, c, shared := startCluster(ctx, spec, rec)
	return c, shared
}
