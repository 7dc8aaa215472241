package e2e

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
)

// The client-side rate limiter of the informers' clients (client-go's:
// QPS 5 and burst 10 unless the config says otherwise, or a downstream's
// own through its Config hook) is part of what a spec judges: a re-watch
// held seconds by it is held by the client's settings, not by client-go's
// behaviour. Each spec records what the limiter held its informers'
// requests through client-go's own measurement of it (the RateLimiterLatency
// metrics hook, tools/metrics), its report says so (report.LimiterWaits),
// and an unexplained failure with the limiter holding a second or more
// says the settings may cause it (report.Classify, and the failure
// message's verdict line).

// currentLimiter is the running spec's limiter record, for the failure
// message's verdict (one spec runs at a time per process: UseFrontEnd).
var currentLimiter atomic.Pointer[probe.MetricsTap]

// watchRateLimiter records the limiter's holds of the requests to host
// (an informer config's Host) for the rest of the spec.
func (e *Env) watchRateLimiter(host string) {
	if e.limiter == nil {
		hooks := probe.RegisterMetricsHooks()
		if notOurs := limiterNotOurs(hooks); notOurs != "" {
			e.data.rateLimiter(report.LimiterWaits{NotObserved: notOurs})
			return
		}
		tap := probe.TapMetrics(nil, nil, func(c probe.MetricCall) bool { return c.Hook == probe.HookRateLimiterLatency })
		e.limiter = tap
		currentLimiter.Store(tap)
		DeferCleanup(0, func(context.Context) error {
			tap.Close()
			currentLimiter.CompareAndSwap(tap, nil)
			e.data.rateLimiter(probe.LimiterWaits(tap.Calls()))
			return nil
		})
	}
	e.limiter.Watch(host)
}

// limiterNotOurs says why the limiter's holds cannot be recorded: another
// registrant of client-go's metrics hooks took RateLimiterLatency first.
func limiterNotOurs(h probe.MetricsHooks) string {
	if slices.Contains(h.NotOurs, probe.HookRateLimiterLatency) {
		return "another registrant of client-go's metrics hooks (tools/metrics.Register, once per process) took RateLimiterLatency first"
	}
	return ""
}

// currentLimiterWaits is what the limiter held the running spec's
// informers so far (nil when not recorded).
func currentLimiterWaits() *report.LimiterWaits {
	tap := currentLimiter.Load()
	if tap == nil {
		return nil
	}
	w := probe.LimiterWaits(tap.Calls())
	return &w
}
