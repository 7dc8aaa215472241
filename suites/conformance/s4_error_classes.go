package conformance

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/e2e/probe"
)

// S4 (seeds 000, 003): each error the server can answer a watch with, and the
// re-initialisation it must or must not cause. Injected by e2e/httpfault in
// the client's transport (TLS, HTTP/2 and the apiserver stay real), with
// streaming lists off so the informer opens resuming watches right after its
// LIST.
//
// Expected of client-go v0.36, tools/cache/reflector.go:
//   - watch: an ERROR event ends handleWatch with the decoded status error;
//     isExpiredError (410) and "too large resource version" are logged, any
//     other error is "watch ended with error"; apierrors.IsInternalError is
//     retried only when MaxInternalErrorRetryDuration > 0, which shared
//     informers never set. Either way watch() returns and ListAndWatch starts
//     over: one relist.
//   - a watch that closes within a second with no event is "very short
//     watch" (handleAnyWatch): an error, so one relist.
//   - opening a watch: isWatchErrorRetriable treats connection refused and
//     429 as retriable (back off, watch again, no relist); any other status
//     returns the error from ListAndWatch: one relist after backoff.
type errorClass struct {
	inject func(*httpfault.Injector) (restore func(), answered func() int)
	times  int
	want   map[probe.Cause]int
}

// watchTimeout bounds waiting for every injection to be answered and a real
// watch to be open again (reflector backoff starts at 800 ms).
const watchTimeout = 30 * time.Second

var _ = Describe("S4 error classes on a watch", Label("error-class"), func() {
	DescribeTable("re-initialise exactly when the error calls for it",
		func(ctx SpecContext, ec errorClass) { expectReinitialisations(ctx, ec, false) },
		Entry("410 Gone event: relist", errorClass{
			inject: func(in *httpfault.Injector) (func(), func() int) {
				return in.EndWatchesWithError(httpfault.Watches, 1, 410, metav1.StatusReasonExpired, "too old resource version: 1 (2)")
			}, times: 1, want: map[probe.Cause]int{probe.CauseGone: 1}}),
		Entry("too large resource version event: relist", errorClass{
			inject: func(in *httpfault.Injector) (func(), func() int) {
				return in.EndWatchesWithError(httpfault.Watches, 1, 504, metav1.StatusReasonTimeout, "Too large resource version: 1000, current: 10")
			}, times: 1, want: map[probe.Cause]int{probe.CauseTooLargeRV: 1}}),
		Entry("500 InternalError event: relist (shared informers cannot opt into the retry)", errorClass{
			inject: func(in *httpfault.Injector) (func(), func() int) {
				return in.EndWatchesWithError(httpfault.Watches, 1, 500, metav1.StatusReasonInternalError, "etcd event received with PrevKv=nil")
			}, times: 1, want: map[probe.Cause]int{probe.CauseInternalError: 1}}),
		Entry("close within a second with no event: relist", errorClass{
			inject: func(in *httpfault.Injector) (func(), func() int) {
				return in.EndWatchesCleanly(httpfault.Watches, 1)
			}, times: 1, want: map[probe.Cause]int{probe.CauseCleanClose: 1}}),
		Entry("429 opening a watch: back off and watch again, no relist", errorClass{
			inject: func(in *httpfault.Injector) (func(), func() int) {
				return in.FailRequests(httpfault.Watches, 2, 429, metav1.StatusReasonTooManyRequests, "slow down")
			}, times: 2, want: map[probe.Cause]int{}}),
		Entry("500 opening a watch: relist", errorClass{
			inject: func(in *httpfault.Injector) (func(), func() int) {
				return in.FailRequests(httpfault.Watches, 1, 500, metav1.StatusReasonInternalError, "boom")
			}, times: 1, want: map[probe.Cause]int{probe.CauseInternalError: 1}}),
	)

	It("fails when the client cannot tell a 429 from a failure", NegativeControl, func(ctx SpecContext) {
		// A transport that turns every non-2xx answer into an error hides
		// the 429 from the reflector, which then relists: the no-relist
		// assertion must catch it.
		err := InterceptGomegaFailure(func() {
			expectReinitialisations(ctx, errorClass{
				inject: func(in *httpfault.Injector) (func(), func() int) {
					return in.FailRequests(httpfault.Watches, 2, 429, metav1.StatusReasonTooManyRequests, "slow down")
				}, times: 2, want: map[probe.Cause]int{}}, true)
		})
		Expect(err).To(MatchError(ContainSubstring("re-initialisations by cause")), "the S4 assertion catches a relist after 429")
	})
})

func expectReinitialisations(ctx context.Context, ec errorClass, brokenTransport bool) {
	clientfeaturestesting.SetFeatureDuringTest(GinkgoTB(), features.WatchListClient, false)
	env := e2e.StartEnv(ctx, cluster.Spec{})
	in := &httpfault.Injector{}
	restore, answered := ec.inject(in)
	DeferCleanup(restore)
	cfg := in.Instrument(env.User)
	if brokenTransport {
		cfg = httpfault.StatusesAsErrors(cfg)
	}
	pods := e2e.StartProbe(ctx, "pods", cfg, probe.Options{Namespace: e2e.Namespace})
	DeferCleanup(func() { pods.Report(0) })
	Eventually(func(g Gomega) {
		g.Expect(answered()).To(BeNumerically(">=", ec.times), "injections answered")
		rs := pods.Recorder.Snapshot().Requests
		last := rs[len(rs)-1]
		g.Expect(last.Watch && last.Status == 200 && last.End.IsZero()).To(BeTrue(), "a real watch is open: %+v", last)
	}).WithContext(ctx).WithTimeout(watchTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	reinits := probe.Reinitialisations(pods.Recorder.Snapshot())
	Expect(probe.CountByCause(reinits)).To(Equal(ec.want), "re-initialisations by cause (%v)", reinits)
}
