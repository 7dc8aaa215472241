package conformance

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S31: the scenario, and what it expects of client-go, is
// scenarios.ResourceVersionAPIs.
var _ = Describe("S31 the informers' resource-version APIs", Label("resource-version"), func() {
	e2e.DescribeSyncModes("report the list's, the newest object's, the relist's and the bookmark's resourceVersion, never going backwards, in agreement",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.ResourceVersionAPIs(ctx, m.Setup(), nil)
		}, Sample)

	It("fails when the client's lists carry a resourceVersion the server did not send", NegativeControl, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.ResourceVersionAPIs(ctx, e2e.ListWatch.WithClient(scenarios.ListsAhead), nil)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.RVAtSync)), "the S31 sync assertion catches a version the list did not carry")
	})

	It("fails when the client's watches lose their events", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.ResourceVersionAPIs(ctx, e2e.Setup{Client: scenarios.LoseWatchEvents}, nil)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.RVFollowsWrites)), "the S31 writes assertion catches a version that does not follow the watch")
	})

	It("fails when the client's relists carry a resourceVersion the server did not send", NegativeControl, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
		if src := e2e.InformerSource(); src != "" {
			e2e.Skip(fmt.Sprintf("under informer source %s the control's rewrite of every informer LIST after the first on its config already reaches the shared informer's initial sync (measured: the sync reported a version its list did not carry): it cannot single out the relist it targets", src))
		}
		err := InterceptGomegaFailure(func() {
			scenarios.ResourceVersionAPIs(ctx, e2e.ListWatch.WithClient(scenarios.RelistsAhead), nil)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.RVAtRelist)), "the S31 relist assertion catches a version the new list did not carry")
	})

	It("fails when the client's watches lose their bookmarks", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.ResourceVersionAPIs(ctx, e2e.Setup{Client: scenarios.DropBookmarks}, nil)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.RVAtBookmark)), "the S31 bookmark assertion catches a version a bookmark does not move")
	})

	It("fails when the client's bookmarks carry an old resourceVersion", NegativeControl, func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.ResourceVersionAPIs(ctx, e2e.Setup{Client: scenarios.StaleBookmarks}, nil)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.RVNeverBackwards)), "the S31 assertion catches a version going backwards")
	})

	It("fails when a reader keeps the first version the controller reported", NegativeControl, func(ctx SpecContext) {
		// The API the broken reader reads reports nothing unless this gate
		// is on (off by default up to client-go v0.34).
		e2e.UseClientGoGate("InformerResourceVersion", true)
		err := InterceptGomegaFailure(func() {
			scenarios.ResourceVersionAPIs(ctx, e2e.Setup{}, scenarios.StaleControllerReader)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.RVAPIsAgree)), "the S31 agreement assertion catches an API that stopped following the informer")
	})
})
