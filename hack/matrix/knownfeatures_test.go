package main

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// knownFeatures031 is client-go v0.31.14's features/known_features.go, cut
// down: unversioned FeatureSpecs (v0.35 made them versioned).
const knownFeatures031 = `package features

const (
	// owner: @p0lyn0mial
	// beta: v1.30
	WatchListClient Feature = "WatchListClient"

	// owner: @nilekhc
	// alpha: v1.30
	InformerResourceVersion Feature = "InformerResourceVersion"
)

var defaultKubernetesFeatureGates = map[Feature]FeatureSpec{
	WatchListClient:         {Default: false, PreRelease: Beta},
	InformerResourceVersion: {Default: false, PreRelease: Alpha},
}
`

// knownFeatures036 is client-go v0.36.6's features/known_features.go, cut
// down: versioned specs, InOrderInformers GA and locked in its last entry.
const knownFeatures036 = `package features

import (
	"k8s.io/apimachinery/pkg/util/version"
)

const (
	// owner: @michaelasp
	// beta: v1.36
	AtomicFIFO Feature = "AtomicFIFO"

	// owner: @deads2k
	// beta: v1.33
	InOrderInformers Feature = "InOrderInformers"

	// owner: @yue9944882
	// beta: v1.35
	InOrderInformersBatchProcess Feature = "InOrderInformersBatchProcess"

	// owner: @enj, @michaelasp
	InformerResourceVersion Feature = "InformerResourceVersion"

	WatchListClient Feature = "WatchListClient"

	// Declared, but with no specs: client-go skips it.
	Dormant Feature = "Dormant"
)

var defaultVersionedKubernetesFeatureGates = map[Feature]VersionedSpecs{
	AtomicFIFO: {
		{Version: version.MustParse("1.36"), Default: true, PreRelease: Beta},
	},
	InOrderInformers: {
		{Version: version.MustParse("1.33"), Default: true, PreRelease: Beta},
		{Version: version.MustParse("1.36"), Default: true, PreRelease: GA, LockToDefault: true},
	},
	InOrderInformersBatchProcess: {
		{Version: version.MustParse("1.35"), Default: true, PreRelease: Beta},
	},
	InformerResourceVersion: {
		{Version: version.MustParse("1.30"), Default: false, PreRelease: Alpha},
		{Version: version.MustParse("1.35"), Default: true, PreRelease: GA},
	},
	WatchListClient: {
		{Version: version.MustParse("1.30"), Default: false, PreRelease: Beta},
		{Version: version.MustParse("1.35"), Default: true, PreRelease: Beta},
	},
	Dormant: {},
}
`

func TestParseKnownFeatures(t *testing.T) {
	old, err := parseKnownFeatures(knownFeatures031)
	if err != nil {
		t.Fatal(err)
	}
	wantOld := knownGates{
		"WatchListClient":         {Default: false, PreRelease: "Beta"},
		"InformerResourceVersion": {Default: false, PreRelease: "Alpha"},
	}
	if !maps.Equal(old, wantOld) {
		t.Errorf("v0.31 gates %+v, want %+v", old, wantOld)
	}

	gates, err := parseKnownFeatures(knownFeatures036)
	if err != nil {
		t.Fatal(err)
	}
	want := knownGates{
		"AtomicFIFO":                   {Default: true, PreRelease: "Beta"},
		"InOrderInformers":             {Default: true, Locked: true, PreRelease: "GA"},
		"InOrderInformersBatchProcess": {Default: true, PreRelease: "Beta"},
		// The last entry counts, as in client-go: GA, default on, not locked.
		"InformerResourceVersion": {Default: true, PreRelease: "GA"},
		"WatchListClient":         {Default: true, PreRelease: "Beta"},
	}
	if !maps.Equal(gates, want) {
		t.Errorf("v0.36 gates %+v, want %+v (Dormant, with no specs, is no gate)", gates, want)
	}
}

func TestParseKnownFeaturesErrors(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"not Go":       {"package features\nconst (", "parse known_features.go"},
		"no gate map":  {"package features\nconst A Feature = \"A\"\n", "declares neither defaultVersionedKubernetesFeatureGates nor defaultKubernetesFeatureGates"},
		"unknown key":  {"package features\nvar defaultKubernetesFeatureGates = map[Feature]FeatureSpec{\n\tB: {Default: true},\n}\n", "has key B, which is no"},
		"odd default":  {"package features\nconst B Feature = \"B\"\nvar defaultKubernetesFeatureGates = map[Feature]FeatureSpec{\n\tB: {Default: on},\n}\n", "defaultKubernetesFeatureGates[B]: Default is not true or false"},
		"non-literal":  {"package features\nconst B Feature = name\nvar defaultKubernetesFeatureGates = map[Feature]FeatureSpec{}\n", "feature constant B is not a string literal"},
		"odd versions": {"package features\nconst B Feature = \"B\"\nvar defaultVersionedKubernetesFeatureGates = map[Feature]VersionedSpecs{\n\tB: {spec},\n}\n", "last entry is not a FeatureSpec literal"},
	} {
		_, err := parseKnownFeatures(tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
}

// TestParseKnownFeaturesOfReleases parses the real files of the releases
// the verdicts run on, where the module cache already holds them (no
// download in a short test): every version has the gates its release
// notes say, in whichever shape its file has.
func TestParseKnownFeaturesOfReleases(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("go env GOMODCACHE: %v", err)
	}
	cache := strings.TrimSpace(string(out))
	for _, tc := range []struct {
		version    string
		has, lacks []string
		locked     []string
	}{
		{"v0.31.14", []string{"WatchListClient"}, []string{"InOrderInformers", "AtomicFIFO"}, nil},
		{"v0.33.13", []string{"InOrderInformers"}, []string{"InOrderInformersBatchProcess", "AtomicFIFO"}, nil},
		{"v0.35.10", []string{"InOrderInformers", "InOrderInformersBatchProcess"}, []string{"AtomicFIFO"}, nil},
		{"v0.36.6", []string{"AtomicFIFO", "UnlockWhileProcessingFIFO", "InOrderInformersBatchProcess"}, nil, []string{"InOrderInformers"}},
	} {
		src, err := os.ReadFile(filepath.Join(cache, "k8s.io", "client-go@"+tc.version, "features", "known_features.go"))
		if err != nil {
			t.Logf("client-go %s not in the module cache: %v", tc.version, err)
			continue
		}
		gates, err := parseKnownFeatures(string(src))
		if err != nil {
			t.Errorf("client-go %s: %v", tc.version, err)
			continue
		}
		for _, n := range append(tc.has, tc.locked...) {
			if _, ok := gates[n]; !ok {
				t.Errorf("client-go %s: no %s in %v", tc.version, n, gates)
			}
		}
		for _, n := range tc.lacks {
			if _, ok := gates[n]; ok {
				t.Errorf("client-go %s: has %s", tc.version, n)
			}
		}
		for n, g := range gates {
			if g.Locked != slices.Contains(tc.locked, n) {
				t.Errorf("client-go %s: %s locked %t", tc.version, n, g.Locked)
			}
		}
	}
}

func TestGateSetApplicability(t *testing.T) {
	old, _ := parseKnownFeatures(knownFeatures031)
	gates, _ := parseKnownFeatures(knownFeatures036)
	sets, err := parseGateSets("default; AtomicFIFO=false; InOrderInformers=false; InOrderInformers=true; InOrderInformersBatchProcess=false,AtomicFIFO=false; UnlockWhileProcessingFIFO=false,InOrderInformers=false")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version string
		known   knownGates
		set     gateSet
		want    string
	}{
		{"v0.31.14", old, sets[0], ""},
		{"v0.31.14", old, sets[1], "client-go v0.31.14 has no AtomicFIFO gate"},
		{"v0.36.6", gates, sets[1], ""},
		{"v0.36.6", gates, sets[2], "client-go v0.36.6 has InOrderInformers locked to true"},
		// Asking a locked gate for its own value changes nothing: it applies.
		{"v0.36.6", gates, sets[3], ""},
		{"v0.36.6", gates, sets[4], ""},
		{"v0.36.6", gates, sets[5], "client-go v0.36.6 has no UnlockWhileProcessingFIFO gate; client-go v0.36.6 has InOrderInformers locked to true"},
	} {
		if got := tc.set.notApplicable(tc.version, tc.known); got != tc.want {
			t.Errorf("%s on %s: %q, want %q", tc.set, tc.version, got, tc.want)
		}
	}
}

// TestNotApplicableColumnsAreNotRun: runPlan returns a column whose gate set
// does not apply without running it (no go.mod resolved, no suite run),
// and one whose client-go's gates cannot be read as an error.
func TestNotApplicableColumnsAreNotRun(t *testing.T) {
	old, _ := parseKnownFeatures(knownFeatures031)
	lookups := 0
	gatesOf := func(version string) (knownGates, error) {
		lookups++
		if version == "v0.99.0" {
			return nil, os.ErrNotExist
		}
		return old, nil
	}
	plan := []column{
		{ClientGo: "v0.31.14", Gates: verdictGateSets[0]},
		{ClientGo: "v0.31.14", Gates: verdictGateSets[2]},
		{ClientGo: "v0.99.0", Gates: verdictGateSets[2]},
	}
	cols, err := runPlan(context.Background(), t.TempDir(), config{}, t.TempDir(), nil, "v0.37.2", plan, nil, gatesOf)
	if err != nil {
		t.Fatal(err)
	}
	if lookups != 2 {
		t.Errorf("%d gate lookups, want one per version", lookups)
	}
	if len(cols) != 3 || cols[0].NotApplicable != "client-go v0.31.14 has no InOrderInformers gate" || cols[1].NotApplicable != "client-go v0.31.14 has no AtomicFIFO gate" {
		t.Errorf("columns %+v", cols)
	}
	if !strings.Contains(cols[2].Error, "cannot tell whether gate set AtomicFIFO=false applies") || cols[2].NotApplicable != "" {
		t.Errorf("a client-go whose gates cannot be read: %+v", cols[2])
	}
	for _, c := range cols {
		if c.Cells != nil || c.Seconds != 0 {
			t.Errorf("%s ran", c.name())
		}
	}
}

func TestNotApplicableColumnsInTheMatrix(t *testing.T) {
	cols := []column{
		{ClientGo: "v0.31.14", Kube: "v1.36.3", Passed: true, Cells: map[string]cell{"S1": {Outcome: "passed"}}},
		{ClientGo: "v0.31.14", Gates: verdictGateSets[2], NotApplicable: "client-go v0.31.14 has no AtomicFIFO gate"},
		{ClientGo: "v0.37.2", Kube: "v1.36.3", Passed: true, Cells: map[string]cell{"S1": {Outcome: "passed"}}},
	}
	md := markdown(cols)
	for _, want := range []string{
		"| spec | client-go v0.31.14 / kube-apiserver v1.36.3 | client-go v0.37.2 / kube-apiserver v1.36.3 |\n",
		"| S1 | pass r=0 | pass r=0 |\n",
		"- client-go v0.31.14 / AtomicFIFO=false: not applicable: client-go v0.31.14 has no AtomicFIFO gate\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	page, err := htmlMatrix(cols)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, want := range []string{
		`<td>client-go v0.31.14 / AtomicFIFO=false</td><td colspan="4" class="na">not applicable: client-go v0.31.14 has no AtomicFIFO gate</td>`,
		"1 specs × 2 columns",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(html, `<th class="col">client-go v0.31.14 / AtomicFIFO=false</th>`) {
		t.Errorf("a column not applicable is in the grid")
	}
}
