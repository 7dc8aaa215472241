package e2e

import (
	"context"
	"slices"

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

// watchRateLimiter records the limiter's holds of the requests to host
// (an informer config's Host) for the rest of the spec.
func (e *Env) watchRateLimiter(host string) {
	if e.limiter == nil {
		hooks := probe.RegisterMetricsHooks()
		if notOurs := limiterNotOurs(hooks); notOurs != "" {
			e.data.rateLimiter(report.LimiterWaits{NotObserved: notOurs})
			return
		}
		// client-go's metrics hooks are the process's: the spec holds the
		// process's state, and its failure's verdict finds the tap there.
		h := holdProcess(e.fe, "client-go's metrics hooks (the rate limiter's record)")
		tap := probe.TapMetrics(nil, nil, func(c probe.MetricCall) bool { return c.Hook == probe.HookRateLimiterLatency })
		e.limiter = tap
		h.setLimiter(tap)
		e.fe.DeferCleanup(0, func(context.Context) error {
			tap.Close()
			h.setLimiter(nil)
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
