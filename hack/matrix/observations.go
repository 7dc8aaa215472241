package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/informer-conformance/informer-conformance/report"
)

// What compare lists beside outcomes: the observations (report.Observation)
// of a spec that ran on both sides and differ. A value differs when no run
// of one side saw a value a run of the other saw (a series whose runs
// disagree among themselves shows no change); a number when the sides'
// ranges lie apart by more than its unit's noise; an observation appears
// or disappears when every run of one side has it and none of the other.
// Identical changes of several specs are one line, naming the specs.

// observed is one observation over a side's runs.
type observed struct {
	values  []string     // distinct values, in order of first sight
	numbers []float64    // one per run that had it
	unit    string       // the numbers' unit, for the reader
	class   report.Class // the noise class (report.Observation.NoiseClass)
	runs    int          // runs that had it
	varies  bool         // a run marked it as varying between runs (report.Observation.Varies)
	// occasional: a run marked it as observed or not with a fault's
	// timing, its value not (report.Observation.Occasional).
	occasional bool
}

// observationsOf adds a run's observations of a spec to acc.
func observationsOf(acc map[string]*observed, obs []report.Observation) {
	seen := map[string]bool{}
	for _, o := range obs {
		k := o.Key()
		a := acc[k]
		if a == nil {
			a = &observed{unit: o.Unit, class: o.NoiseClass()}
			acc[k] = a
		}
		if !seen[k] {
			seen[k] = true
			a.runs++
		}
		a.varies = a.varies || o.Varies
		a.occasional = a.occasional || o.Occasional
		if o.Number != nil {
			a.numbers = append(a.numbers, *o.Number)
		} else if !slices.Contains(a.values, o.Value) {
			a.values = append(a.values, o.Value)
		}
	}
}

// noiseOf is the noise rule of a class (report.Class, declared where the
// observation is recorded): durations as recoveries (n), counts apart by
// more than one call and half of BASE's, memory by more than 4 MiB and
// half of BASE's (S34's live heap peaks spread 64-78 MiB over four runs of
// the same code on a loaded machine; the change S34 is there to see, a
// streaming list's peak with a stripping transform, goes from about 37 to
// 6.5 MiB).
func noiseOf(class report.Class, n noise) noise {
	switch class {
	case report.Count:
		return noise{Seconds: 1, Ratio: 0.5}
	case report.Memory:
		return noise{Seconds: 4, Ratio: 0.5}
	}
	return n
}

// observationChange is one changed observation: the sentence, and the
// specs it holds for.
type observationChange struct {
	sentence string
	specs    []string
}

// compareObservations lists the observations that changed between base
// and head of the specs that ran on both sides, identical sentences once,
// and counts those it leaves out: observations that vary between runs of
// the same code, unless both sides are series (two runs or more each).
func compareObservations(base, head runSpecs, n noise) ([]observationChange, int) {
	bySentence := map[string]*observationChange{}
	var order []string
	add := func(spec, sentence string) {
		c := bySentence[sentence]
		if c == nil {
			c = &observationChange{sentence: sentence}
			bySentence[sentence] = c
			order = append(order, sentence)
		}
		c.specs = append(c.specs, spec)
	}
	series := base.runs >= 2 && head.runs >= 2
	varying := 0
	for _, s := range slices.Sorted(maps.Keys(base.specs)) {
		b, h := base.specs[s], head.specs[s]
		if !b.ran() || !h.ran() || b.outcome != h.outcome || b.control || h.control {
			// A changed outcome is listed as such; what a spec failing on
			// one side saw before it stopped is not comparable; a negative
			// control observes its deliberately broken client, which no
			// upstream change explains.
			continue
		}
		for _, k := range unionKeys(b.observations, h.observations) {
			bo, ho := b.observations[k], h.observations[k]
			sentence, ok := observationChanged(k, bo, ho, b.ranIn, h.ranIn, n)
			if occasional(bo, ho) {
				// Whether a class of errors comes, or a request a fault
				// brings, is the fault's timing: its appearing or not is
				// a change between series only; its stable text or its
				// value changing is one with a run a side
				// (errorTextChanged, observationChanged).
				switch {
				case bo != nil && ho != nil && errorTexts(bo, ho):
					sentence, ok = errorTextChanged(k, bo, ho)
				case bo != nil && ho != nil:
					// A value seen on both sides: compared as its class
					// says (observationChanged, above).
				case !series:
					if ok {
						varying++
					}
					continue
				}
			}
			switch {
			case !ok:
			case !series && (bo != nil && bo.varies || ho != nil && ho.varies):
				varying++
			default:
				add(s, sentence)
			}
		}
	}
	out := make([]observationChange, 0, len(order))
	for _, s := range order {
		out = append(out, *bySentence[s])
	}
	return out, varying
}

// occasional says whether the observation is observed or not with a
// fault's timing and its value is not: the stable texts of a class of
// errors, or an observation marked so (report.Observation.Occasional) that
// no run marked varying.
func occasional(b, h *observed) bool {
	if errorTexts(b, h) {
		return true
	}
	varies := b != nil && b.varies || h != nil && h.varies
	return !varies && (b != nil && b.occasional || h != nil && h.occasional)
}

// errorTexts says whether the observation of either side is the stable
// text of a class of errors (report.ErrorText).
func errorTexts(b, h *observed) bool {
	return b != nil && b.class == report.ErrorText || h != nil && h.class == report.ErrorText
}

// errorTextChanged is the sentence of a change of the stable texts of one
// class of errors, seen on both sides: no text of one side among the
// other's (a side's runs together).
func errorTextChanged(k string, b, h *observed) (string, bool) {
	if b == nil || h == nil {
		return "", false
	}
	bt, ht := b.texts(), h.texts()
	for _, t := range ht {
		if slices.Contains(bt, t) {
			return "", false
		}
	}
	return fmt.Sprintf("%s: the error text changed (its stable part, addresses, numbers and names masked) from %s to %s", k, quoteAll(bt), quoteAll(ht)), true
}

// texts are the distinct texts of an ErrorText observation over its runs,
// each stable part masked again as report.StableErrorText masks it now (a
// report written before a mask was added keeps what it masks).
func (o *observed) texts() []string {
	var out []string
	for _, v := range o.values {
		for _, t := range (report.Observation{Value: v}).Texts() {
			if t = report.StableErrorText(t, ""); !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " and ")
}

// observationChanged is the sentence of a change of what k names between
// BASE's b (over bRuns runs) and HEAD's h, if it changed.
func observationChanged(k string, b, h *observed, bRuns, hRuns int, n noise) (string, bool) {
	switch {
	case b == nil && h != nil && h.runs == hRuns:
		return fmt.Sprintf("%s appeared: %s", k, h.describe()), true
	case h == nil && b != nil && b.runs == bRuns:
		return fmt.Sprintf("%s disappeared (BASE: %s)", k, b.describe()), true
	case b == nil || h == nil:
		return "", false
	case len(b.numbers) > 0 && len(h.numbers) > 0:
		if noiseOf(b.class, n).beyond(b.numbers, h.numbers) {
			return fmt.Sprintf("%s moved from %s to %s", k, b.describe(), h.describe()), true
		}
	case len(b.values) > 0 && len(h.values) > 0:
		for _, v := range h.values {
			if slices.Contains(b.values, v) {
				return "", false
			}
		}
		return fmt.Sprintf("%s changed from %s to %s", k, b.describe(), h.describe()), true
	}
	return "", false
}

// describe is the values (quoted, "or" between a series' several), or
// the numbers' range in their unit.
func (o *observed) describe() string {
	if len(o.numbers) > 0 {
		lo, hi := slices.Min(o.numbers), slices.Max(o.numbers)
		unit := " " + o.unit
		if o.class == report.Duration {
			if hi-lo >= 0.05 {
				return fmt.Sprintf("%.2f-%.2f s", lo, hi)
			}
			return fmt.Sprintf("%.2f s", lo)
		}
		if lo == hi {
			return fmt.Sprintf("%g%s", lo, unit)
		}
		return fmt.Sprintf("%g-%g%s", lo, hi, unit)
	}
	var q []string
	for _, v := range o.values {
		q = append(q, fmt.Sprintf("%q", v))
	}
	return strings.Join(q, " or ")
}

// specList names up to three specs and how many more.
func specList(specs []string) string {
	if len(specs) <= 3 {
		return strings.Join(specs, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(specs[:3], "; "), len(specs)-3)
}

// observationLines are the changes as compare prints them.
func observationLines(cs []observationChange) []string {
	var out []string
	for _, c := range cs {
		if len(c.specs) == 1 {
			out = append(out, fmt.Sprintf("%s: %s", c.specs[0], c.sentence))
			continue
		}
		out = append(out, fmt.Sprintf("%s (%d specs: %s)", c.sentence, len(c.specs), specList(c.specs)))
	}
	return out
}
