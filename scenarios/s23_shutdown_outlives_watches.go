package scenarios

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S23Shutdown is S23's value: each end of the drain in both sync modes, and
// its negative controls.
var S23Shutdown = Register(Scenario{
	ID: "S23", Title: "kube-apiserver shutdown outliving its watches", Labels: []string{"apiserver-shutdown", "ha"},
	Needs: []cluster.Capability{cluster.CapabilityHA, cluster.CapabilityAPIServerRestart}, Disruptive: true,
	Specs: append(s23Drains(),
		// The watch ends at the shutdown timeout, cleanly or (on a loaded
		// machine, measured: "http2: server sent GOAWAY and closed the
		// connection" 4.5 s after SIGTERM) by the connection's close: a
		// client that relists on every watch end must be caught either way.
		Spec{
			Text: "fails when the client takes the end of a watch for an error", Mode: e2e.StreamingList,
			Client: AnyWatchEndAsError,
			Run:    RunWith(ShutdownOutlivesWatches, ShutdownInput{End: ShutdownTimesOut}),
			Fails:  []string{ShutdownResumes}, Because: "the S23 assertion catches a client that relists when the watch ends",
		},
		// apimachinery before kubernetes PR #73277: the stream watcher
		// sends an ERROR event for the GOAWAY close and the reflector
		// relists: the no-re-initialisation assertion must catch it.
		Spec{
			Text: "fails when the client takes the GOAWAY close for a watch error", Mode: e2e.StreamingList,
			Client: GoawayCloseAsError,
			Run:    RunWith(ShutdownOutlivesWatches, ShutdownInput{End: ShutdownKilled}),
			Fails:  []string{ShutdownResumes}, Because: "the S23 assertion catches a client that relists after a GOAWAY close",
		},
	),
})

// s23Drains are S23's tables: one per end of the drain, in both sync
// modes; SIGKILL's is the sample.
func s23Drains() []Spec {
	var specs []Spec
	for _, end := range []ShutdownEnd{ShutdownTimesOut, ShutdownKilled} {
		e := Entry{Feature: "drain ended by " + string(end), Run: RunWith(ShutdownOutlivesWatches, ShutdownInput{End: end})}
		if end == ShutdownKilled {
			// Its cluster.Spec names no profile: the testing front end
			// would run it on any (fast-graceful-shutdown ends the
			// watches the drain must leave open).
			e.DefaultFlags = "--shutdown-watch-termination-grace-period 0: the drain leaves the watches open until SIGKILL"
		}
		specs = append(specs, Spec{
			Text:    "drain ended by " + string(end) + ": the watch open through GOAWAY is resumed on the other apiserver, no relist",
			Sample:  end == ShutdownKilled,
			Entries: []Entry{e},
		})
	}
	return specs
}

// S23 (issue 27 item 9): kube-apiserver 0 of two over one etcd, behind one
// address (the fault proxy, new connections to apiserver 0), shuts down
// gracefully while the informer's watch is open on it, and the shutdown
// outlives the watch's grace: kube-apiserver sends GOAWAY at once and does
// not end the watch itself. The load balancer takes apiserver 0 out as it
// goes (Pin(1)). Changes are written through apiserver 1 while apiserver 0
// drains (the open watch must carry them), and after it has gone. Two ends
// of the drain:
//   - ShutdownTimesOut: kube-apiserver's own end (profile
//     short-shutdown-timeout: a 4 s HTTP server shutdown timeout, the
//     default's 60 s compressed).
//   - ShutdownKilled: its supervisor's grace runs out first and it is
//     killed mid-drain (SIGKILL, as kubelet does when a static pod's
//     terminationGracePeriodSeconds is shorter than the drain; default
//     flags).
//
// Expected, from source:
//   - kube-apiserver (k8s.io/apiserver pkg/server/genericapiserver.go
//     RunWithContext): with ShutdownDelayDuration 0 and no
//     ShutdownSendRetryAfter, the HTTP server's Shutdown starts at SIGTERM:
//     the listener closes and Go's HTTP/2 server sends GOAWAY on every
//     connection; open streams go on. With
//     --shutdown-watch-termination-grace-period 0 (the default) the
//     watches are not ended by the drain (activeWatchesDrainedCh closes at
//     once; the watch handler never gets the shutdown signal:
//     pkg/server/filters/watch_termination.go), so they keep delivering
//     events from the still-running watch cache until Shutdown's timeout
//     (ShutdownTimeout = RequestTimeout, pkg/server/config.go).
//     ShutdownTimesOut: RunWithContext then returns and its deferred
//     Destroy stops the storage (pkg/storage/cacher/cacher.go Stop ->
//     terminateAllWatchers): the watch ends with a clean end of stream
//     just before the process exits (measured: 4.0 s after GOAWAY).
//     ShutdownKilled: the process dies with the stream open, after GOAWAY.
//   - Go's HTTP/2 client (golang.org/x/net/http2 transport.go,
//     clientConnReadLoop cleanup): a connection that got GOAWAY and then
//     ends fails its open streams with GoAwayError ("http2: server sent
//     GOAWAY and closed the connection"), not a clean EOF.
//   - apimachinery pkg/watch/streamwatcher.go receive(): EOF, and an
//     error for which pkg/util/net IsProbableEOF holds (the GOAWAY message
//     since kubernetes PR #73277), end the watch without an ERROR event.
//   - client-go v0.36 tools/cache/reflector.go watch(): the watch had
//     events, so handleAnyWatch returns nil and the loop opens a plain
//     WATCH from the last resourceVersion at once, on a new connection
//     (the old one got GOAWAY): the proxy sends it to apiserver 1, whose
//     watch cache, warm over the same etcd, accepts it. No relist, nothing
//     missed.
const (
	// ShutdownResumes is S23's assertion family: the informer resumed its
	// watch elsewhere, without re-initialising.
	ShutdownResumes = "resumed its watch on the other apiserver without re-initialising"
	// shutdownTimeout is profile short-shutdown-timeout's --request-timeout.
	shutdownTimeout = 4 * time.Second
	// shutdownExitBound bounds the wait for kube-apiserver 0 to exit after
	// SIGTERM (or SIGKILL): its shutdown timeout plus the pre-shutdown
	// hooks and the storage's teardown on a loaded machine.
	shutdownExitBound = shutdownTimeout + 20*time.Second
	// goawayTimeout bounds the wait for apiserver 0 to stop listening
	// after SIGTERM (signal handling and the pre-shutdown hooks).
	goawayTimeout = 10 * time.Second
	// resumeBound bounds the time from the end of the watch on apiserver
	// 0 to the informer's next request: no backoff applies to a watch that
	// ended without an error (reflector.go watch() loops at once).
	resumeBound = 3 * time.Second
)

// ShutdownEnd says how apiserver 0's drain ends in S23.
type ShutdownEnd string

const (
	// ShutdownTimesOut: kube-apiserver's own shutdown timeout ends it.
	ShutdownTimesOut ShutdownEnd = "its shutdown timeout"
	// ShutdownKilled: SIGKILL mid-drain ends it.
	ShutdownKilled ShutdownEnd = "SIGKILL mid-drain"
)

// ShutdownInput configures one run of ShutdownOutlivesWatches.
type ShutdownInput struct {
	End ShutdownEnd
}

// ShutdownOutlivesWatches runs S23.
func ShutdownOutlivesWatches(ctx context.Context, s e2e.Setup, in ShutdownInput) {
	env, ctx := e2e.StartEnv(ctx, s, shutdownSpec(in.End))
	c := e2e.Require[apiServers](ctx, env.Backend, "stop one of several kube-apiservers behind one address")
	Expect(c.APIServerAddrs()).To(HaveLen(2), "two kube-apiservers")
	restorePin, err := env.Proxy.Pin(0)
	Expect(err).NotTo(HaveOccurred())
	e2e.Defer(ctx, restorePin)

	r := &shutdownRun{env: env, api: env.SubjectsFor(env.ConfigThrough(cluster.Admin, 1))}
	r.server = r.api.Quorum()
	r.created = createShutdownObjects(ctx, r.api)
	r.obs = env.StartProbe(ctx, r.api.Name(), env.User, probe.Options{Namespace: env.Namespace})
	r.obs.EventuallyConverged(ctx, r.server)
	r.openWatchWithAnEvent(ctx)

	d := r.startDrain(ctx, c)
	defer d.kill()
	r.goaway = awaitStoppedListening(ctx, c.APIServerAddrs()[0])
	r.writeWhileDraining(ctx)
	r.endDrainThenWrite(ctx, in.End, d)
	r.expectResumedElsewhere(ctx, in.End)
}

// shutdownSpec is S23's cluster for the given end of the drain.
func shutdownSpec(end ShutdownEnd) cluster.Spec {
	spec := cluster.Spec{APIServers: 2}
	switch end {
	case ShutdownTimesOut:
		spec.Profile = "short-shutdown-timeout"
	case ShutdownKilled: // default flags: a 60 s drain, cut short
	default:
		Expect(end).To(BeElementOf(ShutdownTimesOut, ShutdownKilled), "S23's end of the drain")
	}
	return spec
}

// shutdownRun is one run of S23, carried from step to step.
type shutdownRun struct {
	env     *e2e.Env
	api     *e2e.Subjects // through apiserver 1
	server  probe.Lister
	created map[string]probe.Object
	obs     *e2e.Observed
	// watch is the informer's watch open before the SIGTERM.
	watch probe.Request
	// When apiserver 0 got SIGTERM, stopped listening (GOAWAY), when the
	// informer had heard of the drain's changes, and when apiserver 0 exited.
	sigterm, goaway, drainSeen, exited time.Time
}

// createShutdownObjects creates the objects S23 keeps, updates and deletes.
func createShutdownObjects(ctx context.Context, api *e2e.Subjects) map[string]probe.Object {
	created := map[string]probe.Object{}
	for _, n := range []string{"keep", "update-drain", "delete-drain", "delete-after"} {
		o, err := api.Create(ctx, n)
		Expect(err).NotTo(HaveOccurred())
		created[n] = o
	}
	return created
}

// openWatchWithAnEvent updates an object, waits for the informer's watch
// to deliver it and keeps that watch as r.watch.
func (r *shutdownRun) openWatchWithAnEvent(ctx context.Context) {
	e2e.By(ctx, "updating an object and waiting for the watch to deliver it, so the watch is not a very short one")
	Relabel(ctx, r.api, "keep", "before")
	Eventually(func() []string { return UpdatedKeys(r.obs) }).WithTimeout(PreStopEventTimeout).WithPolling(20*time.Millisecond).
		Should(ContainElement(r.created["keep"].Key), "the informer's watch delivered the update before the shutdown")
	Eventually(func(g Gomega) {
		r.watch = e2e.ExpectWatchOpen(g, "the informer", r.obs.Recorder.Snapshot().Requests)
	}).WithContext(ctx).WithTimeout(e2e.EventTimeout).WithPolling(20 * time.Millisecond).Should(Succeed())
}

// drain is kube-apiserver 0's graceful stop in progress.
type drain struct {
	// kill cancels the stop's context, which kills the draining process
	// (cluster.Graceful).
	kill context.CancelFunc
	// stopped gets what the stop returned.
	stopped chan error
	// end ends the drain's phase in the spec's report.
	end func()
}

// startDrain pins new connections to apiserver 1 and sends kube-apiserver
// 0 SIGTERM; its caller defers the drain's kill.
func (r *shutdownRun) startDrain(ctx context.Context, c apiServers) drain {
	e2e.By(ctx, "SIGTERM to kube-apiserver 0 (new connections go to apiserver 1 from now on)")
	_, err := r.env.Proxy.Pin(1)
	Expect(err).NotTo(HaveOccurred())
	r.sigterm = time.Now()
	// Cancelling stopCtx kills the draining process (cluster.Graceful).
	stopCtx, kill := context.WithCancel(ctx)
	d := drain{kill: kill, stopped: make(chan error, 1)}
	d.end = r.env.TimePhase("server: kube-apiserver drain")
	go func() { d.stopped <- c.StopAPIServer(stopCtx, 0, cluster.Graceful) }()
	return d
}

// awaitStoppedListening waits for the draining apiserver at addr to
// refuse new connections and returns when it did.
func awaitStoppedListening(ctx context.Context, addr string) time.Time {
	Eventually(func() error {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
		}
		return err
	}).WithContext(ctx).WithTimeout(goawayTimeout).WithPolling(20*time.Millisecond).Should(HaveOccurred(),
		"kube-apiserver 0 stopped listening (its HTTP server's Shutdown began, GOAWAY sent on open connections) within %s of SIGTERM", goawayTimeout)
	return time.Now()
}

// writeWhileDraining changes objects through apiserver 1 while apiserver 0
// drains, and checks the watch open before the SIGTERM carried them.
func (r *shutdownRun) writeWhileDraining(ctx context.Context) {
	e2e.By(ctx, "writing through apiserver 1 while apiserver 0 drains: the open watch must still carry the changes")
	_, err := r.api.Create(ctx, "create-drain")
	Expect(err).NotTo(HaveOccurred())
	Relabel(ctx, r.api, "update-drain", "drain")
	Expect(r.api.Delete(ctx, "delete-drain")).To(Succeed())
	Eventually(func() bool { return deleteHeard(r.obs.Recorder.Snapshot(), r.created["delete-drain"].Key) }).
		WithContext(ctx).WithTimeout(e2e.EventTimeout).WithPolling(20*time.Millisecond).Should(BeTrue(), "the informer heard of the delete made while apiserver 0 drained")
	r.drainSeen = time.Now()
	rec := r.obs.Recorder.Snapshot()
	last := rec.Requests[len(rec.Requests)-1]
	Expect(last.ID == r.watch.ID && last.End.IsZero()).To(BeTrue(),
		"precondition: the watch open before SIGTERM (request %d) carried the drain's changes, still open %s after GOAWAY, with no request after it (last request: %+v)",
		r.watch.ID, r.drainSeen.Sub(r.goaway).Round(time.Millisecond), last)
}

// endDrainThenWrite ends apiserver 0's drain by end (SIGKILL, or waiting
// for its shutdown timeout), waits for it to exit, then changes objects
// through apiserver 1 again.
func (r *shutdownRun) endDrainThenWrite(ctx context.Context, end ShutdownEnd, d drain) {
	e2e.By(ctx, "ending apiserver 0's drain by "+string(end)+", then writing more")
	if end == ShutdownKilled {
		d.kill()
	}
	var stopErr error
	select {
	case stopErr = <-d.stopped:
	case <-time.After(shutdownExitBound):
		stopErr = fmt.Errorf("kube-apiserver 0 did not exit within %s of SIGTERM", shutdownExitBound)
	}
	d.end()
	if end == ShutdownKilled {
		Expect(stopErr).To(MatchError(context.Canceled), "kube-apiserver 0 was still draining when it was killed")
	} else {
		Expect(stopErr).NotTo(HaveOccurred())
	}
	r.exited = time.Now()
	_, err := r.api.Create(ctx, "create-after")
	Expect(err).NotTo(HaveOccurred())
	Expect(r.api.Delete(ctx, "delete-after")).To(Succeed())
}

// expectResumedElsewhere waits for convergence, reports the watch's end
// and the next request, and asserts S23's family: the informer resumed
// its watch on a new connection, within resumeBound, without
// re-initialising.
func (r *shutdownRun) expectResumedElsewhere(ctx context.Context, end ShutdownEnd) {
	recovery := r.obs.EventuallyConverged(ctx, r.server)
	r.obs.ExpectDeletesObserved(r.created["delete-drain"], r.created["delete-after"])
	n := r.obs.Report(recovery)
	rec := r.obs.Recorder.Snapshot()
	old := requestByID(rec, r.watch.ID)
	Expect(old.End.IsZero()).To(BeFalse(), "the watch on apiserver 0 ended")
	after := RequestsAfter(rec, r.watch.ID)
	Expect(after).NotTo(BeEmpty(), "requests after the watch on apiserver 0")
	first := after[0]
	r.env.Note("S23 shutdown", fmt.Sprintf(
		"drain ended by %s; GOAWAY %s after SIGTERM; the watch carried events until %s after it and ended %s after it (the stop returned %s after SIGTERM) with %q; next request %s after the watch's end: %s %s rv=%q sendInitialEvents=%v, status %d, new connection %v; re-initialisations %v",
		end, r.goaway.Sub(r.sigterm).Round(time.Millisecond), old.LastEvent.Sub(r.goaway).Round(time.Millisecond), old.End.Sub(r.goaway).Round(time.Millisecond),
		r.exited.Sub(r.sigterm).Round(time.Millisecond), old.Ended(), first.Start.Sub(old.End).Round(time.Millisecond),
		first.Method, first.Path, first.ResourceVersion, first.SendInitialEvents, first.Status, first.Conn != old.Conn, n.ReinitDetails))

	Expect(old.End.After(r.drainSeen)).To(BeTrue(), "precondition: the watch outlived GOAWAY until apiserver 0 exited (it ended %s after GOAWAY)", old.End.Sub(r.goaway).Round(time.Millisecond))
	Expect(first.Watch && !first.SendInitialEvents && first.ResourceVersion != "" && first.Status == 200).To(BeTrue(),
		"the informer "+ShutdownResumes+": its next request is a WATCH from its resourceVersion, accepted (got %+v; re-initialisations %v)", first, n.ReinitDetails)
	Expect(n.Reinitialisations).To(BeEmpty(), "the informer "+ShutdownResumes+" (re-initialisations: %v)", n.ReinitDetails)
	Expect(first.Conn).NotTo(Equal(old.Conn), "the resumed watch runs on a new connection")
	took := first.Start.Sub(old.End)
	r.env.RecordBound("resumed watch after apiserver 0's exit", old.End, first.Start, resumeBound, took < resumeBound)
	Expect(took).To(BeNumerically("<", resumeBound), "the informer resumed within %s of the watch's end", resumeBound)
}

// deleteHeard says whether the handler heard a delete of key.
func deleteHeard(rec probe.Record, key string) bool {
	return slices.ContainsFunc(rec.Events, func(e probe.Event) bool { return e.Kind == probe.Delete && e.Key == key })
}

// requestByID is the request with the given ID.
func requestByID(rec probe.Record, id int) probe.Request {
	for _, r := range rec.Requests {
		if r.ID == id {
			return r
		}
	}
	return probe.Request{}
}
