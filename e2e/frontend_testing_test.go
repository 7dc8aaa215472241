package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/cluster/local/localtest"
	"github.com/informer-conformance/informer-conformance/report"
)

// versionedCluster tells its kube-apiserver version.
type versionedCluster struct{ fakeCluster }

func (versionedCluster) ServerVersion() string { return "v1.36.3" }

// TestTestingRunReports: specs run under a testing.T report like Ginkgo's
// (outcome, notes, informer numbers, the skip reason), their clean-ups run
// under the same front end, and a run where nothing passed is an error.
func TestTestingRunReports(t *testing.T) {
	localtest.SkipIfShort(t)
	for _, name := range allVarNames() {
		setenv(t, name, "")
	}
	root := t.TempDir()
	setenv(t, "INFORMER_CONFORMANCE_ARTIFACTS", root)
	run := NewTestingRun("front end test")
	ctx := context.Background()

	empty := NewTestingRun("nothing")
	if err := empty.WriteReports(); err == nil || !strings.Contains(err.Error(), "tested nothing") {
		t.Errorf("a run without specs: %v, want 'tested nothing'", err)
	}

	cleanedUp := false
	t.Run("passes", func(t *testing.T) {
		run.Spec(ctx, t, versionedCluster{}, "S0 passes", func(ctx context.Context) {
			// The process's state is this spec's while it runs: another
			// spec of the process that needs it fails, naming both.
			other := &testingFrontEnd{t: t, dir: "other-spec"}
			if _, err := tryHoldProcess(other, "client-go's feature gate X"); err == nil || !strings.Contains(err.Error(), "other-spec") || !strings.Contains(err.Error(), "Gomega's fail handler") {
				t.Errorf("a second spec holding the process while one runs: %v", err)
			}
			By(ctx, "doing nothing")
			AddReportEntry(ctx, "S0 outcome", "fine")
			AddReportEntry(ctx, report.SpecEntry, report.Spec{Informers: []Numbers{{Informer: "pods", Dials: 1}}})
			DeferCleanup(ctx, 0, func(ctx context.Context) error {
				cleanedUp = TB(ctx) == t
				return nil
			})
			if !strings.HasPrefix(SpecArtifactsDir(ctx), run.Dir()) {
				t.Errorf("spec directory %s not in the run's %s", SpecArtifactsDir(ctx), run.Dir())
			}
		})
	})
	if !cleanedUp {
		t.Error("the spec's clean-up did not run under its own front end")
	}
	t.Run("skips", func(t *testing.T) {
		run.Spec(ctx, t, versionedCluster{}, "S0 skips", func(ctx context.Context) {
			// The cluster has one apiserver and no profile: the spec skips.
			FrontEndOf(ctx).Cluster(ctx, cluster.Spec{APIServers: 2}, nil)
			t.Error("not skipped")
		})
	})
	process.mu.Lock()
	outlived := process.holder != nil
	process.mu.Unlock()
	if outlived {
		t.Error("the testing spec's hold on the process outlived it")
	}

	if err := run.WriteReports(); err != nil {
		t.Fatal(err)
	}
	sum := readSummary(t, "front end test")
	if sum.KubeAPIServer != "v1.36.3" || len(sum.Specs) != 2 {
		t.Fatalf("report %+v", sum)
	}
	pass, skip := sum.Specs[0], sum.Specs[1]
	if pass.Outcome != "passed" || pass.Notes["S0 outcome"] != "fine" || len(pass.Informers) != 1 || pass.Informers[0].Dials != 1 {
		t.Errorf("passed spec reported as %+v", pass)
	}
	if skip.Outcome != "skipped" || !strings.Contains(skip.Skipped, "2 kube-apiservers") {
		t.Errorf("skipped spec reported as %+v", skip)
	}
}

// readSummary reads the JSON informer report of a suite.
func readSummary(t *testing.T, suite string) SuiteSummary {
	t.Helper()
	jsonPath := reportFiles(suite).JSON
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var sum SuiteSummary
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	return sum
}

// linkedCluster answers EtcdLink only when it has links, as the local
// backend's cluster does.
type linkedCluster struct {
	fakeCluster
	links bool
}

func (c linkedCluster) EtcdLink(int) (*faultproxy.Proxy, error) {
	if !c.links {
		return nil, errors.New("started without Options.EtcdLinks")
	}
	return &faultproxy.Proxy{}, nil
}

// TestTestingFrontEndSkips: a spec under a testing.T skips, naming what is
// missing, on a cluster without the etcd links it asks for and on a
// client-go older than its constraint.
func TestTestingFrontEndSkips(t *testing.T) {
	if !cluster.HasEtcdLinks(linkedCluster{links: true}) || cluster.HasEtcdLinks(linkedCluster{}) || cluster.HasEtcdLinks(fakeCluster{}) {
		t.Error("hasEtcdLinks: true only for a cluster that answers EtcdLink")
	}
	for _, tc := range []struct {
		name     string
		body     func(ctx context.Context, fe *testingFrontEnd)
		wantSkip string // "" for none
	}{
		{"no etcd links", func(ctx context.Context, fe *testingFrontEnd) { fe.Cluster(ctx, cluster.Spec{EtcdLinks: true}, nil) }, "etcd links"},
		{"older client-go", func(ctx context.Context, _ *testingFrontEnd) { RequireClientGo(ctx, ">= 99.0.0") }, "needs client-go >= 99.0.0"},
		{"client-go new enough", func(ctx context.Context, _ *testingFrontEnd) { RequireClientGo(ctx, ">= 0.0.1") }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := &testingFrontEnd{t: t, c: linkedCluster{}}
			t.Cleanup(func() {
				fe.mu.Lock()
				why := fe.spec.Skipped
				fe.mu.Unlock()
				switch {
				case tc.wantSkip == "" && t.Skipped():
					t.Errorf("skipped: %s", why)
				case tc.wantSkip != "" && !strings.Contains(why, tc.wantSkip):
					t.Errorf("skip reason %q, want it to name %q", why, tc.wantSkip)
				}
			})
			tc.body(WithFrontEnd(context.Background(), fe), fe)
		})
	}
}

// failedTB is a test that has failed: it keeps its clean-ups and its log
// for the caller (a real failed sub-test would fail its parent).
type failedTB struct {
	testing.TB
	cleanups []func()
	logged   []string
}

func (f *failedTB) Failed() bool                 { return true }
func (f *failedTB) Skipped() bool                { return false }
func (f *failedTB) Helper()                      {}
func (f *failedTB) Cleanup(fn func())            { f.cleanups = append(f.cleanups, fn) }
func (f *failedTB) Log(args ...any)              { f.logged = append(f.logged, fmt.Sprint(args...)) }
func (f *failedTB) Logf(format string, a ...any) { f.Log(fmt.Sprintf(format, a...)) }

// TestTestingRunSaysWhatAFailureIs: a failed spec under a testing.T ends
// its log with the failure's verdict, as a Ginkgo run's failure message
// does.
func TestTestingRunSaysWhatAFailureIs(t *testing.T) {
	for _, name := range allVarNames() {
		setenv(t, name, "")
	}
	setenv(t, "INFORMER_CONFORMANCE_ARTIFACTS", t.TempDir())
	run := NewTestingRun("verdict test")
	tb := &failedTB{TB: t}
	run.Spec(context.Background(), tb, versionedCluster{}, "S0 fails", func(context.Context) {})
	for i := len(tb.cleanups) - 1; i >= 0; i-- {
		tb.cleanups[i]()
	}
	if len(tb.logged) == 0 || !strings.HasPrefix(tb.logged[len(tb.logged)-1], VerdictPrefix+"unexplained: ") {
		t.Errorf("the failed spec's log ends %q, want its verdict (unexplained: S0 has no entry)", tb.logged)
	}
	if s := run.Summary().Specs; len(s) != 1 || s[0].Outcome != "failed" {
		t.Errorf("specs %+v", s)
	}
}
