package scenarios

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S2Blackhole is S2's value: the short health check on every informer
// stack in both sync modes, client-go's default one (slow), and the
// negative control.
var S2Blackhole = Register(Scenario{
	ID: "S2", Title: "stale HTTP/2 connection (network blackhole)", Labels: []string{"blackhole"},
	Specs: []Spec{
		{
			Text: "detects the dead connection with the HTTP/2 health check and recovers every informer on a new one", Sample: true,
			Entries: []Entry{{Modes: AllStacks, Run: func(ctx context.Context, s e2e.Setup, in Input) {
				RecoversFromStaleConnection(ctx, s, s2Short(in))
			}}},
		},
		// The defaults, the number users live with. One sync mode: detection
		// happens in the HTTP/2 transport below the reflector, and the short
		// variant above already covers both relist shapes; streaming lists
		// are client-go's default.
		{
			Text: "recovers within client-go's default health check (30 s read-idle + 15 s ping)", Mode: e2e.StreamingList, Speed: Slow,
			Feature: "client-go's default health check (30 s read-idle + 15 s ping)",
			Run: func(ctx context.Context, s e2e.Setup, in Input) {
				if in.ReadIdle != nil {
					e2e.Skip(ctx, "the health check is the front end's own (Input.ReadIdle; e2e-framework: WithHTTP2HealthCheck), not client-go's default")
				}
				RecoversFromStaleConnection(ctx, s, StaleConnection{Bound: StaleRecoveryBound(DefaultReadIdle, DefaultPingTimeout)})
			},
		},
		// HTTP2_READ_IDLE_TIMEOUT_SECONDS=0 turns the health check off: the
		// watch waits on the dead connection forever (the proxy keeps TCP
		// alive) and the recovery bound must catch it.
		{
			Text: "fails when the HTTP/2 health check is disabled",
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				RecoversFromStaleConnection(ctx, s, StaleConnection{
					ReadIdle: ptr.To(time.Duration(0)), Ping: ptr.To(ShortPingTimeout),
					Bound: StaleRecoveryBound(ShortReadIdle, ShortPingTimeout),
				})
			},
			Fails: []string{StaleRecovered}, Because: "the S2 recovery bound catches a client that never notices",
		},
	},
})

// s2Short is the short health check (ShortReadIdle + ShortPingTimeout), or
// in's; the bound follows from it, the short check's where in's is off.
func s2Short(in Input) StaleConnection {
	sc := StaleConnection{ReadIdle: ptr.To(ShortReadIdle), Ping: ptr.To(ShortPingTimeout)}
	if in.ReadIdle != nil {
		sc.ReadIdle, sc.Ping = in.ReadIdle, in.Ping
	}
	sc.Bound = StaleRecoveryBound(*sc.ReadIdle, *sc.Ping)
	if *sc.ReadIdle == 0 {
		sc.Bound = StaleRecoveryBound(ShortReadIdle, ShortPingTimeout)
	}
	return sc
}

// S2 (seed 004): the TCP path between client and apiserver goes silent: the
// fault proxy drops every byte of the connection open now, both ways, and
// closes nothing (no FIN, no RST: an expired NAT entry, a vanished path).
// New connections get through, so the informer recovers as soon as it
// notices on its own. Three informers of one factory (pods, configmaps,
// secrets) share the clientset, hence one transport and one HTTP/2
// connection. On the CRD stacks the first is the custom resource's
// (widgets, configmaps, secrets): what an operator's factory holds, its own
// resource beside core ones, on one connection.
//
// Expected of client-go v0.36 (golang.org/x/net v0.61):
//   - apimachinery pkg/util/net/http.go SetTransportDefaults ->
//     configureHTTP2Transport sets the HTTP/2 health check from
//     HTTP2_READ_IDLE_TIMEOUT_SECONDS (readIdleTimeoutSeconds, default 30,
//     0 disables it) and HTTP2_PING_TIMEOUT_SECONDS (pingTimeoutSeconds,
//     default 15), read from the environment each time a transport is
//     built. client-go's transport cache (transport/cache.go tlsConfigKey)
//     keys on the rest.Config's DialHolder, which rest/transport.go
//     TransportConfig allocates afresh for a config with Dial set (the
//     probe's always is): every probe builds its own transport, with the
//     environment of the moment.
//   - x/net http2 ClientConn.readLoop runs healthCheck when no frame arrived
//     for ReadIdleTimeout; a ping unanswered within PingTimeout makes
//     closeForLostPing end every stream with "http2: client connection lost".
//   - apimachinery pkg/watch/streamwatcher.go receive: that error is neither
//     a probable EOF nor a timeout, so it becomes an ERROR event
//     ("unable to decode an event from the watch stream", InternalError);
//     tools/cache/reflector.go watch returns it and ListAndWatch starts over
//     after the reflector's backoff (800 ms, jitter 1.0: at most 1.6 s): one
//     re-initialisation per informer, which the probe classifies as a
//     transport error (the watch body's read failed), with that message.
//   - Go's net/http Transport.queueForDial (MaxConnsPerHost 0) dials for
//     every request that finds no usable connection, so the three
//     reflectors, retrying 0.8-1.6 s apart with independent jitter, usually
//     share one new connection but may dial once each when their retries
//     overlap a handshake: one new dial per informer at most.
//
// Recovery, from the blackhole's start, is bounded by read-idle + ping
// timeout (detection) + the reflector's first backoff + staleSlack.
const (
	ShortReadIdle    = 2 * time.Second
	ShortPingTimeout = 2 * time.Second
	// client-go's defaults (apimachinery pkg/util/net/http.go).
	DefaultReadIdle    = 30 * time.Second
	DefaultPingTimeout = 15 * time.Second
	// reflectorFirstBackoff is the longest first retry delay of a
	// reflector: 800 ms with jitter 1.0 (tools/cache/reflector.go).
	reflectorFirstBackoff = 1600 * time.Millisecond
	// staleSlack covers the new dial, the relist and its delivery on a
	// loaded machine (4 Ginkgo processes on 2 cores).
	staleSlack = 5 * time.Second
)

// StaleRecoveryBound is how long after the blackhole's start every informer
// must have converged.
func StaleRecoveryBound(readIdle, ping time.Duration) time.Duration {
	return readIdle + ping + reflectorFirstBackoff + staleSlack
}

// StaleConnection configures one run.
type StaleConnection struct {
	// readIdle and ping set HTTP2_READ_IDLE_TIMEOUT_SECONDS and
	// HTTP2_PING_TIMEOUT_SECONDS; nil leaves client-go's default.
	ReadIdle, Ping *time.Duration
	// bound is the recovery bound asserted.
	Bound time.Duration
}

// setHTTP2HealthCheck sets (or, for nil, empties: client-go's default) the
// health check's environment for the rest of the spec; transports built
// from now on read it.
func setHTTP2HealthCheck(ctx context.Context, readIdle, ping *time.Duration) {
	seconds := func(d *time.Duration) string {
		if d == nil {
			return ""
		}
		return strconv.Itoa(int(d.Seconds()))
	}
	e2e.Setenv(ctx, "HTTP2_READ_IDLE_TIMEOUT_SECONDS", seconds(readIdle))
	e2e.Setenv(ctx, "HTTP2_PING_TIMEOUT_SECONDS", seconds(ping))
}

// informerUnderTest is one informer of the shared factory with what it is
// checked against.
type informerUnderTest struct {
	resource string // path suffix of its requests
	informer cache.SharedIndexInformer
	server   probe.Lister
	synced   time.Time
	// handler records the handler calls of the configmaps and secrets
	// informers (the pods informer's are in its probe's record).
	handler *probe.Recorder
}

// RecoversFromStaleConnection runs S2: three informers of one factory
// share one HTTP/2 connection, the proxy blackholes it, and every informer
// must recover on a new one within sc.Bound, relisting once (transport).
func RecoversFromStaleConnection(ctx context.Context, s e2e.Setup, sc StaleConnection) {
	setHTTP2HealthCheck(ctx, sc.ReadIdle, sc.Ping)
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	subjects := env.Subjects
	gone, err := subjects.Create(ctx, "gone")
	Expect(err).NotTo(HaveOccurred())
	_, err = subjects.Create(ctx, "stays")
	Expect(err).NotTo(HaveOccurred())
	createConfigMapAndSecret(ctx, env, "before")

	r := startSharedInformers(ctx, env)
	before := r.pods.Recorder.Snapshot()
	Expect(env.Proxy.Stats().Active()).To(HaveLen(1), "the three informers share one connection")

	e2e.By(ctx, "silencing the informers' connection (bytes dropped both ways, nothing closed); new connections get through")
	start := time.Now()
	restoreBlackhole := env.Proxy.BlackholeCurrent()
	e2e.Defer(ctx, restoreBlackhole)

	e2e.By(ctx, "changing "+subjects.Name()+", configmaps and secrets meanwhile")
	Expect(subjects.Delete(ctx, "gone")).To(Succeed())
	_, err = subjects.Create(ctx, "born")
	Expect(err).NotTo(HaveOccurred())
	createConfigMapAndSecret(ctx, env, "during")

	defer func() {
		env.RecordBound("every informer recovered from the blackhole", start, start.Add(r.recovery), sc.Bound, r.recovered)
	}()
	r.awaitRecovery(ctx, start, sc.Bound)
	r.expectConverged(ctx, gone)
	r.expectOneRelistEach(before)
}

// staleRun is one run of S2, carried from step to step.
type staleRun struct {
	env *e2e.Env
	// pods is the first informer's probe; its record holds the requests
	// of all three (one clientset).
	pods      *e2e.Observed
	informers []*informerUnderTest
	// recovery is how long after the blackhole's start every informer had
	// converged (while waiting: how long it has waited); recovered says
	// they all did within the bound.
	recovery  time.Duration
	recovered bool
}

// startSharedInformers starts the pods (or custom resource), configmaps
// and secrets informers of one factory, waits for each to sync and to
// watch, and registers their report entries.
func startSharedInformers(ctx context.Context, env *e2e.Env) *staleRun {
	subjects, writer := env.Subjects, env.Writer
	e2e.By(ctx, "starting "+subjects.Name()+", configmaps and secrets informers of one factory")
	pods := env.StartProbe(ctx, subjects.Name(), env.User, probe.Options{Namespace: env.Namespace})
	r := &staleRun{env: env, pods: pods}
	r.informers = []*informerUnderTest{
		{resource: "/" + subjects.Name(), informer: pods.Informer, server: subjects.Quorum(), synced: pods.Recorder.Snapshot().Synced},
		{resource: "/configmaps", informer: informerFor(pods, "configmaps"), server: probe.Quorum("configmaps", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return writer.CoreV1().ConfigMaps(env.Namespace).List(ctx, o)
		})},
		{resource: "/secrets", informer: informerFor(pods, "secrets"), server: probe.Quorum("secrets", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return writer.CoreV1().Secrets(env.Namespace).List(ctx, o)
		})},
	}
	for _, inf := range r.informers[1:] {
		inf.handler = &probe.Recorder{}
		_, err := inf.informer.AddEventHandler(probe.RecordingHandler(inf.handler))
		Expect(err).NotTo(HaveOccurred())
	}
	pods.Start() // starts the informers added since
	for _, inf := range r.informers[1:] {
		syncCtx, cancel := context.WithTimeout(ctx, e2e.SyncTimeout)
		Expect(cache.WaitForCacheSync(syncCtx.Done(), inf.informer.HasSynced)).To(BeTrue(), "%s informer synced within %s", inf.resource, e2e.SyncTimeout)
		cancel()
		inf.synced = time.Now()
	}
	// One report entry per informer: the probe's own would mix the three
	// informers' requests (one clientset) and misclassify their causes.
	e2e.DeferCleanup(ctx, 0, func(context.Context) error {
		rec := pods.Recorder.Snapshot()
		for _, inf := range r.informers {
			reportInformer(env, inf, rec, r.recovery)
		}
		return nil
	})
	Eventually(func(g Gomega) {
		rec := pods.Recorder.Snapshot()
		for _, inf := range r.informers {
			e2e.ExpectWatchOpen(g, "the "+inf.resource+" informer", rec.OfResource(inf.resource, inf.synced).Requests)
		}
	}).WithContext(ctx).WithTimeout(e2e.EventTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	return r
}

// awaitRecovery waits until every informer's store equals the server,
// within bound of the blackhole's start.
func (r *staleRun) awaitRecovery(ctx context.Context, start time.Time, bound time.Duration) {
	Eventually(func(g Gomega) {
		r.recovery = time.Since(start)
		for _, inf := range r.informers {
			g.Expect(probe.Converged(ctx, inf.informer.GetStore(), inf.server)).To(Succeed(), "%s informer", inf.resource)
		}
	}).WithContext(ctx).WithTimeout(max(bound-time.Since(start), time.Millisecond)).WithPolling(50*time.Millisecond).Should(Succeed(),
		"every informer "+StaleRecovered+" %s of the blackhole (record and logs: %s)", bound, r.pods.Dir)
	r.recovered = true
	r.recovery = time.Since(start)
	r.env.Note("S2 recovery", fmt.Sprintf("%s (bound %s)", r.recovery.Round(time.Millisecond), bound))
}

// expectConverged checks the universal invariant: stores and handlers
// equal the server, and the delete of gone was observed.
func (r *staleRun) expectConverged(ctx context.Context, gone probe.Object) {
	r.pods.EventuallyConverged(ctx, r.informers[0].server)
	for _, inf := range r.informers[1:] {
		r.env.EventuallyHandlersConverged(ctx, inf.resource, inf.handler, inf.server, r.pods.Dir)
	}
	r.pods.ExpectDeletesObserved(probe.Object{Key: gone.Key, UID: gone.UID})
}

// expectOneRelistEach checks each informer relisted once, after the health
// check ended its watch, and that they dialed at least one new connection
// and at most one each since before.
func (r *staleRun) expectOneRelistEach(before probe.Record) {
	after := r.pods.Recorder.Snapshot()
	for _, inf := range r.informers {
		reinits := probe.Reinitialisations(after.OfResource(inf.resource, inf.synced))
		Expect(probe.CountByCause(reinits)).To(Equal(map[probe.Cause]int{probe.CauseTransport: 1}),
			"re-initialisations by cause of the %s informer: one relist after the lost connection (%v)", inf.resource, reinits)
		Expect(reinits[0].Detail).To(ContainSubstring("http2: client connection lost"), "the %s watch ended by the health check", inf.resource)
	}
	newDials := len(after.Dials) - len(before.Dials)
	r.env.Note("S2 new dials", newDials)
	Expect(newDials).To(BeNumerically(">=", 1), "the informers dialed a new connection")
	Expect(newDials).To(BeNumerically("<=", len(r.informers)), "new dials of %d informers sharing one transport, one each at most", len(r.informers))
}

// informerFor is the probe's stack's informer of a core resource.
func informerFor(p *e2e.Observed, resource string) cache.SharedIndexInformer {
	ginkgo.GinkgoHelper()
	inf, err := p.InformerFor(corev1.SchemeGroupVersion.WithResource(resource))
	Expect(err).NotTo(HaveOccurred(), "%s informer on stack %s", resource, p.Stack)
	return inf
}

// reportInformer adds the numbers of one informer of the shared clientset
// to the spec's report; dials are the clientset's, shared by all three.
func reportInformer(env *e2e.Env, inf *informerUnderTest, rec probe.Record, recovery time.Duration) {
	n := e2e.NumbersOf(strings.TrimPrefix(inf.resource, "/"), rec.OfResource(inf.resource, inf.synced), recovery)
	n.Dials = len(rec.Dials)
	if inf.handler != nil {
		n.Events = nil // the recorded handler is the first informer's
	}
	env.ReportNumbers(n)
}

func createConfigMapAndSecret(ctx context.Context, env *e2e.Env, name string) {
	writer := env.Writer
	ginkgo.GinkgoHelper()
	_, err := writer.CoreV1().ConfigMaps(env.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = writer.CoreV1().Secrets(env.Namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}
