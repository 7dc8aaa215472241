package e2e

import (
	"context"
	"fmt"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
	"github.com/informer-conformance/informer-conformance/report/timing"
)

// specTimeline collects a spec's timeline (its Env's).
type specTimeline struct {
	faults *faultlog.Log
	origin time.Time
	probes []*Observed
	bounds []Bound
}

// startTimeline starts the Env's timeline, with its fault log: StartEnv
// calls it, before any probe starts. Its clean-up, registered before any
// probe's, runs after the probes stopped and puts the timeline in the
// spec's data (the HTML report draws it).
func (e *Env) startTimeline() {
	t := &specTimeline{faults: e.Faults, origin: time.Now()}
	e.timeline = t
	e.fe.DeferCleanup(0, func(context.Context) error {
		e.data.timeline(t.build(time.Now()))
		defer e.TimePhase(timing.Observations)()
		e.data.observe(t.observations()...)
		return nil
	})
}

// observations are what the probes saw, each informer's, a fleet's as one
// (Observed.Fleet), in the order the probes started.
func (t *specTimeline) observations() []report.Observation {
	var out []report.Observation
	fleets := map[string][][]report.Observation{}
	var order []string
	for _, o := range t.probes {
		obs := o.markVarying(probe.Observations(o.Name, o.Namespace, o.Recorder.Snapshot()))
		switch {
		case o.Fleet == "":
			out = append(out, obs...)
		case fleets[o.Fleet] == nil:
			order = append(order, o.Fleet)
			fallthrough
		default:
			fleets[o.Fleet] = append(fleets[o.Fleet], obs)
		}
	}
	for _, f := range order {
		out = append(out, report.Fleet(fmt.Sprintf("%s (%d informers)", f, len(fleets[f])), fleets[f]...)...)
	}
	return out
}

// RecordBound adds a bound the spec asserts to its timeline: what took
// from..at, held to bound; met is false when the wait for it failed (at is
// then when it gave up). Call it before asserting, so a spec that fails on
// it still shows it.
func (e *Env) RecordBound(what string, from, at time.Time, bound time.Duration, met bool) {
	t := e.timeline
	t.bounds = append(t.bounds, Bound{What: what, FromMs: t.ms(from), AtMs: t.ms(at), BoundSeconds: bound.Seconds(), Within: met && at.Sub(from) <= bound})
}

// RecordBoundFailed adds a bound whose wait ended at at, within it or
// not, without what it waited for, for the reason why (the requests
// failed): the reports say the spec failed for that reason, not that it
// missed its bound.
func (e *Env) RecordBoundFailed(what string, from, at time.Time, bound time.Duration, why string) {
	t := e.timeline
	t.bounds = append(t.bounds, Bound{What: what, FromMs: t.ms(from), AtMs: t.ms(at), BoundSeconds: bound.Seconds(), Failed: why})
}

func (t *specTimeline) ms(at time.Time) float64 {
	return float64(at.Sub(t.origin).Microseconds()) / 1000
}

// msOrOpen is ms(at), or -1 for a zero time (still open).
func (t *specTimeline) msOrOpen(at time.Time) float64 {
	if at.IsZero() {
		return -1
	}
	return t.ms(at)
}

func (t *specTimeline) build(end time.Time) Timeline {
	tl := Timeline{Origin: t.origin, EndMs: t.ms(end), Bounds: t.bounds}
	for _, w := range t.faults.Windows() {
		tl.Faults = append(tl.Faults, TimelineFault{Kind: w.Kind, Detail: w.Detail, StartMs: t.ms(w.Start), EndMs: t.msOrOpen(w.End)})
	}
	for _, o := range t.probes {
		tl.Informers = append(tl.Informers, t.informer(o.Name, o.Recorder.Snapshot(), o.converged))
	}
	return tl
}

func (t *specTimeline) informer(name string, rec probe.Record, converged []time.Time) InformerTimeline {
	it := InformerTimeline{Informer: name}
	if !rec.Synced.IsZero() {
		s := t.ms(rec.Synced)
		it.SyncedMs = &s
	}
	for _, r := range rec.Requests {
		it.Requests = append(it.Requests, t.request(r))
	}
	for _, r := range rec.ConsistencyChecks {
		it.Checks = append(it.Checks, t.request(r))
	}
	for _, d := range rec.Dials {
		it.DialsMs = append(it.DialsMs, t.ms(d.Time))
		if d.Err != "" {
			it.DialErrors++
		}
	}
	for _, e := range rec.Events {
		it.Events = append(it.Events, TimelineEvent{AtMs: t.ms(e.Time), Kind: e.Class()})
	}
	for _, r := range probe.Reinitialisations(rec) {
		it.Reinits = append(it.Reinits, TimelineReinit{AtMs: t.ms(r.Request.Start), Request: r.Request.ID, Cause: string(r.Cause)})
	}
	for _, c := range converged {
		it.Converged = append(it.Converged, t.ms(c))
	}
	return it
}

func (t *specTimeline) request(r probe.Request) TimelineRequest {
	return TimelineRequest{ID: r.ID, Kind: r.Kind(), StartMs: t.ms(r.Start), EndMs: t.msOrOpen(r.End), Status: r.Status, Events: r.Events, Ended: r.Ended()}
}
