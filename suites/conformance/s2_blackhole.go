package conformance

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S2: the scenario, and what it expects of client-go, is in
// scenarios/s2_blackhole.go, shared with the e2e-framework features.
var _ = Describe("S2 stale HTTP/2 connection (network blackhole)", Label("blackhole"), func() {
	e2e.DescribeStacksAndSyncModes("detects the dead connection with the HTTP/2 health check and recovers every informer on a new one",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.RecoversFromStaleConnection(ctx, m.Setup(), scenarios.StaleConnection{
				ReadIdle: ptr.To(scenarios.ShortReadIdle), Ping: ptr.To(scenarios.ShortPingTimeout),
				Bound: scenarios.StaleRecoveryBound(scenarios.ShortReadIdle, scenarios.ShortPingTimeout),
			})
		}, Sample)

	// The defaults, the number users live with. One sync mode: detection
	// happens in the HTTP/2 transport below the reflector, and the short
	// variant above already covers both relist shapes; streaming lists are
	// client-go v0.36's default.
	It("recovers within client-go's default health check (30 s read-idle + 15 s ping)", Slow, e2e.StreamingList.Decorations(), func(ctx SpecContext) {
		scenarios.RecoversFromStaleConnection(ctx, e2e.StreamingList.Setup(), scenarios.StaleConnection{Bound: scenarios.StaleRecoveryBound(scenarios.DefaultReadIdle, scenarios.DefaultPingTimeout)})
	})

	It("fails when the HTTP/2 health check is disabled", NegativeControl, func(ctx SpecContext) {
		// HTTP2_READ_IDLE_TIMEOUT_SECONDS=0 turns the health check off: the
		// watch waits on the dead connection forever (the proxy keeps TCP
		// alive) and the recovery bound must catch it.
		err := InterceptGomegaFailure(func() {
			scenarios.RecoversFromStaleConnection(ctx, e2e.Setup{}, scenarios.StaleConnection{
				ReadIdle: ptr.To(time.Duration(0)), Ping: ptr.To(scenarios.ShortPingTimeout),
				Bound: scenarios.StaleRecoveryBound(scenarios.ShortReadIdle, scenarios.ShortPingTimeout),
			})
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.StaleRecovered)), "the S2 recovery bound catches a client that never notices")
	})
})
