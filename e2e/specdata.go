package e2e

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/informer-conformance/informer-conformance/report"
)

// specData collects what the spec's Env fills of its report.Spec (its
// sync mode and stack, the numbers per informer, the timeline, the time
// per phase, where its cluster came from, the observations, the notes) and
// writes it once, as the spec's report.SpecEntry, when the spec ends.
// StartEnv makes it before anything else, so that its clean-up runs after
// every other one (the cluster's close included). A nil *specData records
// nothing.
type specData struct {
	mu sync.Mutex
	d  report.Spec
}

func newSpecData(fe FrontEnd) *specData {
	s := &specData{}
	fe.DeferCleanup(0, func(context.Context) error {
		s.mu.Lock()
		d := s.d
		s.mu.Unlock()
		fe.AddReportEntry(report.SpecEntry, d)
		return nil
	})
	return s
}

// Phase starts timing a phase of the spec; the func it returns ends it
// (once) and adds its time to the spec's, under name (package timing).
func (s *specData) Phase(name string) (end func()) {
	if s == nil {
		return func() {}
	}
	start := time.Now()
	var once sync.Once
	return func() {
		once.Do(func() {
			took := time.Since(start).Seconds()
			s.set(func(d *report.Spec) {
				if d.Time == nil {
					d.Time = map[string]float64{}
				}
				d.Time[name] += took
			})
		})
	}
}

// ClusterFrom records where the spec's own cluster came from.
func (s *specData) ClusterFrom(how string) {
	s.set(func(d *report.Spec) { d.ClusterFrom = how })
}

// informer adds an informer's numbers.
func (s *specData) informer(n Numbers) {
	s.set(func(d *report.Spec) { d.Informers = append(d.Informers, n) })
}

// timeline sets the spec's timeline.
func (s *specData) timeline(t Timeline) {
	s.set(func(d *report.Spec) { d.Timeline = &t })
}

// TimePhase starts timing a phase of the spec; the func it returns ends it
// and adds its time to the spec's report (report.Spec's Time). Name it
// after what the spec waits for ("server: graceful shutdown").
func (e *Env) TimePhase(name string) (end func()) { return e.data.Phase(name) }

// ReportNumbers adds an informer's numbers to the spec's report (for
// numbers a spec narrowed itself, NumbersOf; a probe's: Observed.Report).
func (e *Env) ReportNumbers(n Numbers) { e.data.informer(n) }

// observe adds observations.
func (s *specData) observe(o ...report.Observation) {
	s.set(func(d *report.Spec) { d.Observations = append(d.Observations, o...) })
}

// Observe records what the spec saw its informer do, in a form two runs
// compare (hack/matrix compare lists every change beyond its noise class):
// a report.Value, Calls, Seconds or MiB, whose constructor declares the
// class; Varying when two runs of the same code may differ in it beyond
// that. The harness records each probe's requests, errors, resource
// versions, sync time and handler calls itself.
func (o *Observed) Observe(obs report.Observation) {
	o.env.data.observe(obs.Of(o.Name))
}

// Observe records what the spec itself saw (not one informer's), in a form
// two runs compare (Observed.Observe).
func (e *Env) Observe(obs report.Observation) { e.data.observe(obs) }

// rateLimiter records what the client-side rate limiter held the spec's
// informer clients.
func (s *specData) rateLimiter(w report.LimiterWaits) {
	s.set(func(d *report.Spec) { d.RateLimiter = &w })
}

// set changes the spec's record under its lock.
func (s *specData) set(f func(d *report.Spec)) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.d)
}

// Note records the scenario's outcome in words under name ("S7 outcome"),
// in the spec's report (report.Spec's Notes: for the reader, never read
// back; what two runs compare is an Observation) and on the console where
// the test framework shows a spec's entries. A second note of one name
// replaces the first.
func (e *Env) Note(name string, value any) {
	text := noteText(value)
	e.data.set(func(d *report.Spec) {
		if d.Notes == nil {
			d.Notes = map[string]string{}
		}
		d.Notes[name] = text
	})
	e.fe.AddReportEntry(name, value)
}

// noteText is a note's value in words, as Ginkgo shows a report entry's: a
// Stringer's String, else the value with its fields named (%+v).
func noteText(value any) string { return fmt.Sprintf("%+v", value) }

// UpstreamLimitation records the client-go behaviour the spec documents
// and cannot change, as it found it (report.Spec's UpstreamLimitation: the
// reports mark the spec with it).
func (e *Env) UpstreamLimitation(why string) {
	e.data.set(func(d *report.Spec) { d.UpstreamLimitation = why })
}

// Note is Env.Note of the informer's spec.
func (o *Observed) Note(name string, value any) { o.env.Note(name, value) }
