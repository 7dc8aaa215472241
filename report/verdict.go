package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/informer-conformance/informer-conformance/report/known"
)

// Classify marks every failed spec of sum that has no verdict yet with what
// its failure is (Spec.Verdict): known behaviour of the client-go
// under test, from the verdict data the suite ships (package
// report/known), or unexplained and why. Write calls it; the JUnit
// message gets the same line from the harness (known.Verdict.Line).
func Classify(sum *SuiteSummary) error {
	data, err := known.Load()
	if err != nil {
		return err
	}
	for i := range sum.Specs {
		s := &sum.Specs[i]
		if outcomeOf(*s) != outcomeFailed || s.Verdict != nil {
			continue
		}
		v := Verdict(*sum, *s, data)
		s.Verdict = &v
	}
	return nil
}

// Verdict is what spec s's failure is, in a run of sum: known behaviour
// of its client-go (data's entries), else its client settings' doing where
// the client-side rate limiter held its informers a second or more, else
// unexplained.
func Verdict(sum SuiteSummary, s Spec, data known.Data) known.Verdict {
	v := data.Explain(SubjectOf(sum, s))
	if !v.Known && s.RateLimiter.Significant() {
		v.Settings = settingsCause(sum.ClientSettings, *s.RateLimiter)
	}
	return v
}

// SubjectOf is what a spec of sum ran with, as known.Data.Explain needs it.
func SubjectOf(sum SuiteSummary, s Spec) known.Subject {
	return known.Subject{
		Spec:          s.Spec,
		Control:       slices.Contains(s.Labels, LabelNegativeControl),
		ClientGo:      sum.ClientGo,
		Replacement:   sum.ClientGoReplacement,
		GateOff:       GatesOff(sum.ClientGoGates),
		KubeAPIServer: sum.KubeAPIServer,
	}
}

// GatesOff says of a run's gates whether one is switched off.
func GatesOff(gates map[string]Gate) func(string) bool {
	return func(name string) bool {
		g, ok := gates[name]
		return ok && !g.Enabled
	}
}

// verdictCounts are a run's failures by verdict.
type verdictCounts struct {
	Known, Settings, Unexplained []Spec
}

func countVerdicts(specs []Spec) verdictCounts {
	var c verdictCounts
	for _, s := range specs {
		if outcomeOf(s) != outcomeFailed {
			continue
		}
		switch {
		case s.Verdict != nil && s.Verdict.Known:
			c.Known = append(c.Known, s)
		case s.Verdict != nil && s.Verdict.Settings != "":
			c.Settings = append(c.Settings, s)
		default:
			c.Unexplained = append(c.Unexplained, s)
		}
	}
	return c
}

// failuresMarkdown is the summary's list of failures, unexplained first:
// each with its verdict and the first line of its failure.
func failuresMarkdown(specs []Spec) string {
	c := countVerdicts(specs)
	if len(c.Known)+len(c.Settings)+len(c.Unexplained) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Failures: %d unexplained, %d maybe the client's settings, %d known\n\n", len(c.Unexplained), len(c.Settings), len(c.Known))
	b.WriteString("Known: a behaviour of this client-go release that the suite's verdict run traced upstream (the change, and the release that changed or fixed it). " +
		"The client's settings: no known behaviour explains it, and the client-side rate limiter held the spec's informers a second or more (rerun without the settings to tell). " +
		"Unexplained: anything else; look at these first.\n\n")
	for _, s := range c.Unexplained {
		why := "no verdict"
		if s.Verdict != nil {
			why = s.Verdict.Why
		}
		fmt.Fprintf(&b, "- **unexplained**: %s: %s (%s)\n", s.Spec, firstLine(s.Failure), why)
	}
	for _, s := range c.Settings {
		fmt.Fprintf(&b, "- **the client's settings?** %s: %s (%s)\n", s.Spec, firstLine(s.Failure), s.Verdict.Settings)
	}
	for _, s := range c.Known {
		fmt.Fprintf(&b, "- %s: %s\n", s.Spec, s.Verdict.Line())
	}
	return b.String()
}

// firstLine is the first non-empty line of s.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// settingsCause names the client setting that held an unexplained failing
// spec's requests and by how much: the client-side rate limiter.
func settingsCause(c *ClientSettings, w LimiterWaits) string {
	limiter := "client-go's client-side rate limiter"
	if c != nil {
		limiter += " (" + c.Limiter()
		if c.Hooked {
			limiter += ", as the downstream's hooks left it"
		}
		limiter += ")"
	}
	return limiter + " held the informers' requests: " + w.String()
}
