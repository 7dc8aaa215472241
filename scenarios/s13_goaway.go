package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S13Goaway is S13's value: both sync modes, and its negative control.
var S13Goaway = Register(Scenario{
	ID: "S13", Title: "GOAWAY across HA kube-apiservers", Labels: []string{"goaway"},
	Needs: []cluster.Capability{cluster.CapabilityHA},
	Specs: []Spec{
		{
			Text:    "informers move with their connections and resume their watches on the other apiserver: no failed request, no re-initialisation",
			Sample:  true,
			Entries: []Entry{{Run: func(ctx context.Context, s e2e.Setup, _ Input) { GoawayRebalancing(ctx, s) }}},
		},
		// A client that takes the end of each watch for an error relists
		// on every move: the no-re-initialisation assertion must catch it.
		{
			Text: "fails when the client relists whenever a watch ends", Mode: e2e.StreamingList,
			Client: EndOfWatchAsError,
			Run:    RunBody(GoawayRebalancing),
			Fails:  []string{GoawayNoReinit}, Because: "the S13 assertion catches a client that relists after a GOAWAY",
		},
	},
})

// S13 (kubernetes#88567, #100745): two kube-apiservers over one etcd behind
// one address (the fault proxy, sending new connections round-robin) with
// --goaway-chance (profile goaway, 0.02: the most kube-apiserver accepts),
// as HA set-ups run to rebalance clients. Informers (a client each) watch
// pods while pods are created and deleted through apiserver 1.
//
// Expected, from source:
//   - kube-apiserver (k8s.io/apiserver pkg/server/filters/goaway.go
//     WithProbabilisticGoaway, wired in pkg/server/config.go
//     DefaultBuildHandlerChain for HTTP/2): any request, watches included,
//     may get "Connection: close", which Go's HTTP/2 server turns into a
//     graceful GOAWAY: the streams in flight run to their end, the
//     connection closes when idle.
//   - Go's HTTP/2 client takes no new stream on a connection that got a
//     GOAWAY and dials again for the next request; the proxy sends that
//     connection to the other apiserver.
//   - client-go v0.36 tools/cache/reflector.go watch(): a watch the server
//     ends cleanly after more than a second is resumed from the last
//     resourceVersion, on whatever connection the transport gives, here
//     the new one to the other apiserver. That apiserver's watch cache is
//     warm (it has run all along over the same etcd), so the resume is
//     accepted (cacher.go Watch; a resourceVersion a moment ahead of it is
//     waited for, not refused: only sendInitialEvents watches answer "too
//     large"). So: no request fails, no re-initialisation at all, the
//     store and the handler calls converge, every delete arrives, and
//     nothing is answered "too large resource version" (the #100745 loop).
//
// To see many GOAWAYs in seconds, each informer's client also sends cheap
// requests that touch no storage (SelfSubjectReview creates, not GETs: the
// probe counts every plain GET as a list), and watches end by server-side
// timeout every goawayWatchTimeout (informers.WithTweakListOptions, as S3),
// so the informers' watches move with their connections.
const (
	// goawayInformers is how many informers (a client each) run.
	goawayInformers = 3
	// goawayWatchTimeout is the server-side timeout of every watch: more
	// than the second below which a watch with no event is an error
	// (reflector.go handleAnyWatch, VeryShortWatchError).
	goawayWatchTimeout = 3 * time.Second
	// goawayLoadInterval paces each client's SelfSubjectReviews: 40 a
	// second, with chance 0.02 a GOAWAY every 1.25 s per client on average.
	goawayLoadInterval = 25 * time.Millisecond
	// goawayMovesWanted is on how many connections each informer's watches
	// must have run (moved goawayMovesWanted-1 times).
	goawayMovesWanted = 3
	// goawayMovesTimeout bounds waiting for that. A watch moves when its
	// connection got a GOAWAY during it: at 0.8 GOAWAYs a second, within
	// its 3 s with probability 1-e^-2.4 = 0.91. In 30 s an informer runs
	// about 9 watches; fewer than 2 moves among them: below 1e-7.
	goawayMovesTimeout = 30 * time.Second
)

// GoawayNoReinit is the assertion S13 makes of every informer (its negative
// control matches it).
const GoawayNoReinit = "resumed across every GOAWAY without re-initialising"

// GoawayRebalancing runs S13 (above); s.Client, when set, changes the
// informers' client (a negative control breaks it).
func GoawayRebalancing(ctx context.Context, s e2e.Setup) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{APIServers: 2, Profile: "goaway"})
	Expect(env.Backend.APIServerAddrs()).To(HaveLen(2), "two kube-apiservers")
	e2e.Defer(ctx, env.Proxy.RoundRobin())
	writer, err := kubernetes.NewForConfig(env.ConfigThrough(cluster.Admin, 1))
	Expect(err).NotTo(HaveOccurred())
	observed := startGoawayInformers(ctx, env)

	e2e.By(ctx, "writing pods through apiserver 1 while each informer's client sends requests GOAWAYs land on")
	w := StartPodWriter(ctx, writer.CoreV1().Pods(env.Namespace), env.Namespace)
	e2e.Defer(ctx, func() { w.Stop() })
	stopLoad := startGoawayLoad(ctx, observed)
	// Bounded: the load's requests are the clients under test.
	stopLoadWithin := func() error {
		var err error
		if stuck := e2e.CallWithin(ctx, "goaway-load", "the load's requests through the informers' clients, their context cancelled,", e2e.CancelTimeout, func() { err = stopLoad() }); stuck != nil {
			return stuck
		}
		return err
	}
	e2e.DeferCleanup(ctx, 0, func(context.Context) error { return stopLoadWithin() })
	awaitGoawayMoves(ctx, observed)
	Expect(stopLoadWithin()).To(Succeed(), "the load's requests")
	deleted := w.Stop()
	expectMovedWithoutReinit(env, observed)
	for _, o := range observed {
		o.EventuallyConverged(ctx, env.Pods)
		o.ExpectDeletesObserved(deleted...)
		expectNoFailedGet(o)
	}
}

// startGoawayInformers starts S13's informers, synced, each with a client
// of its own without client-side rate limiting (the load is the tool, not
// the subject: client-go's default 5 QPS would not reach its rate) and
// watches that time out after goawayWatchTimeout.
func startGoawayInformers(ctx context.Context, env *e2e.Env) []*e2e.Observed {
	cfg := rest.CopyConfig(env.User)
	cfg.QPS = -1
	timeout := informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.TimeoutSeconds = ptr.To(int64(goawayWatchTimeout.Seconds()))
	})
	var observed []*e2e.Observed
	for i := range goawayInformers {
		o := env.StartProbe(ctx, fmt.Sprintf("pods-%d", i), cfg, probe.Options{Namespace: env.Namespace, FactoryOptions: []informers.SharedInformerOption{timeout}})
		e2e.Defer(ctx, func() { o.Report(0) })
		observed = append(observed, o)
	}
	return observed
}

// awaitGoawayMoves waits until every informer's watches moved to a new
// connection goawayMovesWanted-1 times, or one re-initialised: the
// assertion after names it at once. A client that relists on each move
// backs off between its relists (the reflector's 800 ms doubling), and
// could otherwise run out the moves' time before that assertion is reached
// (seen in a soak run: its negative control failed on the moves instead).
func awaitGoawayMoves(ctx context.Context, observed []*e2e.Observed) {
	Eventually(func(g Gomega) {
		for _, o := range observed {
			if len(probe.Reinitialisations(o.Recorder.Snapshot())) > 0 {
				return
			}
		}
		for _, o := range observed {
			g.Expect(len(watchConns(o.Recorder.Snapshot()))).To(BeNumerically(">=", goawayMovesWanted), "informer %s: connections its watches ran on", o.Name)
		}
	}).WithContext(ctx).WithTimeout(goawayMovesTimeout).WithPolling(50*time.Millisecond).Should(Succeed(),
		"every informer's watches moved to a new connection %d times within %s", goawayMovesWanted-1, goawayMovesTimeout)
}

// expectMovedWithoutReinit: no informer re-initialised, and their watches
// ran on both apiservers (each informer's connections by apiserver noted).
func expectMovedWithoutReinit(env *e2e.Env, observed []*e2e.Observed) {
	upstreamOf := map[string]int{}
	for _, cs := range env.Proxy.Stats().Connections {
		upstreamOf[cs.Client] = cs.Upstream
	}
	servedBy := map[int]int{}
	for _, o := range observed {
		rec := o.Recorder.Snapshot()
		perUpstream := map[int]int{}
		for _, conn := range watchConns(rec) {
			perUpstream[upstreamOf[conn]]++
			servedBy[upstreamOf[conn]]++
		}
		env.Note("S13 "+o.Name, fmt.Sprintf("watch connections by apiserver %v, dials %d", perUpstream, len(rec.Dials)))
		reinits := probe.Reinitialisations(rec)
		Expect(probe.CountByCause(reinits)).To(BeEmpty(), "informer %s %s (%d dials): %v (record and logs: %s)", o.Name, GoawayNoReinit, len(rec.Dials), reinits, o.Dir)
	}
	Expect(servedBy).To(HaveLen(2), "the informers' watches ran on both apiservers")
}

// expectNoFailedGet: none of the informer's own requests failed across a
// GOAWAY, nor was answered too large resource version.
func expectNoFailedGet(o *e2e.Observed) {
	var failed, tooLarge []string
	for _, r := range o.Recorder.Snapshot().Requests {
		if r.Method != "GET" {
			continue // the load's requests: stopLoad checked them
		}
		if r.Status == 0 && r.Err != "" && r.Err != "closed by the client" {
			failed = append(failed, fmt.Sprintf("#%d %s %s: %s", r.ID, r.Method, r.Path, r.Err))
		}
		if r.Status == 504 || strings.Contains(strings.ToLower(r.ErrorMessage), "too large resource version") {
			tooLarge = append(tooLarge, fmt.Sprintf("#%d %s", r.ID, r.Path))
		}
	}
	Expect(tooLarge).To(BeEmpty(), "informer %s: no request answered too large resource version", o.Name)
	Expect(failed).To(BeEmpty(), "informer %s: no request failed across a GOAWAY", o.Name)
}

// watchConns lists the connections the informer's watches (streaming lists
// included) ran on, in order of first use.
func watchConns(rec probe.Record) []string {
	var conns []string
	for _, r := range rec.Requests {
		if r.Watch && r.Conn != "" && !slices.Contains(conns, r.Conn) {
			conns = append(conns, r.Conn)
		}
	}
	return conns
}

// startGoawayLoad sends SelfSubjectReviews through each informer's own
// client (its connections) every goawayLoadInterval until stopped; stop
// returns the first error. It may be called again.
func startGoawayLoad(ctx context.Context, observed []*e2e.Observed) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, len(observed))
	for _, o := range observed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(goawayLoadInterval)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				_, err := o.Client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
				if err != nil && ctx.Err() == nil {
					errs <- fmt.Errorf("client of %s: %w", o.Name, err)
					return
				}
			}
		}()
	}
	var once sync.Once
	var first error
	return func() error {
		once.Do(func() {
			cancel()
			wg.Wait()
			close(errs)
			first = <-errs
		})
		return first
	}
}
