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

// upgradeStep is two default-gate columns an upgrade goes between: of
// client-go (the same server), or of one server component (the same
// client-go and the other component).
type upgradeStep struct {
	from, to column
	// what says which step it is ("patches of v0.36", "v0.36 to v0.37",
	// "to the next minor's pre-release"; of a server step, what stays:
	// "client-go v0.37.2, etcd v3.7.3").
	what string
	// component is what the step upgrades: known.ComponentClientGo (or
	// empty), ComponentKubeAPIServer or ComponentEtcd.
	component string
}

// versions are the step's two versions of the component it upgrades.
func (s upgradeStep) versions() (from, to string) {
	switch s.component {
	case known.ComponentKubeAPIServer:
		return s.from.Kube, s.to.Kube
	case known.ComponentEtcd:
		return s.from.Etcd, s.to.Etcd
	}
	return s.from.ClientGo, s.to.ClientGo
}

// heading names the step: "v0.36.6 → v0.37.2 (v0.36 to v0.37)", or of a
// server step "kube-apiserver v1.36.3 → v1.37.2 (client-go v0.37.2, etcd
// v3.7.3)".
func (s upgradeStep) heading() string {
	from, to := s.versions()
	h := fmt.Sprintf("%s → %s (%s)", from, to, s.what)
	if s.component != "" && s.component != known.ComponentClientGo {
		h = s.component + " " + h
	}
	return h
}

// explainObservation is the known changes that explain an observation
// sentence of the step, from the version of its component to the other.
func (s upgradeStep) explainObservation(sentence string) []knownChange {
	from, to := s.versions()
	if s.component == "" || s.component == known.ComponentClientGo {
		return explainChange(sentence, from, to)
	}
	return explainServerChange(sentence, s.component, from, to)
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
	// Servers with one client-go (a server step's columns) have no
	// client-go step: name the server only where several have some.
	perServer := make([][]upgradeStep, len(srvs))
	withSteps := 0
	for i, s := range srvs {
		if perServer[i] = clientGoSteps(byServer[s]); len(perServer[i]) > 0 {
			withSteps++
		}
	}
	var steps []upgradeStep
	for i, s := range srvs {
		ss := perServer[i]
		if withSteps > 1 {
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
		fmt.Fprintf(b, "| %s | %s |\n", j.step.heading(), mdCell(j.verdict()))
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
