package e2e_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
)

// recordingFrontEnd is a front end of a test framework the suite does not
// know, written outside package e2e: it records what the harness asked of
// it.
type recordingFrontEnd struct {
	t        *testing.T
	steps    []string
	entries  map[string]any
	cleanups []func(context.Context) error
	skipped  string
	failed   string
}

var _ e2e.FrontEnd = (*recordingFrontEnd)(nil)

// harnessFrontEnd is one that brings its own harness too (a run value with
// its own hooks), also written outside package e2e.
type harnessFrontEnd struct {
	*recordingFrontEnd
	h *e2e.Harness
}

func (f harnessFrontEnd) Harness() *e2e.Harness { return f.h }

var _ e2e.HarnessCarrier = harnessFrontEnd{}

func (f *recordingFrontEnd) Fail(message string) { f.failed = message }
func (f *recordingFrontEnd) Skip(reason string)  { f.skipped = reason }
func (f *recordingFrontEnd) Failed() bool        { return f.t.Failed() }
func (f *recordingFrontEnd) DeferCleanup(_ time.Duration, fn func(context.Context) error) {
	f.cleanups = append(f.cleanups, fn)
}
func (f *recordingFrontEnd) AddReportEntry(name string, value any) { f.entries[name] = value }
func (f *recordingFrontEnd) By(text string)                        { f.steps = append(f.steps, text) }
func (f *recordingFrontEnd) Writer() io.Writer                     { return io.Discard }
func (f *recordingFrontEnd) ArtifactsDir() string                  { return f.t.TempDir() }
func (f *recordingFrontEnd) TB() testing.TB                        { return f.t }
func (f *recordingFrontEnd) Cluster(ctx context.Context, spec cluster.Spec, rec e2e.SpecRecord) (cluster.Cluster, bool) {
	end := rec.Phase("cluster start")
	defer end()
	rec.ClusterFrom("the front end's own")
	return nil, false
}

// TestFrontEndOfAnotherFramework: FrontEnd is an interface a third party
// implements outside package e2e (every type in its methods exported); the
// harness's steps, entries, clean-ups and skips reach the front end of the
// spec's context, a clean-up's context carries it too, two specs' contexts
// keep their own, and what is the process's (client-go's feature gates) is
// refused to a second spec while the first holds it.
func TestFrontEndOfAnotherFramework(t *testing.T) {
	fe := &recordingFrontEnd{t: t, entries: map[string]any{}}
	other := &recordingFrontEnd{t: t, entries: map[string]any{}}
	ctx, otherCtx := e2e.WithFrontEnd(context.Background(), fe), e2e.WithFrontEnd(context.Background(), other)
	if e2e.FrontEndOf(ctx) != e2e.FrontEnd(fe) {
		t.Fatal("the context does not carry its front end")
	}
	e2e.By(ctx, "a step")
	e2e.By(otherCtx, "the other spec's step")
	e2e.AddReportEntry(ctx, "note", "value")
	var cleanupSaw e2e.FrontEnd
	e2e.DeferCleanup(ctx, 0, func(ctx context.Context) error { cleanupSaw = e2e.FrontEndOf(ctx); return nil })
	e2e.Skip(ctx, "not today")
	if len(fe.steps) != 1 || fe.entries["note"] != "value" || len(fe.cleanups) != 1 || fe.skipped != "not today" {
		t.Errorf("the front end saw steps %v, entries %v, %d clean-ups, skip %q", fe.steps, fe.entries, len(fe.cleanups), fe.skipped)
	}
	if len(other.steps) != 1 || other.skipped != "" {
		t.Errorf("the other spec's front end saw steps %v, skip %q", other.steps, other.skipped)
	}
	if err := fe.cleanups[0](context.Background()); err != nil || cleanupSaw != e2e.FrontEnd(fe) {
		t.Errorf("the clean-up's context carries %v (err %v), want the spec's front end", cleanupSaw, err)
	}

	// client-go's gates are the process's: the first spec that sets one
	// holds them until it ends; a second spec meanwhile fails, naming both.
	fe.cleanups, fe.entries = nil, map[string]any{}
	e2e.UseClientGoGate(ctx, "WatchListClient", true)
	e2e.UseClientGoGate(otherCtx, "WatchListClient", false)
	if fe.failed != "" || !strings.Contains(other.failed, "holds the process's state") {
		t.Errorf("a second spec's gate while the first holds them: first failed %q, second %q", fe.failed, other.failed)
	}
	for i := len(fe.cleanups) - 1; i >= 0; i-- {
		if err := fe.cleanups[i](context.Background()); err != nil {
			t.Error(err)
		}
	}
	other.failed = ""
	e2e.UseClientGoGate(otherCtx, "WatchListClient", false)
	if other.failed != "" {
		t.Errorf("after the first spec ended: %s", other.failed)
	}
	for i := len(other.cleanups) - 1; i >= 0; i-- {
		if err := other.cleanups[i](context.Background()); err != nil {
			t.Error(err)
		}
	}
}
