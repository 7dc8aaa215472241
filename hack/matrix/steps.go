package main

import (
	"fmt"
	"slices"
	"strings"
)

// What an upgrade step changes, judged: every outcome that differs between
// the step's two columns is a behaviour change tied to its upstream change
// (an entry of the verdict data applies to the newer column and not to the
// older), a flip of a known behaviour (an entry applies to both: a race
// one column lost, noise), or a break (no entry explains it); every
// observation change is tied to its upstream change or not yet. The
// step's verdict is one line: safe, N behaviour changes, or breaks.

// stepChange is one upstream change seen in a step: the specs whose
// outcome it changed and the observations it changed.
type stepChange struct {
	title, kind, upstream string
	links                 []string
	outcomes, obs         []string
}

// stepJudgement is an upgrade step judged.
type stepJudgement struct {
	step upgradeStep
	// err says why the step could not be compared ("" when it was).
	err string
	// breaks are worse outcomes no entry explains; fixedUnexplained
	// better ones.
	breaks, fixedUnexplained []string
	// changes are by upstream change, in order of first sight.
	changes []*stepChange
	// flips are outcomes that differ where a known behaviour holds on both
	// sides; untied are observation changes no upstream change explains
	// yet; noise counts the re-initialisation changes and the observations
	// that vary between runs (one run a column cannot tell them apart).
	flips, untied []string
	noise         int
	// suiteNoise counts, of noise, the observation changes the verdict
	// data names noise the suite marked varying since the columns ran.
	suiteNoise int
	specs      int
}

// judgeStep compares the step's columns as compare does and judges each
// difference with table (the verdict data's spec entries).
func judgeStep(s upgradeStep, table []verdict, n noise) stepJudgement {
	j := stepJudgement{step: s}
	base, err := loadSide(s.from.Dir)
	if err == nil {
		var head runSpecs
		if head, err = loadSide(s.to.Dir); err == nil {
			j.judge(base, head, table, n)
			return j
		}
	}
	j.err = err.Error()
	return j
}

func (j *stepJudgement) change(title, kind, upstream string, links []string) *stepChange {
	for _, c := range j.changes {
		if c.upstream == upstream {
			return c
		}
	}
	c := &stepChange{title: title, kind: kind, upstream: upstream, links: links}
	j.changes = append(j.changes, c)
	return c
}

func (j *stepJudgement) judge(base, head runSpecs, table []verdict, n noise) {
	from, to := j.step.from, j.step.to
	vFrom, vTo := j.step.versions()
	j.specs = len(head.specs)
	for _, s := range unionKeys(base.specs, head.specs) {
		b, h := base.specs[s], head.specs[s]
		var worse, better bool
		switch {
		case b.ran() && !h.ran():
			j.breaks = append(j.breaks, fmt.Sprintf("%s: ran on %s, not on %s", s, vFrom, vTo))
			continue
		case h.outcome == "failed" && (!b.ran() || b.outcome == "passed"):
			worse = true
		case b.outcome == "failed" && h.outcome == "passed":
			better = true
		default:
			continue
		}
		eFrom, eTo := explain(table, s, from), explain(table, s, to)
		line := fmt.Sprintf("%s: %s %s, %s %s", s, vFrom, orNotRun(b), vTo, h.outcome)
		switch {
		case len(eFrom) > 0 && len(eTo) > 0:
			j.flips = append(j.flips, line+" (a known behaviour of both releases: "+eTo[0].SpecContains+")")
		case worse && len(eTo) > 0:
			for _, e := range eTo {
				c := j.change(e.title(), e.Kind, e.Upstream, e.entry.Links)
				c.outcomes = append(c.outcomes, line)
			}
		case better && len(eFrom) > 0:
			for _, e := range eFrom {
				c := j.change(e.title(), e.Kind, e.Upstream, e.entry.Links)
				c.outcomes = append(c.outcomes, line)
			}
		case worse:
			j.breaks = append(j.breaks, line+failureOf(specResult{}, h))
		default:
			j.fixedUnexplained = append(j.fixedUnexplained, line)
		}
	}
	c := compareRuns(base, head, n)
	j.noise = len(c.causes) + c.varyingObservations
	for i, line := range observationLines(c.observations) {
		if n.suiteNoise(line, from, to) {
			j.noise++
			j.suiteNoise++
			continue
		}
		ks := j.step.explainObservation(c.observations[i].sentence)
		if len(ks) == 0 {
			j.untied = append(j.untied, line)
			continue
		}
		for _, k := range ks {
			ch := j.change(shortUpstream(k.Upstream)+" ("+k.ID+")", k.Kind, k.Upstream, k.Links)
			ch.obs = append(ch.obs, line)
		}
	}
}

// orNotRun is a spec's outcome on a side, "not run" when it did not run.
func orNotRun(r specResult) string {
	if !r.ran() {
		return "not run"
	}
	return r.outcome
}

// scenarioOf is the scenario ID a spec text starts with ("S17").
func scenarioOf(spec string) string { return strings.Fields(spec + " ?")[0] }

// title names the change an entry explains in a step: its scenario and
// upstream change, or, for an entry of a kube-apiserver range (one that
// may match the specs of many scenarios), the servers and the change.
func (v verdict) title() string {
	if r := v.entry.KubeAPIServer; r != nil {
		return "kube-apiserver " + r.String() + ": " + shortUpstream(v.Upstream)
	}
	return scenarioOf(v.SpecContains) + ": " + shortUpstream(v.Upstream)
}

// shortUpstream is an upstream change's name: its text up to the first
// " (" or ":" ("kubernetes PR #134180").
func shortUpstream(u string) string {
	if i := strings.IndexAny(u, "(:"); i > 0 {
		return strings.TrimSpace(u[:i])
	}
	return u
}

// verdict is the step's one line.
func (j stepJudgement) verdict() string {
	if j.err != "" {
		return "not compared: " + j.err
	}
	var line string
	switch {
	case len(j.breaks) > 0:
		var specs []string
		for _, b := range j.breaks {
			specs = append(specs, strings.SplitN(b, ": ", 2)[0])
		}
		line = fmt.Sprintf("**breaks**: %d spec(s) no known change explains (%s)", len(j.breaks), specList(specs))
	case len(j.changes) > 0:
		line = fmt.Sprintf("%d behaviour change(s)", len(j.changes))
	case len(j.untied)+len(j.fixedUnexplained) > 0:
		line = "no known behaviour change"
	default:
		line = "safe: no behaviour change (outcomes, and observations beyond their run-to-run noise)"
	}
	if len(j.changes) > 0 {
		var t []string
		for _, c := range j.changes {
			t = append(t, c.title)
		}
		if len(j.breaks) > 0 {
			line += fmt.Sprintf("; also %d behaviour change(s)", len(j.changes))
		}
		line += ": " + strings.Join(t, "; ")
	}
	if len(j.untied) > 0 {
		line += fmt.Sprintf("; %d observation change(s) not yet tied upstream (a person should look)", len(j.untied))
	}
	if len(j.fixedUnexplained) > 0 {
		line += fmt.Sprintf("; %d spec(s) fixed without a known change", len(j.fixedUnexplained))
	}
	return line
}

// write writes the step's section: its verdict, each upstream change once
// with its counts and a collapsed list, the breaks, then the flips, the
// untied observations and the noise, collapsed.
func (j stepJudgement) write(b *strings.Builder) {
	fmt.Fprintf(b, "### %s\n\n%s.\n\n", j.step.heading(), upperFirst(j.verdict()))
	if j.err != "" {
		return
	}
	for _, l := range j.breaks {
		fmt.Fprintf(b, "- **breaks**: %s\n", l)
	}
	if len(j.breaks) > 0 {
		b.WriteString("\n")
	}
	for _, c := range j.changes {
		var counts []string
		if len(c.outcomes) > 0 {
			counts = append(counts, fmt.Sprintf("%d outcome(s)", len(c.outcomes)))
		}
		if len(c.obs) > 0 {
			counts = append(counts, fmt.Sprintf("%d observation(s)", len(c.obs)))
		}
		links := ""
		if len(c.links) > 0 {
			links = " (" + strings.Join(c.links, ", ") + ")"
		}
		fmt.Fprintf(b, "- **%s**, %s: %s. %s%s.\n", c.title, c.kind, strings.Join(counts, ", "), upperFirst(c.upstream), links)
		collapsed(b, "  ", "what it changed", append(slices.Clone(c.outcomes), c.obs...))
	}
	if len(j.fixedUnexplained) > 0 {
		b.WriteString("- Fixed without a known change (a person should look):\n")
		for _, l := range j.fixedUnexplained {
			fmt.Fprintf(b, "  - %s\n", l)
		}
	}
	if len(j.untied) > 0 {
		fmt.Fprintf(b, "- %d observation change(s) not yet tied to an upstream change:\n", len(j.untied))
		collapsed(b, "  ", "the observations", j.untied)
	}
	if len(j.flips) > 0 || j.noise > 0 {
		suite := ""
		if j.suiteNoise > 0 {
			suite = fmt.Sprintf(", %d of them observations the suite has marked varying since this run (the verdict data's noise)", j.suiteNoise)
		}
		fmt.Fprintf(b, "- Not changes: %d flip(s) of a behaviour known on both releases, %d re-initialisation or varying-observation difference(s) within run-to-run noise (one run a column)%s.\n", len(j.flips), j.noise, suite)
		collapsed(b, "  ", "the flips", j.flips)
	}
	b.WriteString("\n")
}

// collapsed writes lines as a list folded under summary (nothing when
// empty).
func collapsed(b *strings.Builder, indent, summary string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "%s<details><summary>%s (%d)</summary>\n\n", indent, summary, len(lines))
	for _, l := range lines {
		fmt.Fprintf(b, "%s- %s\n", indent, l)
	}
	fmt.Fprintf(b, "\n%s</details>\n\n", indent)
}
