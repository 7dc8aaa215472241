package e2e

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/report"
)

// FrontEnd is the test framework a spec runs under: each spec has its own,
// carried by its context (WithFrontEnd) and kept by its Env. The
// instruments (StartEnv, StartProbe, the convergence checks, the reports)
// and the scenarios (package scenarios) reach the framework only through
// it, so one scenario implementation serves every front end: Ginkgo, the
// suites' and the default (a context that carries none), a plain
// testing.T, which integrations/e2eframework uses to run the scenarios as
// e2e-framework features (TestingRun), or a third party's.
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

// HarnessCarrier is a front end that brings its own Harness (a run value
// of its own: its configuration's environment, its downstream's hooks):
// the Envs of its specs take their hooks from it. A front end that is not
// one runs on the process's harness (SetHooks, the environment).
type HarnessCarrier interface {
	FrontEnd
	Harness() *Harness
}

// harnessOf is fe's harness: its own (HarnessCarrier), else the process's.
func harnessOf(fe FrontEnd) *Harness {
	if hc, ok := fe.(HarnessCarrier); ok {
		if h := hc.Harness(); h != nil {
			return h
		}
	}
	return theHarness
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

// frontEndKey keys the front end a spec's context carries.
type frontEndKey struct{}

// WithFrontEnd is ctx carrying fe: the spec's front end. An adapter (the
// Ginkgo suites' table, a TestingRun, a downstream's own) gives each spec's
// context its front end before it calls the scenario; StartEnv keeps it in
// the spec's Env, and every instrument and step reached with the context
// (or with a context derived from it, a clean-up's included) reports to it.
// Nothing of the spec is kept in the process: two specs with their own
// contexts have their own front ends.
func WithFrontEnd(ctx context.Context, fe FrontEnd) context.Context {
	return context.WithValue(ctx, frontEndKey{}, fe)
}

// FrontEndOf is the front end of the spec ctx belongs to (WithFrontEnd's),
// Ginkgo's when ctx carries none (a Ginkgo spec's own SpecContext).
func FrontEndOf(ctx context.Context) FrontEnd {
	if fe, ok := ctx.Value(frontEndKey{}).(FrontEnd); ok && fe != nil {
		return fe
	}
	return ginkgoFrontEnd{}
}

// By names the step the spec of ctx is at (ginkgo.By under Ginkgo).
func By(ctx context.Context, text string) { FrontEndOf(ctx).By(text) }

// AddReportEntry attaches a value to the report of the spec of ctx.
func AddReportEntry(ctx context.Context, name string, value any) {
	FrontEndOf(ctx).AddReportEntry(name, value)
}

// DeferCleanup runs f when the spec of ctx ends, with a context bounded by
// timeout (none if 0) that carries the spec's front end; an error f
// returns fails the spec.
func DeferCleanup(ctx context.Context, timeout time.Duration, f func(ctx context.Context) error) {
	deferCleanup(FrontEndOf(ctx), timeout, f)
}

// deferCleanup is DeferCleanup on fe: f's context carries fe.
func deferCleanup(fe FrontEnd, timeout time.Duration, f func(ctx context.Context) error) {
	fe.DeferCleanup(timeout, func(ctx context.Context) error { return f(WithFrontEnd(ctx, fe)) })
}

// Defer runs f when the spec of ctx ends (DeferCleanup of a step that
// cannot fail: an undo, a Stop).
func Defer(ctx context.Context, f func()) { deferOn(FrontEndOf(ctx), f) }

// deferOn is Defer on fe.
func deferOn(fe FrontEnd, f func()) {
	fe.DeferCleanup(0, func(context.Context) error { f(); return nil })
}

// Logf writes a line to the log of the spec of ctx.
func Logf(ctx context.Context, format string, args ...any) { logf(FrontEndOf(ctx), format, args...) }

// logf is Logf on fe.
func logf(fe FrontEnd, format string, args ...any) { fmt.Fprintf(fe.Writer(), format+"\n", args...) }

// Setenv sets an environment variable for the rest of the spec of ctx
// (testing.TB's Setenv: restored after it). The environment is the
// process's: the spec holds the process's state for it (holdProcess).
func Setenv(ctx context.Context, key, value string) {
	fe := FrontEndOf(ctx)
	holdProcess(fe, "the environment variable "+key)
	fe.TB().Setenv(key, value)
}

// TB is the spec of ctx as a testing.TB (ginkgo.GinkgoTB under Ginkgo), for
// helpers that take one: TempDir, a library's test helper.
func TB(ctx context.Context) testing.TB { return FrontEndOf(ctx).TB() }

// Fail fails the spec of ctx and ends it.
func Fail(ctx context.Context, message string) { FrontEndOf(ctx).Fail(message) }

// Skip ends the spec of ctx as skipped, saying why.
func Skip(ctx context.Context, reason string) { FrontEndOf(ctx).Skip(reason) }

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
