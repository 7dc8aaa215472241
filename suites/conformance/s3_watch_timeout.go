package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S3: the scenario, and what it expects of client-go, is
// scenarios.ResumesAfterServerTimeouts (server side) and
// scenarios.ResumesAfterDeadlineMidFrame (client side).
var _ = Describe("S3 watch timeouts", Label("watch-timeout"), func() {
	Context("when kube-apiserver ends each watch at its timeoutSeconds", func() {
		e2e.DescribeStacksAndSyncModes("resumes with a watch from its last resourceVersion, never relists, and misses no change",
			func(ctx SpecContext, m e2e.SyncMode) {
				scenarios.ResumesAfterServerTimeouts(ctx, m.Setup())
			}, Sample)

		It("fails when the client treats the end of a watch as an error", NegativeControl, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
			// A transport that turns the clean end of a watch body (io.EOF)
			// into a read error: the stream watcher reports it as an
			// InternalError and the reflector relists after every timeout.
			// The no-relist assertion must catch it.
			err := InterceptGomegaFailure(func() {
				scenarios.ResumesAfterServerTimeouts(ctx, e2e.ListWatch.WithClient(scenarios.EndOfWatchAsError))
			})
			Expect(err).To(MatchError(ContainSubstring(scenarios.S3NoRelist)), "the S3 no-relist assertion catches a client that relists at every timeout")
		})

		crd := e2e.ListWatch.OnStack(probe.StackDynamicCRD)
		It("fails when the client treats the end of a watch as an error ("+crd.Name+")", NegativeControl, crd.Decorations(), func(ctx SpecContext) {
			// The same broken transport under the dynamic client on the
			// custom resource (JSON watch frames, unstructured objects).
			err := InterceptGomegaFailure(func() { scenarios.ResumesAfterServerTimeouts(ctx, crd.WithClient(scenarios.EndOfWatchAsError)) })
			Expect(err).To(MatchError(ContainSubstring(scenarios.S3NoRelist)), "the S3 no-relist assertion catches a client that relists at every timeout on the custom resource")
		})

		// The CBOR stack's encoding check (e2e.ExpectStackEncoding, run by
		// every convergence check): a client whose requests ask for JSON
		// only is answered JSON by a server that serves CBOR, and must fail.
		cbor := e2e.ListWatch.OnStack(probe.StackDynamicCRDCBOR)
		It("fails when the client asks for JSON only ("+cbor.Name+")", NegativeControl, cbor.Decorations(), func(ctx SpecContext) {
			err := InterceptGomegaFailure(func() { scenarios.ResumesAfterServerTimeouts(ctx, cbor.WithClient(scenarios.AcceptJSONOnly)) })
			Expect(err).To(MatchError(ContainSubstring(e2e.AnsweredInCBOR)), "the CBOR stack's encoding check catches a client answered in JSON")
		})
	})

	// Typed (protobuf) only: the length-delimited protobuf framing is what
	// kubernetes#129683 broke; JSON and CBOR watch streams are framed
	// otherwise (a JSON decoder on the stream, CBOR self-delimiting data
	// items), and custom resources are never served in protobuf.
	Context("when a client-side deadline fires while a protobuf watch frame is half read", func() {
		e2e.DescribeSyncModes("ends the watch as a timeout and resumes it without relisting",
			func(ctx SpecContext, m e2e.SyncMode) {
				scenarios.ResumesAfterDeadlineMidFrame(ctx, m.Setup(), scenarios.MidFrameInput{})
			})

		It("fails with client-go v0.32's frame reader", NegativeControl, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
			// The informer built on v0.32's length-delimited frame reader
			// (see scenarios.PodsWithV032FrameReader) turns the deadline
			// into a decode error and relists: the no-relist assertion must
			// catch it. One sync mode: the control's hand-built ListWatch
			// stands for v0.32, which had no streaming lists by default.
			err := InterceptGomegaFailure(func() {
				scenarios.ResumesAfterDeadlineMidFrame(ctx, e2e.ListWatch.Setup(), scenarios.MidFrameInput{Informer: scenarios.PodsWithV032FrameReader})
			})
			Expect(err).To(MatchError(ContainSubstring(scenarios.S3NoRelist)), "the S3 no-relist assertion catches v0.32's relist after a deadline mid-frame")
		})
	})
})
