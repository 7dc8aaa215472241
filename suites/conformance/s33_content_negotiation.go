package conformance

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// S33: the scenario, and what it expects of client-go, is
// scenarios.StackEncodings and scenarios.TableAnswers.
var _ = Describe("S33 content negotiation", Label("content-negotiation"), func() {
	// The typed entries: client-go's CBOR gates off, on the default
	// cluster, every stack but the CBOR one. The CBOR entries (extra-stack,
	// make e2e-stacks): the gates on and kube-apiserver serving CBOR (flag
	// profile cbor), every stack; what each dynamic client asks for changes.
	cbor := probe.StackDynamicCRDCBOR
	DescribeTable("each informer stack asks for its encoding and gets it",
		func(ctx SpecContext, m e2e.SyncMode) {
			scenarios.StackEncodings(ctx, m.Setup())
		},
		e2e.StreamingList.Entry(""),
		e2e.ListWatch.Entry(""),
		e2e.StreamingList.OnStack(cbor).Entry("client-go's CBOR gates on"),
		e2e.ListWatch.OnStack(cbor).Entry("client-go's CBOR gates on"),
	)

	// A streaming list answered in the Table format needs kube-apiserver
	// 1.34+ (kubernetes PR #132817: watch-list in the Table format).
	streamingTable := e2e.KubeAPIServer(">= 1.34.0")
	DescribeTable("a list answered as a Table is reported, not taken for a list",
		func(ctx SpecContext, m e2e.SyncMode, c scenarios.TableClient) {
			scenarios.TableAnswers(ctx, m.Setup(), c, nil)
		},
		e2e.StreamingList.Entry(string(scenarios.TableTypedClient), scenarios.TableTypedClient, Sample, streamingTable),
		e2e.ListWatch.Entry(string(scenarios.TableTypedClient), scenarios.TableTypedClient, Sample),
		e2e.StreamingList.Entry(string(scenarios.TableListWatch), scenarios.TableListWatch, streamingTable),
		e2e.ListWatch.Entry(string(scenarios.TableListWatch), scenarios.TableListWatch),
		e2e.StreamingList.Entry(string(scenarios.TableDynamic), scenarios.TableDynamic, streamingTable),
		// v0.31-v0.35 sync an empty store (scenarios.TableReportFrom).
		e2e.ListWatch.Entry(string(scenarios.TableDynamic), scenarios.TableDynamic, Label("release-sensitive")),
	)

	It("fails when the client's config asks for JSON on the typed stack", NegativeControl, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
		if src := e2e.InformerSource(); src != "" {
			e2e.Skip(fmt.Sprintf("the typed stack's informer is built by informer source %s, whose encoding S33 records and does not judge: the control would test nothing", src))
		}
		err := InterceptGomegaFailure(func() { scenarios.StackEncodings(ctx, e2e.ListWatch.WithClient(scenarios.JSONContentConfig)) })
		Expect(err).To(MatchError(ContainSubstring(scenarios.StackAsked)), "the S33 check of what each stack asks for catches a config that overrides it")
	})

	It("fails when the client's transport asks for JSON only", NegativeControl, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() { scenarios.StackEncodings(ctx, e2e.ListWatch.WithClient(scenarios.AcceptJSONOnly)) })
		Expect(err).To(MatchError(ContainSubstring(scenarios.StackAnswered)), "the S33 check of each stack's answers catches a transport that rewrites Accept")
	})

	It("fails when the client takes a Table for an empty list", NegativeControl, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.TableAnswers(ctx, e2e.ListWatch.WithClient(scenarios.TableAsEmptyList), scenarios.TableTypedClient, nil)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.TableNotSynced)), "the S33 check catches an informer that syncs an empty store from a Table")
	})

	It("fails when the watch error handler loses the error", NegativeControl, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.TableAnswers(ctx, e2e.ListWatch.Setup(), scenarios.TableTypedClient, scenarios.DropWatchErrors)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.TableReported)), "the S33 check catches a Table answer nobody is told of")
	})

	It("fails when the client drops the Table's rows", NegativeControl, e2e.ListWatch.Decorations(), func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() {
			scenarios.TableAnswers(ctx, e2e.ListWatch.WithClient(scenarios.DropTableRows), scenarios.TableTypedClient, nil)
		})
		Expect(err).To(MatchError(ContainSubstring(scenarios.TableRows)), "the S33 check of the server's Table catches rows that went missing")
	})
})
