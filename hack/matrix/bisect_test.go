package main

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/semver"
)

var listedForBisect = strings.Fields("v0.33.12 v0.33.13 v0.34.0 v0.34.1 v0.34.2 v0.35.0-alpha.2 v0.35.0-alpha.3 v0.35.0-beta.0 v0.35.0-rc.0 v0.35.0 v0.35.1 v0.36.0-alpha.0 v0.36.0-rc.1 v0.36.0 v0.36.1 v0.36.2")

func TestBisectPath(t *testing.T) {
	for _, c := range []struct{ good, bad, want string }{
		{"v0.34.0", "v0.34.2", "v0.34.1 v0.34.2"},
		// Patches of good's minor (v0.33.13 after v0.33.12) and of the minors
		// between (v0.35.1) are backports: not on the way.
		{"v0.33.12", "v0.36.1", "v0.34.0 v0.35.0-alpha.2 v0.35.0-alpha.3 v0.35.0-beta.0 v0.35.0-rc.0 v0.35.0 v0.36.0-alpha.0 v0.36.0-rc.1 v0.36.0 v0.36.1"},
		{"v0.35.0-alpha.3", "v0.35.0", "v0.35.0-beta.0 v0.35.0-rc.0 v0.35.0"},
	} {
		got, err := bisectPath(listedForBisect, c.good, c.bad)
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("bisectPath(%s, %s) = %v, %v; want %s", c.good, c.bad, got, err, c.want)
		}
	}
	for _, c := range [][2]string{{"v0.36.0", "v0.35.0"}, {"v0.34.0", "v0.34.5"}, {"v0.31.0", "v0.34.1"}} {
		if _, err := bisectPath(listedForBisect, c[0], c[1]); err == nil {
			t.Errorf("bisectPath(%s, %s): no error", c[0], c[1])
		}
	}
}

// TestBisectFindsTheFirstTag: every position of the change among 10 tags
// is found, in at most bisectRuns runs.
func TestBisectFindsTheFirstTag(t *testing.T) {
	path, _ := bisectPath(listedForBisect, "v0.33.12", "v0.36.1")
	for change := range path {
		runs := 0
		run := func(v string) (string, error) {
			runs++
			if v != "v0.33.12" && semver.Compare(v, path[change]) >= 0 {
				return "S19: new", nil
			}
			return "S19: old", nil
		}
		steps, first, err := bisect("v0.33.12", path, run)
		if err != nil || first != change {
			t.Errorf("change at %s: found %d (%v)", path[change], first, err)
		}
		if runs > bisectRuns(len(path)) || len(steps) != runs {
			t.Errorf("change at %s: %d runs, at most %d", path[change], runs, bisectRuns(len(path)))
		}
	}
	_, _, err := bisect("v0.33.12", path, func(string) (string, error) { return "same", nil })
	if err == nil || !strings.Contains(err.Error(), "behave the same") {
		t.Errorf("no change: %v", err)
	}
	boom := errors.New("does not compile")
	if _, _, err := bisect("v0.33.12", path, func(string) (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Errorf("a failed run: %v", err)
	}
	text := bisectReport(bisectRun{}, "outcomes of S19", "v0.33.12", path[:3], []bisectStep{{version: "v0.33.12", behaviour: "a"}}, 2)
	for _, want := range []string{"**First tag that behaves as v0.35.0-alpha.3: v0.35.0-alpha.3** (the tag before it: v0.35.0-alpha.2)", "kubernetes/compare/v1.35.0-alpha.2...v1.35.0-alpha.3"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if !slices.Contains(path, "v0.35.0-rc.0") {
		t.Error("pre-releases are on the way")
	}
}
