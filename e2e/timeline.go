package e2e

import (
	"context"
	"fmt"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
	"github.com/informer-conformance/informer-conformance/e2e/probe"
)

// TimelineEntry names the report entry holding a spec's Timeline. It is
// never printed (the reports draw it); the HTML report (informer-report-
// <suite>.html) shows it as a picture per spec.
const TimelineEntry = "timeline"

// Timeline is what happened in one spec, in milliseconds since Origin (the
// moment its first instrument started): the faults in force (faultlog, as
// the backends, the fault proxy and the HTTP fault injectors record them),
// each informer's requests, dials, handler events, re-initialisations and
// convergence, and the bounds the spec asserted.
type Timeline struct {
	Origin    time.Time          `json:"origin"`
	EndMs     float64            `json:"endMs"`
	Faults    []TimelineFault    `json:"faults,omitempty"`
	Informers []InformerTimeline `json:"informers,omitempty"`
	Bounds    []Bound            `json:"bounds,omitempty"`
}

// TimelineFault is a fault window; EndMs < 0: still in force at the end.
type TimelineFault struct {
	Kind    string  `json:"kind"`
	Detail  string  `json:"detail,omitempty"`
	StartMs float64 `json:"startMs"`
	EndMs   float64 `json:"endMs"`
}

// InformerTimeline is one informer's record on the spec's time axis.
type InformerTimeline struct {
	Informer string            `json:"informer"`
	SyncedMs *float64          `json:"syncedMs,omitempty"`
	Requests []TimelineRequest `json:"requests,omitempty"`
	DialsMs  []float64         `json:"dialsMs,omitempty"`
	// DialErrors counts the dials that failed.
	DialErrors int               `json:"dialErrors,omitempty"`
	Events     []TimelineEvent   `json:"events,omitempty"`
	Reinits    []TimelineReinit  `json:"reinits,omitempty"`
	Converged  []float64         `json:"convergedMs,omitempty"`
	Checks     []TimelineRequest `json:"consistencyChecks,omitempty"`
}

// TimelineRequest is one request from start to end (EndMs < 0: open at the
// end), its kind (list, watch, streaming list, discovery), its status and
// how it ended.
type TimelineRequest struct {
	ID      int     `json:"id"`
	Kind    string  `json:"kind"`
	StartMs float64 `json:"startMs"`
	EndMs   float64 `json:"endMs"`
	Status  int     `json:"status,omitempty"`
	Ended   string  `json:"ended,omitempty"`
	Events  int     `json:"events,omitempty"`
}

// TimelineEvent is a handler call: Add, Update, Delete, "Delete
// (tombstone)", "Update (UID changed)".
type TimelineEvent struct {
	AtMs float64 `json:"atMs"`
	Kind string  `json:"kind"`
}

// TimelineReinit is a re-initialisation (probe.Reinitialisations) at its
// request's start.
type TimelineReinit struct {
	AtMs    float64 `json:"atMs"`
	Request int     `json:"request"`
	Cause   string  `json:"cause"`
}

// Bound is a bound a spec asserted: What happened At, FromMs being when the
// clock started, within BoundSeconds (Within) or not.
type Bound struct {
	What         string  `json:"what"`
	FromMs       float64 `json:"fromMs"`
	AtMs         float64 `json:"atMs"`
	BoundSeconds float64 `json:"boundSeconds"`
	Within       bool    `json:"within"`
}

// Seconds is how long it took.
func (b Bound) Seconds() float64 { return (b.AtMs - b.FromMs) / 1000 }

// specTimeline collects the current spec's timeline (one spec at a time
// per process, as the fault log).
type specTimeline struct {
	mark   int
	origin time.Time
	probes []*Observed
	bounds []Bound
}

var currentTimeline *specTimeline

// startTimeline starts the current spec's timeline, once: StartEnv and
// StartProbeUnsynced call it. Its clean-up, registered before any probe's,
// runs after the probes stopped and adds the TimelineEntry.
func startTimeline() *specTimeline {
	if currentTimeline != nil {
		return currentTimeline
	}
	t := &specTimeline{mark: faultlog.Mark(), origin: time.Now()}
	currentTimeline = t
	DeferCleanup(0, func(context.Context) error {
		currentTimeline = nil
		AddReportEntry(TimelineEntry, t.build(time.Now()))
		return nil
	})
	return t
}

// RecordBound adds a bound the spec asserts to its timeline: what took
// from..at, held to bound; met is false when the wait for it failed (at is
// then when it gave up). Call it before asserting, so a spec that fails on
// it still shows it.
func RecordBound(what string, from, at time.Time, bound time.Duration, met bool) {
	t := startTimeline()
	t.bounds = append(t.bounds, Bound{What: what, FromMs: t.ms(from), AtMs: t.ms(at), BoundSeconds: bound.Seconds(), Within: met && at.Sub(from) <= bound})
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
	for _, w := range faultlog.Since(t.mark) {
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
		kind := string(e.Kind)
		switch {
		case e.Tombstone:
			kind = "Delete (tombstone)"
		case e.UIDChanged():
			kind = "Update (UID changed)"
		}
		it.Events = append(it.Events, TimelineEvent{AtMs: t.ms(e.Time), Kind: kind})
	}
	for _, r := range probe.Reinitialisations(rec) {
		it.Reinits = append(it.Reinits, TimelineReinit{AtMs: t.ms(r.Request.Start), Request: r.Request.ID, Cause: string(r.Cause)})
	}
	for _, c := range converged {
		it.Converged = append(it.Converged, t.ms(c))
	}
	return it
}

// endedByServer is TimelineRequest.Ended of a stream the server closed
// cleanly (EOF): no failure.
const endedByServer = "closed by the server"

func (t *specTimeline) request(r probe.Request) TimelineRequest {
	q := TimelineRequest{ID: r.ID, Kind: r.Kind(), StartMs: t.ms(r.Start), EndMs: t.msOrOpen(r.End), Status: r.Status, Events: r.Events}
	switch {
	case r.Err != "":
		q.Ended = r.Err
	case r.ErrorCode != 0:
		q.Ended = fmt.Sprintf("ERROR event %d %s", r.ErrorCode, r.ErrorReason)
	case r.End.IsZero():
		q.Ended = "open"
	case r.CleanEOF:
		q.Ended = endedByServer
	}
	return q
}
