package e2e

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/report"
)

// TestingRun runs scenarios as specs of plain testing.T tests (the front end
// of integrations/e2eframework's features) on a cluster that outlives them,
// and writes the same informer report as a Ginkgo run (report.FilesIn under
// report.ArtifactsRoot) once its specs are done. Its specs run one at a time
// per process: each holds the process's state (Gomega's fail handler,
// client-go's gates) while it runs.
type TestingRun struct {
	// Suite names the run in its report and its artifacts directory.
	Suite string

	mu       sync.Mutex
	prepared bool
	version  string
	specs    []report.Spec
}

// NewTestingRun starts a run named suite.
func NewTestingRun(suite string) *TestingRun { return &TestingRun{Suite: suite} }

// Dir is the run's artifacts directory, report.ArtifactsRoot()/<suite>,
// emptied before its first spec.
func (r *TestingRun) Dir() string {
	return filepath.Join(report.ArtifactsRoot(), report.SafeName(r.Suite))
}

// Spec runs body as the spec name of t on c, a cluster the run's specs share
// (each works in a namespace of its own; a cluster.Recoverer recovers
// before it). The instruments report to t: a failed assertion or instrument
// fails t, a missing capability skips it; failure messages are the Ginkgo
// run's. The spec's entries go to the run's report.
func (r *TestingRun) Spec(ctx context.Context, t testing.TB, c cluster.Cluster, name string, body func(ctx context.Context)) {
	t.Helper()
	if c == nil {
		t.Fatalf("informer-conformance %s: no cluster (was the environment's cluster created?)", name)
	}
	if err := r.prepare(c); err != nil {
		t.Fatal(err)
	}
	fe := &testingFrontEnd{t: t, c: c, dir: r.specDir(name), spec: report.Spec{Spec: name}}
	ctx = WithFrontEnd(ctx, fe)
	// Gomega's fail handler is the process's (RegisterTestingT below): the
	// spec holds the process's state, released by a clean-up registered
	// first, so it runs after every other.
	if _, err := tryHoldProcess(fe, "Gomega's fail handler"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// Registered next, so it runs next to last: after every clean-up the
	// spec registered (which may still fail it).
	t.Cleanup(func() {
		fe.mu.Lock()
		sum := fe.spec
		fe.mu.Unlock()
		if t.Failed() {
			// What the failure is, as the last line of the test's log: go
			// test shows it under the failure (Gomega's message is the
			// Ginkgo run's, its verdict line added by its fail handler).
			r.mu.Lock()
			server := r.version
			r.mu.Unlock()
			t.Log(verdictLine(name, nil, server, sum.RateLimiter))
		}
		sum.Seconds = time.Since(start).Seconds()
		switch {
		case t.Skipped():
			sum.Outcome = "skipped"
		case t.Failed():
			sum.Outcome = "failed"
		default:
			sum.Outcome = "passed"
		}
		if sum.Outcome != "failed" {
			sum.Failure = ""
		}
		r.mu.Lock()
		r.specs = append(r.specs, sum)
		r.mu.Unlock()
	})
	// Gomega's assertions fail this t (at the spec's line: Gomega marks its
	// own frames as helpers) and say so to the summary.
	gomega.RegisterTestingT(gomegaT{TB: t, fe: fe})
	body(ctx)
}

// prepare empties the run's artifacts directory and old reports before its
// first spec, and checks the harness's variables, as PrepareRun does for a suite.
func (r *TestingRun) prepare(c cluster.Cluster) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := c.(cluster.ServerVersioner); ok && r.version == "" {
		r.version = v.ServerVersion()
	}
	if r.prepared {
		return nil
	}
	// The cluster is the caller's, not a backend's: the harness's
	// variables and the scenarios'.
	if _, err := Settings(); err != nil {
		return err
	}
	if err := emptyEarlierRun(r.Dir(), r.Suite); err != nil {
		return err
	}
	r.prepared = true
	return nil
}

// specDir is a spec's own directory in Dir: its readable name and a hash of
// the full name (two specs of one name in a run share it; Ginkgo's specs
// differ by location too, features only by name).
func (r *TestingRun) specDir(name string) string {
	return filepath.Join(r.Dir(), dirName(name, name))
}

// Summary is what the run's specs reported so far.
func (r *TestingRun) Summary() SuiteSummary {
	r.mu.Lock()
	defer r.mu.Unlock()
	cg := ClientGoInUse()
	return SuiteSummary{Suite: r.Suite, ClientGo: cg.Version, ClientGoReplacement: cg.Replacement, ClientGoUnknown: cg.Unknown, KubeAPIServer: r.version, Specs: append([]report.Spec(nil), r.specs...)}
}

// WriteReports writes the run's informer report
// (report.FilesIn(report.ArtifactsRoot(), Suite)), as a Ginkgo suite's
// ReportAfterSuite does. A run with no spec that passed is an error: it
// tested nothing.
func (r *TestingRun) WriteReports() error {
	sum := r.Summary()
	if err := writeSummary(sum); err != nil {
		return err
	}
	passed := 0
	var skipped []string
	for _, s := range sum.Specs {
		switch s.Outcome {
		case "passed":
			passed++
		case "skipped":
			skipped = append(skipped, s.Spec+": "+s.Skipped)
		}
	}
	if passed == 0 {
		return fmt.Errorf("informer-conformance run %s tested nothing: %d specs, none passed (skipped: %s)", r.Suite, len(sum.Specs), strings.Join(skipped, "; "))
	}
	return nil
}

// testingFrontEnd is a testing.T's: one spec of a TestingRun.
type testingFrontEnd struct {
	t   testing.TB
	c   cluster.Cluster
	dir string

	mu   sync.Mutex
	spec report.Spec
}

func (f *testingFrontEnd) failed(message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.spec.Failure == "" {
		f.spec.Failure = message
	}
}

func (f *testingFrontEnd) Fail(message string) {
	f.t.Helper()
	f.failed(message)
	f.t.Fatal(message)
}

func (f *testingFrontEnd) Skip(reason string) {
	f.t.Helper()
	f.mu.Lock()
	f.spec.Skipped = reason
	f.mu.Unlock()
	f.t.Skip(reason)
}

func (f *testingFrontEnd) Failed() bool { return f.t.Failed() }

func (f *testingFrontEnd) DeferCleanup(timeout time.Duration, fn func(ctx context.Context) error) {
	f.t.Cleanup(func() {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, timeout)
		}
		defer cancel()
		if err := fn(ctx); err != nil {
			f.failed(err.Error())
			f.t.Error(err)
		}
	})
}

func (f *testingFrontEnd) AddReportEntry(name string, value any) {
	f.mu.Lock()
	// The raw value is at hand in-process: no JSON needed (addEntry reads it
	// only for entries from other Ginkgo processes).
	addEntry(&f.spec, name, value, "", fmt.Sprint(value))
	f.mu.Unlock()
	if d, ok := value.(report.Spec); ok {
		if len(d.Informers) > 0 { // the rest is drawn by the HTML report, too long for a log
			f.t.Logf("%v", d)
		}
		return
	}
	f.t.Logf("%s: %v", name, value)
}

func (f *testingFrontEnd) By(text string)       { f.t.Log("STEP: " + text) }
func (f *testingFrontEnd) Writer() io.Writer    { return tbWriter{f.t} }
func (f *testingFrontEnd) ArtifactsDir() string { return f.dir }
func (f *testingFrontEnd) TB() testing.TB       { return f.t }

// Cluster gives the spec the run's cluster when it has what spec asks, or
// skips it naming what is missing; the cluster is shared (Recover first).
func (f *testingFrontEnd) Cluster(ctx context.Context, spec cluster.Spec, rec SpecRecord) (cluster.Cluster, bool) {
	return UseSharedCluster(ctx, f.c, spec, rec), true
}

// gomegaT is the spec's t for Gomega: its failures also go to the
// summary.
type gomegaT struct {
	testing.TB
	fe *testingFrontEnd
}

func (g gomegaT) Fatalf(format string, args ...any) {
	g.TB.Helper()
	g.fe.failed(strings.TrimSpace(fmt.Sprintf(format, args...)))
	g.TB.Fatalf(format, args...)
}

// tbWriter writes to a test's log, a line per write.
type tbWriter struct{ t testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
