package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S14: the scenario, and what it expects of client-go, is in
// scenarios/s14_missing_bookmark.go (scenarios.WaitsForTheBookmark,
// scenarios.RetriesWhenTheServerEndsTheStream,
// scenarios.FallsBackOnAVeryShortStream).
var _ = Describe("S14 streaming list without its end bookmark", Label("missing-bookmark"), e2e.StreamingList.Decorations(), e2e.ClientGo(">= 0.36.0"), func() {
	It("waits on the open stream: never synced, no LIST, warns at 10 s; WaitForCacheSync gives up at its bound; syncs once the stream ends with the bookmark let through", Sample, func(ctx SpecContext) {
		scenarios.WaitsForTheBookmark(ctx, e2e.StreamingList.Setup())
	})

	It("retries the streaming list at once each time the server ends a stream without the bookmark, never falls back to a LIST", func(ctx SpecContext) {
		scenarios.RetriesWhenTheServerEndsTheStream(ctx, e2e.StreamingList.Setup())
	})

	It("falls back to a LIST only when the streaming list ends within a second with no event", func(ctx SpecContext) {
		scenarios.FallsBackOnAVeryShortStream(ctx, e2e.StreamingList.Setup())
	})

	It("fails when the client syncs on a bookmark sent before the initial events", NegativeControl, func(ctx SpecContext) {
		// A transport that starts every streaming list with a synthesised
		// initial-events-end bookmark: the reflector "syncs" at once with an
		// empty store although the server's bookmark never came. The
		// no-sync assertion must catch it.
		err := InterceptGomegaFailure(func() {
			scenarios.WaitsForTheBookmark(ctx, e2e.StreamingList.WithClient(scenarios.EarlyInitialEventsEnd))
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.NoSyncWithoutBookmark)), "the S14 assertion catches a sync without the server's bookmark")
	})
})
