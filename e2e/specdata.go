package e2e

import (
	"context"
	"sync"
	"time"

	"github.com/informer-conformance/informer-conformance/report"
)

// specData collects what the harness measures of one spec
// (report.SpecData: the numbers per informer, the timeline, the time per
// phase, where its cluster came from) and writes it once, as the spec's
// report.SpecEntry, when the spec ends. StartEnv makes it before anything
// else, so that its clean-up runs after every other one (the cluster's
// close included). A nil *specData records nothing.
type specData struct {
	mu sync.Mutex
	d  report.SpecData
}

func newSpecData() *specData {
	s := &specData{}
	DeferCleanup(0, func(context.Context) error {
		s.mu.Lock()
		d := s.d
		s.mu.Unlock()
		AddReportEntry(report.SpecEntry, d)
		return nil
	})
	return s
}

// phase starts timing a phase of the spec; the func it returns ends it
// (once) and adds its time to the spec's, under name (package timing).
func (s *specData) phase(name string) (end func()) {
	if s == nil {
		return func() {}
	}
	start := time.Now()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.d.Time == nil {
				s.d.Time = map[string]float64{}
			}
			s.d.Time[name] += time.Since(start).Seconds()
		})
	}
}

// clusterFrom records where the spec's own cluster came from.
func (s *specData) clusterFrom(how string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d.ClusterFrom = how
}

// informer adds an informer's numbers.
func (s *specData) informer(n Numbers) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d.Informers = append(s.d.Informers, n)
}

// timeline sets the spec's timeline.
func (s *specData) timeline(t Timeline) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d.Timeline = &t
}

// TimePhase starts timing a phase of the spec; the func it returns ends it
// and adds its time to the spec's report (report.SpecData's Time). Name it
// after what the spec waits for ("server: graceful shutdown").
func (e *Env) TimePhase(name string) (end func()) { return e.data.phase(name) }

// ReportNumbers adds an informer's numbers to the spec's report (for
// numbers a spec narrowed itself, NumbersOf; a probe's: Observed.Report).
func (e *Env) ReportNumbers(n Numbers) { e.data.informer(n) }

// observe adds observations.
func (s *specData) observe(o ...report.Observation) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d.Observations = append(s.d.Observations, o...)
}

// Observe records what the spec saw its informer do, in a form two runs
// compare (report.Observation; hack/matrix compare lists every change):
// a value ("1, 2" transform calls per object), not a number that differs
// from run to run. The harness records each probe's requests, errors,
// resource versions, sync time and handler calls itself.
func (o *Observed) Observe(what, value string) {
	o.env.data.observe(report.Valued(o.Name, what, value))
}

// ObserveNumber is Observe of a number in unit (report.UnitSeconds,
// report.UnitCalls), compared beyond its unit's noise.
func (o *Observed) ObserveNumber(what string, n float64, unit string) {
	o.env.data.observe(report.Counted(o.Name, what, n, unit))
}

// Observe records what the spec itself saw (not one informer's), in a form
// two runs compare (Observed.Observe).
func (e *Env) Observe(what, value string) { e.data.observe(report.Valued("", what, value)) }

// ObserveNumber is Observe of a number in unit (report.UnitSeconds,
// report.UnitCalls, report.UnitMiB).
func (e *Env) ObserveNumber(what string, n float64, unit string) {
	e.data.observe(report.Counted("", what, n, unit))
}

// ObserveVarying is Observe of a value that two runs of the same code may
// differ in (report.Observation.Varies): compare lists its changes only
// between series of runs.
func (e *Env) ObserveVarying(what, value string) {
	e.data.observe(report.Varying(report.Valued("", what, value)))
}

// ObserveVaryingNumber is ObserveNumber of a number that two runs of the
// same code may put further apart than its unit's noise (a peak that
// depends on when the GC ran): report.Observation.Varies, so compare lists
// its changes only between series of runs.
func (e *Env) ObserveVaryingNumber(what string, n float64, unit string) {
	e.data.observe(report.Varying(report.Counted("", what, n, unit)))
}

// rateLimiter records what the client-side rate limiter held the spec's
// informer clients.
func (s *specData) rateLimiter(w report.LimiterWaits) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d.RateLimiter = &w
}
