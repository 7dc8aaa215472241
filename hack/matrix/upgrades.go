package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/informer-conformance/informer-conformance/report/known"
)

// What each upgrade step of a verdict run changes: the default-gate
// columns paired as a downstream upgrades (upgradeSteps) and compared as
// `matrix compare` compares two runs: outcomes, re-initialisations and
// observations (every change, also those that fail no spec), each
// observation change looked up in knownChanges.

// knownChange is an upstream change an observation change is tied to (the
// verdict data's, report/known: known.json's changes and observations).
type knownChange = known.UpstreamChange

// explainChange is the known changes that explain a sentence of the step
// from one client-go version to the other.
func explainChange(sentence, from, to string) []knownChange {
	return knownData().ExplainObservation(sentence, known.ComponentClientGo, from, to)
}

// upgradeStep is two default-gate columns an upgrade goes between.
type upgradeStep struct {
	from, to column
	// what says which step it is ("patches of v0.36", "v0.36 to v0.37",
	// "to the next minor's pre-release").
	what string
}

// upgradeSteps pairs the default-gate columns that ran: a minor's first
// patch to its newest (what its patches changed), a minor's newest to the
// next minor's newest (an upgrade), and the newest release to the next
// minor's pre-release (what the next release will change).
// Against several servers, the steps are taken per server, each named.
func upgradeSteps(cols []column) []upgradeStep {
	byServer := map[server][]column{}
	for _, c := range cols {
		if len(c.Gates) == 0 && c.Error == "" && c.NotApplicable == "" && c.Dir != "" {
			byServer[c.server()] = append(byServer[c.server()], c)
		}
	}
	srvs := slices.SortedFunc(maps.Keys(byServer), compareServers)
	var steps []upgradeStep
	for _, s := range srvs {
		ss := clientGoSteps(byServer[s])
		if len(srvs) > 1 {
			for i := range ss {
				ss[i].what += ", against kube-apiserver " + orDash(s.Kube)
				if s.Etcd != "" {
					ss[i].what += " on etcd " + s.Etcd
				}
			}
		}
		steps = append(steps, ss...)
	}
	return steps
}

// clientGoSteps is upgradeSteps for columns against one server.
func clientGoSteps(ran []column) []upgradeStep {
	slices.SortFunc(ran, func(a, b column) int { return semver.Compare(a.ClientGo, b.ClientGo) })
	var steps []upgradeStep
	var prevNewest *column
	for i := 0; i < len(ran); {
		minor := semver.MajorMinor(ran[i].ClientGo)
		j := i
		for j+1 < len(ran) && semver.MajorMinor(ran[j+1].ClientGo) == minor {
			j++
		}
		first, newest := ran[i], ran[j]
		if prevNewest != nil {
			what := semver.MajorMinor(prevNewest.ClientGo) + " to " + minor
			if semver.Prerelease(newest.ClientGo) != "" {
				what = "the next minor's pre-release: what " + minor + " will change"
			}
			steps = append(steps, upgradeStep{from: *prevNewest, to: newest, what: what})
		}
		if first.ClientGo != newest.ClientGo {
			steps = append(steps, upgradeStep{from: first, to: newest, what: "patches of " + minor})
		}
		prevNewest = &ran[j]
		i = j + 1
	}
	return steps
}

// judgeSteps judges every upgrade step of cols (upgradeSteps) with table.
func judgeSteps(cols []column, table []verdict, n noise) []stepJudgement {
	var out []stepJudgement
	for _, s := range upgradeSteps(cols) {
		out = append(out, judgeStep(s, table, n))
	}
	return out
}

// writeStepVerdicts writes the verdict document's first section: a line
// per upgrade step.
func writeStepVerdicts(b *strings.Builder, steps []stepJudgement) {
	b.WriteString("## Verdict per upgrade step\n\n")
	if len(steps) == 0 {
		b.WriteString("No two default-gate columns with reports to compare (a document rendered from a matrix.json without the columns' directories, or one column).\n\n")
		return
	}
	b.WriteString("| step | verdict |\n|---|---|\n")
	for _, j := range steps {
		fmt.Fprintf(b, "| %s → %s (%s) | %s |\n", j.step.from.ClientGo, j.step.to.ClientGo, j.step.what, mdCell(j.verdict()))
	}
	b.WriteString("\nA behaviour change is an outcome or an observation that changed with a known upstream change (the verdict data, report/known/known.json); " +
		"a flip of a behaviour known on both releases, a re-initialisation count or an observation that varies between runs of the same code is noise, not a change (one run a column); " +
		"breaks names the specs no known change explains. The sections below say what each step changed.\n\n")
}

// writeUpgradeSteps writes the section of the verdict document that lists,
// per upgrade step, what changed.
func writeUpgradeSteps(b *strings.Builder, steps []stepJudgement) {
	b.WriteString("\n## What each upgrade changes\n\n")
	if len(steps) == 0 {
		b.WriteString("No two default-gate columns with reports to compare.\n\n")
		return
	}
	b.WriteString("Each step compares two default-gate columns as `make compare` does: outcomes, re-initialisations and observations " +
		"(what the informers did, also where no spec fails: the first request's shape, the encodings, what the specs observe). " +
		"Each upstream change once, with what it changed folded under it.\n\n")
	for _, j := range steps {
		j.write(b)
	}
}

// writeComparison writes what changed from one column to the other, as
// `make compare` compares two runs; explain ties an observation change's
// sentence to its upstream changes.
func writeComparison(b *strings.Builder, from, to column, explain func(sentence string) []knownChange, n noise) {
	base, err := loadSide(from.Dir)
	if err != nil {
		fmt.Fprintf(b, "Not compared: %v.\n\n", err)
		return
	}
	head, err := loadSide(to.Dir)
	if err != nil {
		fmt.Fprintf(b, "Not compared: %v.\n\n", err)
		return
	}
	c := compareRuns(base, head, n)
	lines := 0
	list := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(b, "%s:\n\n", title)
		for _, it := range items {
			fmt.Fprintf(b, "- %s\n", it)
		}
		b.WriteString("\n")
		lines += len(items)
	}
	list("Outcomes changed for the worse", c.outcomes)
	list("Fixed", c.fixed)
	list("Ran in the newer only", c.onlyHead)
	list("Re-initialisations", c.causes)
	var obs []string
	for i, line := range observationLines(c.observations) {
		known := explain(c.observations[i].sentence)
		if len(known) == 0 {
			obs = append(obs, line+" — not yet tied to an upstream change")
			continue
		}
		for _, k := range known {
			obs = append(obs, fmt.Sprintf("%s — **%s**: %s", line, k.Kind, k.Upstream))
		}
	}
	list("Observations", obs)
	if c.varyingObservations > 0 {
		fmt.Fprintf(b, "(%d observations that vary between runs of the same code differ too; a series a side would tell which changed.)\n\n", c.varyingObservations)
	}
	if lines == 0 {
		fmt.Fprintf(b, "No change: %d specs, the same outcomes, re-initialisations and observations.\n\n", len(head.specs))
	}
}
