package profile_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/informer-conformance/informer-conformance/cluster/profile"
	"github.com/informer-conformance/informer-conformance/fixtures"
)

// TestShippedProfilesLoad: every profile in fixtures/profiles loads, is
// named after its file and says what it is for (the list is read from the
// fixtures, not written here).
func TestShippedProfilesLoad(t *testing.T) {
	names := fixtures.ProfileNames()
	for _, want := range []string{profile.Default, "no-watch-cache", "cbor"} {
		if !slices.Contains(names, want) {
			t.Errorf("fixtures.ProfileNames() = %v lacks %s", names, want)
		}
	}
	for _, name := range names {
		p, err := profile.Load(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.Name != name {
			t.Errorf("%s.yaml names itself %q", name, p.Name)
		}
		if strings.TrimSpace(p.Description) == "" {
			t.Errorf("%s has no description", name)
		}
	}
	if p, err := profile.Load(profile.Default); err != nil || len(p.Flags()) != 0 {
		t.Errorf("profile %s: %v, flags %v; want none", profile.Default, err, p.Flags())
	}
}

// TestCombinedProfiles: names joined by "+" combine, later flags winning;
// an unknown part is named.
func TestCombinedProfiles(t *testing.T) {
	p, err := profile.Load("fast-graceful-shutdown+no-watch-cache+cbor")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--feature-gates=CBORServingAndStorage=true", "--shutdown-watch-termination-grace-period=2s", "--watch-cache=false"}
	if p.Name != "fast-graceful-shutdown+no-watch-cache+cbor" || !slices.Equal(p.Args(nil), want) {
		t.Errorf("got %s %q, want fast-graceful-shutdown+no-watch-cache+cbor %q", p.Name, p.Args(nil), want)
	}
	if !strings.Contains(p.Description, "2 s") || !strings.Contains(p.Description, "etcd") {
		t.Errorf("the combined description does not join its parts': %q", p.Description)
	}
	if _, err := profile.Load("no-watch-cache+no-such-profile"); err == nil || !strings.Contains(err.Error(), "no-such-profile") {
		t.Errorf("want the unknown part named, got %v", err)
	}
	if _, err := profile.Load("no-such-profile"); err == nil || !strings.Contains(err.Error(), "no-watch-cache") {
		t.Errorf("want an error listing the known profiles, got %v", err)
	}
}

// TestLoadFromFile: a name with a path separator or ending in .yaml is a
// file; unknown fields are refused.
func TestLoadFromFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(good, []byte("apiServerFlags:\n  --min-request-timeout: \"5\"\nfeatureGates:\n  WatchList: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"--feature-gates=WatchList=false", "--min-request-timeout=5"}; p.Name != good || !slices.Equal(p.Args(nil), want) {
		t.Errorf("got %s %q, want %s %q", p.Name, p.Args(nil), good, want)
	}
	if _, err := profile.Parse([]byte("apiServerFlag:\n  watch-cache: \"false\"\n")); err == nil || !strings.Contains(err.Error(), "apiServerFlag") {
		t.Errorf("a misspelt field: want it named, got %v", err)
	}
}

// TestValidate: the shape is checked, the flags no backend takes and those
// the backend names (Managed) are refused with the reason, every problem
// at once.
func TestValidate(t *testing.T) {
	p := profile.Profile{Name: "bad",
		APIServerFlags: map[string]string{"--secure-port": "1", "feature-gates": "A=true", "Bad_Flag": "x", "watch-cache": "false"},
		FeatureGates:   map[string]bool{"no-such": true, "WatchList": true}}
	err := p.Validate(profile.Managed{"secure-port": "the backend allocates ports"})
	for _, want := range []string{
		`"Bad_Flag" is not a flag name`,
		"flag --feature-gates cannot be set by a profile: use the profile's featureGates field",
		"flag --secure-port cannot be set by a profile: the backend allocates ports",
		`"no-such" is not a feature gate name`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v; want it to say %s", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "watch-cache") {
		t.Errorf("Validate refused watch-cache, a flag no one manages: %v", err)
	}
	if err := p.Validate(nil); err == nil || strings.Contains(err.Error(), "secure-port") {
		t.Errorf("Validate(nil) refused a flag no backend named, or nothing: %v", err)
	}
}

// TestArgs: flags override defaults, gates are one sorted --feature-gates,
// "--" prefixes are dropped.
func TestArgs(t *testing.T) {
	p := profile.Profile{APIServerFlags: map[string]string{"--watch-cache": "false", "min-request-timeout": "5"},
		FeatureGates: map[string]bool{"WatchList": false, "CBORServingAndStorage": true}}
	got := p.Args(map[string]string{"watch-cache": "true", "secure-port": "6443"})
	want := []string{"--feature-gates=CBORServingAndStorage=true,WatchList=false", "--min-request-timeout=5", "--secure-port=6443", "--watch-cache=false"}
	if !slices.Equal(got, want) {
		t.Errorf("Args = %q, want %q", got, want)
	}
	if f := (profile.Profile{}).Flags(); f != nil {
		t.Errorf("an empty profile's Flags = %v, want nil", f)
	}
}
