package conformance

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S26: the scenario, and what it expects of client-go, is
// scenarios.CancelledCall.
var _ = Describe("S26 a call whose context ends while client-go waits", Label("cancelled-call"), func() {
	DescribeTable("returns when its context ends, with an error",
		func(ctx SpecContext, w scenarios.S26Wait, end scenarios.S26End) {
			scenarios.CancelledCall(ctx, e2e.Setup{}, w, end)
		},
		Entry("waiting out a 429's Retry-After, cancelled", scenarios.WaitRetryAfter, scenarios.EndCancel, Label("release-sensitive"), Sample),
		Entry("waiting out a 429's Retry-After, deadline", scenarios.WaitRetryAfter, scenarios.EndDeadline, Label("release-sensitive")),
		Entry("waiting for the client-side rate limiter, cancelled", scenarios.WaitRateLimiter, scenarios.EndCancel),
		Entry("waiting for the client-side rate limiter, deadline", scenarios.WaitRateLimiter, scenarios.EndDeadline),
	)

	It("fails when the client holds its answers whatever the context", NegativeControl, func(ctx SpecContext) {
		// Every answer (the 429) handed over 5 s after it came: the call
		// returns 4 s after its context's end.
		err := InterceptGomegaFailure(func() {
			scenarios.CancelledCall(ctx, e2e.Setup{Client: scenarios.HoldAnswers(5 * time.Second)}, scenarios.WaitRetryAfter, scenarios.EndCancel)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.CallReturnsWhenItsContextEnds)), "the S26 assertion catches a call held past its context")
	})

	It("fails when the client's rate limiter ignores the context", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.CancelledCall(ctx, e2e.Setup{Client: scenarios.ContextIgnoringRateLimiter}, scenarios.WaitRateLimiter, scenarios.EndCancel)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.CallReturnsWhenItsContextEnds)), "the S26 assertion catches a rate limiter that waits past the context")
	})
})
