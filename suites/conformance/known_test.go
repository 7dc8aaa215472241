package conformance

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/report/known"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// specTexts are the full texts of every spec the suite declares (as
// describe and declare compose them: scenario, context, table or spec,
// entry and sync mode), which the informer report and the verdict data
// name specs by.
func specTexts() []string {
	var texts []string
	join := func(parts ...string) string {
		var nonEmpty []string
		for _, p := range parts {
			if p != "" {
				nonEmpty = append(nonEmpty, p)
			}
		}
		return strings.Join(nonEmpty, " ")
	}
	for _, m := range []e2e.SyncMode{e2e.StreamingList, e2e.ListWatch} {
		texts = append(texts, join(detectorDescribe, detectorChecks, m.Name))
	}
	texts = append(texts, join(detectorDescribe, detectorControl))
	for _, sc := range scenarios.All() {
		for _, g := range sc.Groups() {
			for _, s := range g.Specs {
				if s.Entries == nil {
					texts = append(texts, join(sc.Name(), g.Context, s.Text))
					continue
				}
				for _, e := range s.Entries {
					for _, m := range e.ModesOf() {
						name := e.Name
						switch {
						case m.Name == "":
						case name == "":
							name = m.Name
						default:
							name += ", " + m.Name
						}
						texts = append(texts, join(sc.Name(), g.Context, s.Text, name))
					}
				}
			}
		}
	}
	return texts
}

// TestKnownDataNamesExistingSpecs: every entry of the verdict data the
// suite ships (report/known) names a spec the suite still has; an entry
// left behind by a renamed or removed spec would explain nothing, or the
// wrong spec.
func TestKnownDataNamesExistingSpecs(t *testing.T) {
	data, err := known.Load()
	if err != nil {
		t.Fatal(err)
	}
	texts := specTexts()
	if len(texts) < 100 {
		t.Fatalf("only %d spec texts composed: the composition no longer follows describe", len(texts))
	}
	for _, e := range data.Entries {
		for _, part := range append([]string{e.Spec}, e.Also...) {
			found := false
			for _, s := range texts {
				if strings.Contains(s, part) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s names %q, which is no spec of the suite (or part of one)", known.File, part)
			}
		}
	}
}

// TestVerdictPageNamesEveryScenario: the release verdict page covers every
// scenario of the catalogue or names it as not run, so that a reader never
// takes "passed everywhere" for "never ran".
func TestVerdictPageNamesEveryScenario(t *testing.T) {
	data, err := known.Load()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(packageDir(), "..", "..", filepath.FromSlash(data.Run.Page)))
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	named := map[string]bool{}
	for _, re := range []*regexp.Regexp{regexp.MustCompile(`Scenarios run: ([^.]*)\.`), regexp.MustCompile(`Scenarios not run: ([^*]*)\*\*`)} {
		m := re.FindStringSubmatch(page)
		if m == nil && strings.HasPrefix(re.String(), "Scenarios not run") {
			continue // every scenario ran: the run's line names them
		}
		if m == nil {
			t.Fatalf("%s does not say %q", data.Run.Page, re)
		}
		for _, part := range strings.Split(m[1], ", ") {
			lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
			if !isRange {
				hi = lo
			}
			a, err1 := strconv.Atoi(strings.TrimPrefix(lo, "S"))
			b, err2 := strconv.Atoi(strings.TrimPrefix(hi, "S"))
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: %q is no scenario or range of them", data.Run.Page, part)
			}
			for n := a; n <= b; n++ {
				named["S"+strconv.Itoa(n)] = true
			}
		}
	}
	for _, sc := range scenarios.All() {
		if !named[sc.ID] {
			t.Errorf("%s neither covers %s nor names it as not run: render it again (make verdicts, or hack/matrix -verdicts -render)", data.Run.Page, sc.ID)
		}
	}
}

// TestKnownTransformTwiceMatchesS19: the verdict data's release of the
// double transform of a streaming list's objects is the one S19 expects
// (scenarios.TransformedTwiceFrom, found with make bisect).
func TestKnownTransformTwiceMatchesS19(t *testing.T) {
	data, err := known.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range data.Changes {
		if c.ID == "transform-twice" {
			if c.AddedIn != "v"+scenarios.TransformedTwiceFrom {
				t.Errorf("%s: transform-twice added in %s, S19 expects %s", known.File, c.AddedIn, scenarios.TransformedTwiceFrom)
			}
			return
		}
	}
	t.Errorf("%s has no change transform-twice", known.File)
}
