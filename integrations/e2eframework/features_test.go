package e2eframework

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/e2e-framework/pkg/types"

	"github.com/informer-conformance/informer-conformance/e2e"
)

// assessments are a feature's assessment names, in order.
func assessments(f features.Feature) []string {
	var names []string
	for _, s := range features.GetStepsByLevel(f.Steps(), types.LevelAssess) {
		names = append(names, s.Name())
	}
	return names
}

// TestAllScenarios: a feature for every scenario, each with assessments of
// distinct names, distinct feature names, the scenario label on each.
func TestAllScenarios(t *testing.T) {
	all := All()
	seen := map[string]bool{}
	scenarios := map[string]bool{}
	for _, f := range all {
		if seen[f.Name()] {
			t.Errorf("two features named %q", f.Name())
		}
		seen[f.Name()] = true
		ids := f.Labels()[LabelScenario]
		if len(ids) != 1 || f.Name()[:len(ids[0])+1] != ids[0]+" " {
			t.Errorf("feature %q: scenario label %v, want one naming the scenario its name starts with", f.Name(), ids)
			continue
		}
		scenarios[ids[0]] = true
		names := assessments(f)
		if len(names) == 0 {
			t.Errorf("feature %q has no assessment", f.Name())
		}
		for i, n := range names {
			if slices.Index(names, n) != i {
				t.Errorf("feature %q: two assessments named %q", f.Name(), n)
			}
		}
	}
	// The catalogue names every scenario ("## S25 A rolling control-plane
	// upgrade"): each has a feature, and each feature a catalogue entry.
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "scenarios.md"))
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("the catalogue is not here (the module outside its repository, as a dependency): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	catalogued := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (S\d+) `).FindAllStringSubmatch(string(doc), -1) {
		catalogued[m[1]] = true
	}
	if len(catalogued) < 34 {
		t.Fatalf("docs/scenarios.md names %d scenarios, want S1-S34 at least", len(catalogued))
	}
	for _, id := range slices.Sorted(maps.Keys(catalogued)) {
		if !scenarios[id] {
			t.Errorf("no feature for %s (docs/scenarios.md has it)", id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(scenarios)) {
		if !catalogued[id] {
			t.Errorf("a feature for %s, which docs/scenarios.md does not name", id)
		}
	}
}

// TestExistingFeaturesKeepTheirAssessments: the four features of the first
// release keep their names and their assessments' names (made from the
// scenarios' values since: Entry.Feature keeps the older names).
func TestExistingFeaturesKeepTheirAssessments(t *testing.T) {
	for _, tc := range []struct {
		f    features.Feature
		name string
		want []string
	}{
		{APIServerRestart(), "S1 kube-apiserver restart", []string{"graceful stop, streaming list", "graceful stop, LIST+WATCH", "hard stop, streaming list", "hard stop, LIST+WATCH"}},
		{Blackhole(), "S2 stale HTTP/2 connection (network blackhole)", []string{"streaming list", "LIST+WATCH"}},
		{SameNameRecreate(), "S7 same-name pod recreated while disconnected", []string{"streaming list", "LIST+WATCH"}},
		{Compaction(), "S5 etcd compaction", []string{"delete then compact, streaming list", "delete then compact, LIST+WATCH", "compacted while watching, streaming list", "compacted while watching, LIST+WATCH"}},
	} {
		if tc.f.Name() != tc.name {
			t.Errorf("feature %q, want %q", tc.f.Name(), tc.name)
		}
		got := assessments(tc.f)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: assessments %q, want %q among them", tc.name, got, w)
			}
		}
	}
	ctl := SameNameRecreate(ExpectFailure("x"))
	if ctl.Name() != "S7 same-name pod recreated while disconnected (negative control)" || !ctl.Labels().Contains(LabelType, "negative-control") {
		t.Errorf("negative control %q labelled %v", ctl.Name(), ctl.Labels())
	}
}

// TestModesAndSpeeds: entries of one sync mode, SyncModes narrowing them,
// WithoutSlow and Quick leaving out what the Ginkgo suite labels slow.
func TestModesAndSpeeds(t *testing.T) {
	if got := assessments(ErrorClasses(SyncModes(e2e.StreamingList))); len(got) != 0 {
		t.Errorf("S4 error classes in streaming-list mode: %q, want none (LIST+WATCH only)", got)
	}
	if got := assessments(ErrorClasses()); len(got) != 6 || got[0] != "410 Gone event: relist, LIST+WATCH" {
		t.Errorf("S4 error classes: %q, want the six of scenarios.ErrorClasses in LIST+WATCH mode", got)
	}
	if got := assessments(StreamCut()); !slices.Equal(got, []string{"streaming list"}) {
		t.Errorf("S21: %q, want streaming list only", got)
	}
	if got := assessments(MissingBookmark(SyncModes(e2e.ListWatch))); len(got) != 0 {
		t.Errorf("S14 in LIST+WATCH mode: %q, want none", got)
	}
	if got := assessments(RelistAfterRestore(SyncModes(e2e.ListWatch))); !slices.Equal(got, []string{"LIST+WATCH"}) {
		t.Errorf("S6 relist in LIST+WATCH mode: %q", got)
	}
	if got := assessments(Compaction(WithoutSlow())); slices.ContainsFunc(got, func(n string) bool {
		return n == "compacted while watching, streaming list" || n == "fail-over with the watch cache, LIST+WATCH"
	}) {
		t.Errorf("S5 without slow: %q", got)
	}
	if got := assessments(CertRotation(WithoutSlow())); !slices.Equal(got, []string{"client CA rotated, streaming list", "client CA rotated, LIST+WATCH"}) {
		t.Errorf("S15 without slow: %q", got)
	}
	if !RelistStorm().Labels().Contains(LabelSpeed, Slow) {
		t.Error("S12 not labelled slow")
	}
	if !InitialSyncMemory().Labels().Contains(LabelSpeed, Slow) {
		t.Error("S34 not labelled slow")
	}
	if !RollingUpgrade().Labels().Contains(LabelSpeed, Slow) {
		t.Error("S25 not labelled slow (the Ginkgo suite labels it slow)")
	}
	quick := Quick()
	for _, f := range quick {
		if f.Labels().Contains(LabelSpeed, Slow) {
			t.Errorf("Quick has the slow feature %q", f.Name())
		}
	}
	if len(quick) != len(All())-3 {
		t.Errorf("Quick: %d features, want every one but S12, S25 and S34 (%d)", len(quick), len(All())-3)
	}
	if l := APIServerRestart().Labels(); !l.Contains(LabelCapability, e2e.CapabilityHA.Name) || !l.Contains(LabelCapability, e2e.CapabilityAPIServerRestart.Name) || !l.Contains(LabelDisruptive, "true") {
		t.Errorf("S1 labels %v", l)
	}
}

// TestStepSkips: a slow assessment skips under --skip-labels speed=slow, a
// long one under speed=slow and speed=long, and a smoke run's assessment
// once one of its feature ran; all before they look for a cluster (none
// here: the environment has no kubeconfig).
func TestStepSkips(t *testing.T) {
	body := func(context.Context, e2e.Setup) { t.Error("the scenario ran") }
	for _, tc := range []struct {
		name string
		o    options
		e    entry
		skip map[string][]string
	}{
		{"slow, speed=slow", apply(nil), entry{speed: Slow}, map[string][]string{LabelSpeed: {Slow}}},
		{"long, speed=slow", apply(nil), entry{speed: Long}, map[string][]string{LabelSpeed: {Slow}}},
		{"long, speed=long", apply(nil), entry{speed: Long}, map[string][]string{LabelSpeed: {Long}}},
		{"smoke, one ran", func() options { o := apply([]Option{Smoke()}); o.ran.Store(true); return o }(), entry{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Cleanup(func() {
				if !t.Skipped() {
					t.Error("not skipped")
				}
			})
			cfg := envconf.New().WithSkipLabels(tc.skip)
			tc.o.step("S0 feature", "step", e2e.StreamingList, tc.e, body)(context.Background(), t, cfg)
		})
	}
}
