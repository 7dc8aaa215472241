package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

const (
	// LeftAfterShutdown is S10's leak assertion; its negative control matches it.
	LeftAfterShutdown = "goroutines left after Shutdown"
	// quietWindow is how long nothing may be sent after Shutdown.
	quietWindow = 2 * time.Second
	// shutdownBound is how long Shutdown may take, also on a dead connection.
	shutdownBound = 5 * time.Second
	// reuseBound is how long the clientset may take to work again after its
	// connection was reset (a new dial and TLS handshake on loopback).
	reuseBound = 5 * time.Second
)

// S10Shutdown is S10's value: the shutdown on every informer stack, with
// a live and a dead connection, and its negative controls.
var S10Shutdown = Register(Scenario{
	ID: "S10", Title: "factory shutdown", Labels: []string{"shutdown"},
	Specs: []Spec{
		{
			Text: "leaves no goroutine, sends nothing more, and leaves the clientset working", Sample: true,
			Entries: []Entry{{Modes: AllStacks, Run: func(ctx context.Context, s e2e.Setup, in Input) {
				ShutdownLeavesNothing(ctx, s, in.Probe(), false)
			}}},
		},
		{
			Text: "returns promptly when the connection died before the shutdown",
			Entries: []Entry{{Modes: AllStacks, Feature: "connection died before the shutdown", Run: func(ctx context.Context, s e2e.Setup, in Input) {
				ShutdownLeavesNothing(ctx, s, in.Probe(), true)
			}}},
		},
		// A controller whose handler starts a goroutine that outlives the
		// informer: the leak check must name it.
		{
			Text: "fails when a handler leaves a goroutine behind",
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				release := make(chan struct{})
				defer close(release) // after the leak check, also when it fails
				ShutdownLeavesNothing(ctx, s, probe.Options{WrapHandler: LeakyHandler(release)}, false)
			},
			Fails: []string{LeftAfterShutdown}, Because: "the S10 leak check catches a leaked goroutine",
		},
		{
			Text: "fails within its bound, naming the handler, when a handler blocks for ever", SelfChecked: true,
			Run:     func(ctx context.Context, s e2e.Setup, _ Input) { ShutdownHeldByHandler(ctx, s) },
			Because: "the probe's clean-up fails the spec within its bound, naming the handler that holds Shutdown",
		},
	},
})

// ShutdownLeavesNothing runs S10 (seed 003 scenarios 2-4): after
// factory.Shutdown() returns, no informer goroutine is left and no request
// is sent; the clientset still works for plain requests, also after its
// connection was dropped (the seed's 90 s idle keep-alive, made instant here
// by resetting the connection at the proxy); shutting down while the
// connection is dead (deadConnection) returns promptly. opts are the
// probe's (a negative control wraps the handler).
//
// Expected of client-go v0.36: informers/factory.go Shutdown closes the
// factory's shutdown flag and waits on its WaitGroup for every informer's
// Run goroutine; tools/cache/shared_informer.go Run stops the controller and
// the processor's listeners when its context ends. Nothing of it owns the
// HTTP transport, so the clientset is unaffected.
func ShutdownLeavesNothing(ctx context.Context, s e2e.Setup, opts probe.Options, deadConnection bool) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	proxy := env.Proxy

	leaks := probe.NewLeakCheck(faultproxy.Goroutines()...)
	opts.Namespace = env.Namespace
	pods := env.StartProbe(ctx, env.Subjects.Name(), env.User, opts)
	// The informer's own client writes (and, below, lists): a pod through
	// the clientset, or a custom resource through the dynamic client on the
	// CRD stacks.
	client := pods.Subjects()
	_, err := client.Create(ctx, "s")
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() int { return len(pods.Recorder.Snapshot().Events) }).WithTimeout(e2e.EventTimeout).Should(BeNumerically(">=", 1), "the informer saw the %s", client.Name())

	if deadConnection {
		e2e.By(ctx, "blackholing the informer's connection before the shutdown")
		e2e.Defer(ctx, proxy.Blackhole())
	}
	e2e.By(ctx, "shutting the factory down")
	start := time.Now()
	Expect(pods.StopWithin(shutdownBound)).To(Succeed(), "Shutdown returned within %s", shutdownBound)
	env.Note("S10 Shutdown took", time.Since(start).String())
	Expect(leaks.Find()).To(Succeed(), LeftAfterShutdown)

	// The consistency detector's LISTs count too: they go out on the
	// informer's context.
	sent := func() int { r := pods.Recorder.Snapshot(); return len(r.Requests) + len(r.ConsistencyChecks) }
	n := sent()
	Consistently(sent).WithTimeout(quietWindow).Should(Equal(n), "requests after Shutdown")
	// Reported now: the spec's own requests with the informer's clientset
	// below would be recorded too.
	pods.Report(0)
	pods.ExpectStackEncoding() // no convergence check here makes it

	if !deadConnection {
		e2e.By(ctx, "using the clientset after its connection was dropped")
		expectClientsetReconnects(ctx, env, client)
	}
}

// expectClientsetReconnects drops every connection and expects the
// clientset's next requests to work within reuseBound, one failure at
// most. The reset reaches the client's HTTP/2 connection asynchronously: a
// request written before the connection's read loop has seen the RST
// fails once ("write: broken pipe"), and golang.org/x/net/http2 does not
// replay it (transport_common.go shouldRetryRequest/canRetryError retry
// only an unusable connection, GOAWAY and REFUSED_STREAM); the next
// request dials anew. What must not happen is a clientset stuck on the
// dead connection.
func expectClientsetReconnects(ctx context.Context, env *e2e.Env, client *e2e.Subjects) {
	env.Proxy.ResetAll()
	var failures []string
	Eventually(func() error {
		_, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			failures = append(failures, err.Error())
		}
		return err
	}).WithContext(ctx).WithTimeout(reuseBound).WithPolling(100*time.Millisecond).Should(Succeed(),
		"the clientset works after Shutdown and a dropped connection")
	Expect(len(failures)).To(BeNumerically("<=", 1), "requests failed on the dropped connection: %v", failures)
	if len(failures) > 0 {
		env.Note("S10 dropped connection", fmt.Sprintf("first request after the reset failed (%s), the next one succeeded", failures[0]))
	}
}

// LeakyHandler wraps a handler so that each Add starts a goroutine that
// outlives the informer, until release is closed: a controller whose
// handler leaks (S10's negative control).
func LeakyHandler(release <-chan struct{}) func(cache.ResourceEventHandler) cache.ResourceEventHandler {
	return func(h cache.ResourceEventHandler) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { go func() { <-release }(); h.OnAdd(obj, false) },
			UpdateFunc: h.OnUpdate,
			DeleteFunc: h.OnDelete,
		}
	}
}

// ShutdownHeldByHandler is S10's control of the probe's clean-up: a
// controller whose handler never returns. client-go's processorListener
// waits for it, and Factory.Shutdown for the listener. Every probe's
// clean-up (e2e.StartProbe) stops it with Observed.StopWithin(e2e.ShutdownTimeout)
// and fails the spec with its error; here the same call is made in the
// spec, so that its failure can be asserted: within its bound, naming the
// handler.
func ShutdownHeldByHandler(ctx context.Context, s e2e.Setup) {
	if src := e2e.InformerSource(); src != "" {
		// The check it controls is client-go's factory.Shutdown waiting for
		// its handlers (sharedProcessor.run waits for every listener); an
		// informer source stops its informers its own way, without
		// waiting for a handler (controller-runtime's cache cancels their
		// context and returns), so no hung handler holds it.
		e2e.Skip(ctx, fmt.Sprintf("S10's hung-handler control tests client-go's factory.Shutdown, which waits for its handlers; the informers here come from %s, whose stop does not wait for a handler", src))
	}
	release := make(chan struct{})
	defer close(release) // then the probe's own clean-up finds Shutdown done
	blocking := func(h cache.ResourceEventHandler) cache.ResourceEventHandler {
		return HandlerBlockingOnAdd{h, release}
	}
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	pods := env.StartProbe(ctx, "pods", env.User, probe.Options{Namespace: env.Namespace, WrapHandler: blocking})
	_, err := env.Writer.CoreV1().Pods(env.Namespace).Create(ctx, e2e.Pod(env.Namespace, "s"), metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() int { return len(pods.Recorder.Snapshot().Events) }).WithTimeout(e2e.EventTimeout).Should(BeNumerically(">=", 1), "the handler was called")

	start := time.Now()
	err = pods.StopWithin(e2e.ShutdownTimeout)
	took := time.Since(start)
	env.Note("S10 hung Shutdown reported after", took.String())
	Expect(err).To(MatchError(And(
		ContainSubstring("informer pods: factory.Shutdown() did not return within %s: a handler is stuck", e2e.ShutdownTimeout),
		ContainSubstring("scenarios.HandlerBlockingOnAdd.OnAdd"),
		ContainSubstring("goroutine dump in "+filepath.Join(pods.Dir, "goroutines-pods.txt")),
	)), "the clean-up names the handler that holds Shutdown")
	Expect(took).To(BeNumerically("<", e2e.ShutdownTimeout+time.Second), "the hung Shutdown was reported at its bound")
	dump, err := os.ReadFile(filepath.Join(pods.Dir, "goroutines-pods.txt"))
	Expect(err).NotTo(HaveOccurred())
	Expect(string(dump)).To(ContainSubstring("HandlerBlockingOnAdd.OnAdd"), "the goroutine dump holds the blocked handler")
}

// HandlerBlockingOnAdd passes each call on, then blocks in OnAdd until
// Release is closed.
type HandlerBlockingOnAdd struct {
	cache.ResourceEventHandler
	Release <-chan struct{}
}

func (h HandlerBlockingOnAdd) OnAdd(obj any, inInitialList bool) {
	h.ResourceEventHandler.OnAdd(obj, inInitialList)
	<-h.Release
}
