package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// The detector specs' texts (the verdict data names them too).
const (
	detectorDescribe = "client-go's watch-list consistency detector"
	detectorChecks   = "checks each streaming list with one LIST at its resourceVersion, which is no re-initialisation"
	detectorControl  = "fails, naming the detector and the informer, when a streaming list loses an object"
)

// The watch-list consistency detector's specs: the scenario, and what it
// expects of client-go, is scenarios.StreamingListChecked.
var _ = Describe(detectorDescribe, Label("consistency-detector"), func() {
	e2e.DescribeSyncModes(detectorChecks,
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.StreamingListChecked(ctx, m.Setup())
		}, Sample)

	It(detectorControl, NegativeControl, e2e.StreamingList.Decorations(), func(ctx SpecContext) {
		// A transport that drops the first object of every streaming
		// list's initial events: the informer would sync without it.
		// The detector's LIST has it.
		lossy, dropped := scenarios.LossyStreamingLists(ctx)
		err := InterceptGomegaFailure(func() { scenarios.StreamingListChecked(ctx, e2e.StreamingList.WithClient(lossy)) })
		Expect(err).To(MatchError(And(ContainSubstring(probe.DetectorReported), ContainSubstring("informer pods"))),
			"the spec fails on the detector's report, naming it and the informer")
		AddReportEntry("failure caught", err.Error())
		Expect(dropped()).To(BeNumerically(">=", 1), "the transport dropped an object")
	})
})
