package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S4: the scenario, and what it expects of client-go, is
// scenarios.ExpectReinitialisations (error classes) and
// scenarios.ExpectThrottledRecovery (throttling past the REST client).
var _ = Describe("S4 error classes on a watch", Label("error-class"), e2e.ListWatch.Decorations(), func() {
	DescribeTable("re-initialise exactly when the error calls for it",
		func(ctx SpecContext, ec scenarios.ErrorClass) {
			scenarios.ExpectReinitialisations(ctx, e2e.ListWatch.Setup(), ec)
		},
		errorClassEntries(),
	)

	It("fails when the client cannot tell a 429 from a failure", NegativeControl, func(ctx SpecContext) {
		// A transport that turns every non-2xx answer into an error hides
		// the 429 from the reflector, which then relists: the no-relist
		// assertion must catch it.
		err := InterceptGomegaFailure(func() {
			scenarios.ExpectReinitialisations(ctx, e2e.ListWatch.WithClient(httpfault.StatusesAsErrors), scenarios.ThrottledWatchOpen)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.ErrorClassReinits)), "the S4 assertion catches a relist after 429")
	})
})

var _ = Describe("S4 throttling past the REST client", Label("error-class"), func() {
	DescribeTable("the reflector backs off and resumes from its resourceVersion, never relists",
		func(ctx SpecContext, m e2e.SyncMode, t scenarios.Throttle) {
			scenarios.ExpectThrottledRecovery(ctx, m.Setup(), t)
		},
		e2e.StreamingList.Entry("2 429s without Retry-After opening resuming watches", scenarios.ThrottledNoRetryAfter, Sample),
		e2e.ListWatch.Entry("2 429s without Retry-After opening resuming watches", scenarios.ThrottledNoRetryAfter),
		e2e.StreamingList.Entry("11 429s with Retry-After: 1 opening a resuming watch", scenarios.ThrottledPastRetries),
		e2e.ListWatch.Entry("11 429s with Retry-After: 1 opening a resuming watch", scenarios.ThrottledPastRetries),
		e2e.StreamingList.Entry("2 429 ERROR events in resuming watches", scenarios.ThrottledEvents),
		e2e.ListWatch.Entry("2 429 ERROR events in resuming watches", scenarios.ThrottledEvents),
	)

	// LIST+WATCH mode has no streaming list: its relist is a LIST.
	DescribeTable("a relist's streaming list backs off and streams again from its resourceVersion, never falls back to a LIST",
		func(ctx SpecContext, m e2e.SyncMode, t scenarios.Throttle) {
			scenarios.ExpectThrottledRecovery(ctx, m.Setup(), t)
		},
		e2e.StreamingList.Entry("2 429s without Retry-After", scenarios.ThrottledNoRetryAfter.OnRelist()),
		e2e.StreamingList.Entry("11 429s with Retry-After: 1", scenarios.ThrottledPastRetries.OnRelist()),
	)

	// A client stack that takes a 429 without Retry-After for a failure: the
	// reflector relists from watch() and falls back to a LIST from
	// watchList(). The re-initialisation assertion must catch both.
	It("fails when the client takes a 429 without Retry-After on a resuming watch for a failure", NegativeControl, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.ExpectThrottledRecovery(ctx, e2e.ListWatch.WithClient(httpfault.TooManyRequestsAsInternalErrors), scenarios.ThrottledNoRetryAfter)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.ThrottledReinits)), "the S4 throttling assertion catches a relist after a 429")
	})

	It("fails when the client takes a 429 without Retry-After on a relist's streaming list for a failure", NegativeControl, e2e.StreamingList.Decorations(), func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.ExpectThrottledRecovery(ctx, e2e.StreamingList.WithClient(httpfault.TooManyRequestsAsInternalErrors), scenarios.ThrottledNoRetryAfter.OnRelist())
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.ThrottledReinits)), "the S4 throttling assertion catches a fallback to LIST after a 429")
	})
})

// errorClassEntries are the table's entries: one per error class
// (scenarios.ErrorClasses), named after it.
func errorClassEntries() []TableEntry {
	GinkgoHelper()
	var entries []TableEntry
	for _, ec := range scenarios.ErrorClasses {
		entries = append(entries, Entry(ec.Name, ec))
	}
	return entries
}
