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
}

var _ e2e.FrontEnd = (*recordingFrontEnd)(nil)

func (f *recordingFrontEnd) Fail(message string) { f.t.Errorf("failed: %s", message) }
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
// harness's steps, entries, clean-ups and skips reach it while it is in
// use, and a second front end is refused meanwhile.
func TestFrontEndOfAnotherFramework(t *testing.T) {
	fe := &recordingFrontEnd{t: t, entries: map[string]any{}}
	undo, err := e2e.UseFrontEnd(fe)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e2e.UseFrontEnd(&recordingFrontEnd{t: t}); err == nil || !strings.Contains(err.Error(), "one at a time") {
		t.Errorf("a second front end while one is in use: %v", err)
	}
	e2e.By("a step")
	e2e.AddReportEntry("note", "value")
	e2e.DeferCleanup(0, func(context.Context) error { return nil })
	e2e.Skip("not today")
	undo()
	if len(fe.steps) != 1 || fe.entries["note"] != "value" || len(fe.cleanups) != 1 || fe.skipped != "not today" {
		t.Errorf("the front end saw steps %v, entries %v, %d clean-ups, skip %q", fe.steps, fe.entries, len(fe.cleanups), fe.skipped)
	}
	if again, err := e2e.UseFrontEnd(fe); err != nil {
		t.Errorf("after undo: %v", err)
	} else {
		again()
	}
}
