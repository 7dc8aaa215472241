package report

import (
	"bytes"
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The run's summary, shared by the HTML report, the markdown report and
// the job summary of the GitHub workflows: outcomes per scenario, upstream
// limitations, re-initialisations by cause, the bounds the specs asserted.
type runSummary struct {
	Scenarios []scenarioCounts
	// Reinits are the re-initialisations of every informer of every spec
	// by cause, most frequent first.
	Reinits []causeCount
	// Bounds are the asserted bounds, missed ones first, then by how close
	// they came (took/bound, highest first).
	Bounds []specBound
	// Limitations are the specs that ran and whose name or notes say
	// UPSTREAM LIMITATION: behaviour of client-go the suite documents, not
	// hides ("(failed)" after the name of one that failed).
	Limitations []string
	Passed      int
	Failed      int
	Skipped     int
	// Unexplained are the failed specs no verdict entry explains and no
	// client setting may (Classify); Settings those the client's settings
	// may cause; the rest of Failed are known.
	Unexplained, Settings int
	// Interrupted are the specs another failure stopped (a parallel
	// process's, with --fail-fast): not failures of their own.
	Interrupted int
}

type scenarioCounts struct {
	Scenario                                  string
	Passed, Failed, Skipped, Interrupted, Lim int
}

// The outcomes a summary tells apart (Ginkgo's spec states).
const (
	outcomePassed      = "passed"
	outcomeFailed      = "failed"
	outcomeSkipped     = "skipped"
	outcomeInterrupted = "interrupted"
)

// outcomeOf is the summary's class of a spec's outcome: passed, skipped
// (pending too), interrupted (stopped by another spec's failure, not
// failed on its own) or failed (failed, panicked, timed out, aborted).
func outcomeOf(s Spec) string {
	switch s.Outcome {
	case "passed":
		return outcomePassed
	case "skipped", "pending":
		return outcomeSkipped
	case "interrupted":
		return outcomeInterrupted
	}
	return outcomeFailed
}

type causeCount struct {
	Cause string
	Count int
	Specs int
}

// LabelNegativeControl marks a spec run against a deliberately broken
// client, which passes only if the scenario's assertions fail.
const LabelNegativeControl = "negative-control"

type specBound struct {
	Spec string
	Bound
}

// Ratio is how much of its bound it took.
func (b specBound) Ratio() float64 {
	if b.BoundSeconds <= 0 {
		return 0
	}
	return b.Seconds() / b.BoundSeconds
}

var scenarioPrefix = regexp.MustCompile(`^S(\d+)\b`)

// scenarioOf is a spec's scenario, the ID its name starts with ("S1"; the
// Ginkgo specs made from a scenarios.Scenario are named ID, title, ...), or
// "other".
func scenarioOf(spec string) string {
	if m := scenarioPrefix.FindString(spec); m != "" {
		return m
	}
	return "other"
}

// compareScenarios orders S1, S2, ..., S10, ..., then other.
func compareScenarios(a, b string) int {
	na, ea := strconv.Atoi(strings.TrimPrefix(a, "S"))
	nb, eb := strconv.Atoi(strings.TrimPrefix(b, "S"))
	switch {
	case ea == nil && eb == nil:
		return cmp.Compare(na, nb)
	case ea == nil:
		return -1
	case eb == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// byScenario sorts specs by scenario, then by name (a stable order, not
// the completion order of parallel processes).
func byScenario(specs []Spec) []Spec {
	out := slices.Clone(specs)
	slices.SortStableFunc(out, func(a, b Spec) int {
		return cmp.Or(compareScenarios(scenarioOf(a.Spec), scenarioOf(b.Spec)), strings.Compare(a.Spec, b.Spec))
	})
	return out
}

// upstreamLimitation: the spec documents client-go behaviour it cannot
// change (its name says so, or it recorded one: Spec.UpstreamLimitation).
func upstreamLimitation(s Spec) bool {
	return s.UpstreamLimitation != "" || strings.Contains(strings.ToLower(s.Spec), "upstream limitation")
}

func summarize(specs []Spec) runSummary {
	var r runSummary
	counts := map[string]*scenarioCounts{}
	causes, causeSpecs := map[string]int{}, map[string]int{}
	for _, s := range specs {
		sc := scenarioOf(s.Spec)
		c := counts[sc]
		if c == nil {
			c = &scenarioCounts{Scenario: sc}
			counts[sc] = c
		}
		switch outcomeOf(s) {
		case outcomePassed:
			c.Passed++
			r.Passed++
		case outcomeSkipped:
			c.Skipped++
			r.Skipped++
		case outcomeInterrupted:
			c.Interrupted++
			r.Interrupted++
		default:
			c.Failed++
			r.Failed++
			switch {
			case s.Verdict != nil && s.Verdict.Known:
			case s.Verdict != nil && s.Verdict.Settings != "":
				r.Settings++
			default:
				r.Unexplained++
			}
		}
		// A limitation spec that ran documents it whatever its outcome (a
		// failed one may mean upstream changed): the count and the list
		// agree with the badges of the specs below them.
		if o := outcomeOf(s); upstreamLimitation(s) && (o == outcomePassed || o == outcomeFailed) {
			c.Lim++
			name := s.Spec
			if s.Outcome != "passed" {
				name += " (" + s.Outcome + ")"
			}
			r.Limitations = append(r.Limitations, name)
		}
		seen := map[string]bool{}
		for _, n := range s.Informers {
			for cause, k := range n.Reinitialisations {
				causes[string(cause)] += k
				if !seen[string(cause)] {
					seen[string(cause)] = true
					causeSpecs[string(cause)]++
				}
			}
		}
		// A negative control misses its bound on purpose: its bounds are in
		// its timeline, not among the run's.
		if s.Timeline != nil && !slices.Contains(s.Labels, LabelNegativeControl) {
			for _, b := range s.Timeline.Bounds {
				r.Bounds = append(r.Bounds, specBound{Spec: s.Spec, Bound: b})
			}
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(counts), compareScenarios) {
		r.Scenarios = append(r.Scenarios, *counts[k])
	}
	for c, n := range causes {
		r.Reinits = append(r.Reinits, causeCount{Cause: c, Count: n, Specs: causeSpecs[c]})
	}
	slices.SortFunc(r.Reinits, func(a, b causeCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Cause, b.Cause))
	})
	slices.SortStableFunc(r.Bounds, func(a, b specBound) int {
		if a.Within != b.Within {
			if !a.Within {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.Ratio(), a.Ratio())
	})
	return r
}

// maxSummaryBounds is how many bounds the summaries list (the closest to
// being missed; every one is drawn in its spec's timeline).
const maxSummaryBounds = 15

// summaryMarkdown is the summary as markdown: the top of the markdown
// report and the job summary of the GitHub workflows.
func summaryMarkdown(title, header string, r runSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Informer report: %s\n\n%s\n\n", title, header)
	fmt.Fprintf(&b, "**%d passed, %d failed, %d skipped**", r.Passed, r.Failed, r.Skipped)
	if r.Failed > 0 {
		fmt.Fprintf(&b, " (failed: **%d unexplained**, %d maybe the client's settings, %d known for this client-go: see Failures below)", r.Unexplained, r.Settings, r.Failed-r.Unexplained-r.Settings)
	}
	if r.Interrupted > 0 {
		fmt.Fprintf(&b, ", %d interrupted by another spec's failure (--fail-fast): not failures of their own", r.Interrupted)
	}
	if len(r.Limitations) > 0 {
		fmt.Fprintf(&b, "; %d specs that ran document an upstream limitation", len(r.Limitations))
	}
	b.WriteString("\n\n| scenario | passed | failed | skipped | upstream limitations |\n|---|---:|---:|---:|---:|\n")
	for _, s := range r.Scenarios {
		failed := strconv.Itoa(s.Failed)
		if s.Failed > 0 {
			failed = "**" + failed + "**"
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %d | %d |\n", s.Scenario, s.Passed, failed, s.Skipped, s.Lim)
	}
	if len(r.Reinits) > 0 {
		b.WriteString("\nRe-initialisations by cause: ")
		var parts []string
		for _, c := range r.Reinits {
			parts = append(parts, fmt.Sprintf("%s %d (%d specs)", c.Cause, c.Count, c.Specs))
		}
		b.WriteString(strings.Join(parts, ", ") + "\n")
	}
	if len(r.Bounds) > 0 {
		fmt.Fprintf(&b, "\nBounds, missed or closest first (%d asserted):\n\n| spec | what | took | bound | |\n|---|---|---:|---:|---|\n", len(r.Bounds))
		for _, sb := range r.Bounds[:min(len(r.Bounds), maxSummaryBounds)] {
			fmt.Fprintf(&b, "| %s | %s | %.2f s | %.0f s | %s |\n", sb.Spec, sb.What, sb.Seconds(), sb.BoundSeconds, boundVerdict(sb.Bound))
		}
	}
	for _, l := range r.Limitations {
		fmt.Fprintf(&b, "\n- upstream limitation: %s", l)
	}
	if len(r.Limitations) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

//go:embed report.html.tmpl
var reportTemplateText string

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"timeline": func(t *Timeline) template.HTML {
		// TimelineSVG escapes every text it draws.
		return template.HTML(TimelineSVG(t))
	},
	"counts":   Counts[string],
	"causes":   func(n Numbers) string { return Counts(n.Reinitialisations) },
	"scenario": scenarioOf,
	"failed":   func(s Spec) bool { return outcomeOf(s) == outcomeFailed },
	"limited":  upstreamLimitation,
	"pct":      func(r float64) string { return fmt.Sprintf("%.0f%%", 100*r) },
	"sub":      func(a, b int) int { return a - b },
}).Parse(reportTemplateText))

type scenarioGroup struct {
	Scenario string
	Specs    []Spec
}

// htmlReport renders sum as one self-contained HTML page: no script, no
// network; the timelines are inline SVG.
func htmlReport(sum SuiteSummary, title string) ([]byte, error) {
	specs := byScenario(sum.Specs)
	var groups []scenarioGroup
	var failing, interrupted []Spec
	for _, s := range specs {
		sc := scenarioOf(s.Spec)
		if len(groups) == 0 || groups[len(groups)-1].Scenario != sc {
			groups = append(groups, scenarioGroup{Scenario: sc})
		}
		groups[len(groups)-1].Specs = append(groups[len(groups)-1].Specs, s)
		switch outcomeOf(s) {
		case outcomeFailed:
			failing = append(failing, s)
		case outcomeInterrupted:
			interrupted = append(interrupted, s)
		}
	}
	r := summarize(specs)
	var nonDefault []string
	for _, name := range slices.Sorted(maps.Keys(sum.ClientGoGates)) {
		if g := sum.ClientGoGates[name]; g.Enabled != g.Default {
			nonDefault = append(nonDefault, fmt.Sprintf("%s=%t", name, g.Enabled))
		}
	}
	var b bytes.Buffer
	err := reportTemplate.Execute(&b, map[string]any{
		"Title":           title,
		"ClientGoUnknown": ClientGoUnknownLine(sum),
		"Sum":             sum,
		"Run":             r,
		"Bounds":          r.Bounds[:min(len(r.Bounds), maxSummaryBounds)],
		"NonDefault":      nonDefault,
		"Failing":         failing,
		"Interrupted":     interrupted,
		"Groups":          groups,
		"Requests":        requestColours,
		"Events":          eventColours,
	})
	return b.Bytes(), err
}

// boundVerdict is Bound.Verdict in markdown: a missed bound in bold.
func boundVerdict(b Bound) string {
	if v := b.Verdict(); v != "MISSED" {
		return v
	}
	return "**MISSED**"
}
