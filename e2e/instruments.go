package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
	"github.com/informer-conformance/informer-conformance/report/timing"
)

// ConvergeTimeout bounds the wait for a store to equal the server's state.
const ConvergeTimeout = 60 * time.Second

// ReflectorMaxBackoff is the longest a reflector waits between two failed
// attempts: client-go's reflector backs off exponentially from 800 ms to a
// cap of 30 s with a jitter of 1.0 (tools/cache/reflector.go
// NewReflectorWithOptions: wait.NewExponentialBackoffManager(800ms, 30s,
// 2m, 2.0, 1.0)), so up to 60 s, and how far it has grown depends on how
// long the server was down, the machine's doing. A wait for convergence
// that starts while the informer's requests are failing allows it on top of
// ConvergeTimeout: the bound stays client-go's, not the machine's.
const ReflectorMaxBackoff = 60 * time.Second

// convergeTimeout is the bound of a wait for convergence starting now:
// ConvergeTimeout, plus ReflectorMaxBackoff when the informer's last
// request failed (no response, or an error status or event: its reflector
// is backing off).
func (o *Observed) convergeTimeout() time.Duration {
	reqs := o.Recorder.Snapshot().Requests
	if len(reqs) == 0 {
		return ConvergeTimeout
	}
	last := reqs[len(reqs)-1]
	if last.Status == 0 && !last.End.IsZero() || last.Status >= 400 || last.ErrorCode >= 400 {
		return ConvergeTimeout + ReflectorMaxBackoff
	}
	return ConvergeTimeout
}

// HandlerLagTimeout bounds how long an informer's handler calls may trail
// its converged store. client-go updates the indexer, then queues the
// notification for each handler in an unbounded buffer that one goroutine
// per handler drains (tools/cache/shared_informer.go HandleDeltas ->
// processDeltas -> sharedProcessor.distribute -> processorListener.add/pop/
// run): nothing is dropped, so once the store holds the server's state the
// calls are queued, and the recording handler returns at once.
const HandlerLagTimeout = 5 * time.Second

// HandlersAddUp is the assertion every convergence check makes of the
// handler calls (negative controls match it).
const HandlersAddUp = "the handler calls add up to the server's state"

// StartProxy puts a fault proxy in front of c's kube-apiservers (its
// upstreams, pinned to the first) and closes it when the spec of ctx ends.
func StartProxy(ctx context.Context, c cluster.Addressable) *faultproxy.Proxy {
	ginkgo.GinkgoHelper()
	p, err := faultproxy.Start(c.APIServerAddrs()...)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "start fault proxy")
	DeferCleanup(ctx, 0, func(context.Context) error { return p.Close() })
	return p
}

// Observed is a probe a spec watches: on failure its record is written to
// the spec's artifacts directory.
type Observed struct {
	*probe.Probe
	Name string
	Dir  string
	// env is the spec's, whose timeline draws the probe.
	env *Env
	// reported counts the consistency detector's reports a failure has
	// named already (detectorError).
	reported int
	// converged are the moments EventuallyConverged saw the store converge.
	converged []time.Time
	// SyncMeasuresLoad says the informer's sync time measures the machine
	// more than client-go (a collection of many pages, many large objects,
	// tens of informers syncing at once): its "start to synced"
	// observation is marked varying, compared between series only. A
	// scenario sets it after starting the probe.
	SyncMeasuresLoad bool
	// ServersVary says kube-apiservers of several versions answer the
	// informer (a rolling upgrade): which of them answered a request is
	// timing, so the media types and encodings of the answers are marked
	// varying. A scenario sets it after starting the probe.
	ServersVary bool
	// Fleet names the fleet the informer is one of: informers a spec
	// starts alike (S12's fifty), whose observations the report keeps as
	// one set, the informer "<Fleet> (<n> informers)" (report.Fleet), not
	// n sets alike. A scenario sets it after starting the probe.
	Fleet string
}

// markVarying marks varying the observations of o's informer that its
// scenario said measure the machine or the servers' timing
// (SyncMeasuresLoad, ServersVary).
func (o *Observed) markVarying(obs []report.Observation) []report.Observation {
	for i, ob := range obs {
		switch {
		case o.SyncMeasuresLoad && ob.What == probe.StartToSynced,
			o.ServersVary && (strings.HasSuffix(ob.What, ": "+probe.AnswersContentType) || strings.HasSuffix(ob.What, ": "+probe.AnswersContentEncoding)):
			obs[i] = ob.Varying()
		}
	}
	return obs
}

// detectorError is the consistency detector's reports about the informer
// that no failure has named yet, as an error naming the informer, or nil.
// Every spec fails on a report: the first check that sees one (the sync,
// a convergence wait) fails with it, the probe's clean-up with any left.
func (o *Observed) detectorError() error {
	rs := o.Recorder.Snapshot().Inconsistencies
	if len(rs) <= o.reported {
		return nil
	}
	err := &probe.InconsistencyError{Reports: rs[o.reported:]}
	o.reported = len(rs)
	return fmt.Errorf("informer %s: %w (record and logs: %s)", o.Name, err, o.Dir)
}

// StartProbe builds, starts and syncs a probe on cfg, stops it when the spec
// ends, and on failure dumps its record next to the process logs. The probe
// is on the spec's informer stack unless opts picks one (or an informer of
// its own), and its client is built with the set-up's broken client when
// there is one (Setup.Client), then the downstream's hooks (SetHooks).
func (e *Env) StartProbe(ctx context.Context, name string, cfg *rest.Config, opts probe.Options) *Observed {
	ginkgo.GinkgoHelper()
	o := e.StartProbeUnsynced(name, cfg, opts)
	syncCtx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	end := e.TimePhase(timing.ClientSync)
	err := o.WaitForSync(syncCtx)
	end()
	if derr := o.detectorError(); derr != nil {
		// A plain error: Gomega would print the wrapped reports' fields too.
		gomega.Expect(errors.New(derr.Error())).NotTo(gomega.HaveOccurred(), "informer %s: a report of client-go's watch-list consistency detector", name)
	}
	gomega.Expect(err).To(gomega.Succeed(), "informer %s synced within %s", name, SyncTimeout)
	return o
}

// StartProbeUnsynced is StartProbe without waiting for the sync.
func (e *Env) StartProbeUnsynced(name string, cfg *rest.Config, opts probe.Options) *Observed {
	ginkgo.GinkgoHelper()
	if opts.Stack == "" && opts.Informer == nil {
		opts.Stack = e.stack
	}
	if e.setup.Client != nil {
		cfg = e.setup.Client(rest.CopyConfig(cfg))
	}
	cfg, opts = applyHooks(e.fe, e.h.Hooks(), cfg, opts)
	e.watchRateLimiter(cfg.Host)
	p, err := probe.New(cfg, opts)
	if errors.Is(err, probe.ErrNotSupported) {
		e.fe.Skip(fmt.Sprintf("probe %s: %v", name, err))
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "build probe %s", name)
	o := &Observed{Probe: p, Name: name, Dir: e.fe.ArtifactsDir(), env: e}
	e.noteDetector()
	// The timeline's clean-up (StartEnv's) runs after the probe's: it
	// draws the probe stopped.
	e.timeline.probes = append(e.timeline.probes, o)
	p.Start()
	e.fe.DeferCleanup(0, func(context.Context) error {
		// Bounded: a handler or informer that never returns fails the spec
		// here, naming itself, instead of holding the run until its global
		// timeout.
		stopErr := errors.Join(o.StopWithin(ShutdownTimeout), o.detectorError())
		if stopErr != nil || e.fe.Failed() {
			path, err := o.dump()
			if err != nil {
				e.Note("probe dump failed", err.Error())
			} else {
				e.fe.AddReportEntry("probe record", path)
			}
		}
		return stopErr
	})
	return o
}

// ShutdownTimeout bounds each probe's Factory.Shutdown when its spec ends
// (probe.ShutdownTimeout: how client-go's Shutdown waits, and why a working
// informer needs milliseconds).
const ShutdownTimeout = probe.ShutdownTimeout

// StopWithin stops the probe's informers (Factory.Shutdown) and returns nil
// once they have stopped, or, when Shutdown has not returned within d, an
// error naming the informer, what did not return and the handler or
// informer goroutine it waits on, with the goroutine dump (runtime/pprof
// goroutine profile, debug=2) of the stuck goroutines written to the spec's
// artifacts directory. The clean-up StartProbe registers calls it with
// ShutdownTimeout and fails the spec with its error.
func (o *Observed) StopWithin(d time.Duration) error {
	if err := withDump(o.Probe.StopWithin(d), o.Dir, o.Name); err != nil {
		return fmt.Errorf("informer %s: %w", o.Name, err)
	}
	return nil
}

// CallWithin runs f, a call into the client under test (e.g. ending
// requests whose context ended), and returns nil once it returned, or,
// when it has not within d, an error naming what and where it waits, with
// the goroutine dump written to the spec's artifacts directory as
// goroutines-<name>.txt (of the spec of ctx). For clean-ups:
// DeferCleanup(ctx, 0, func(ctx context.Context) error { return
// e2e.CallWithin(ctx, ...) }).
func CallWithin(ctx context.Context, name, what string, d time.Duration, f func()) error {
	return withDump(probe.CallWithin(what, d, f), SpecArtifactsDir(ctx), name)
}

// CancelTimeout bounds a clean-up's wait for calls of the client under
// test whose context it ended: net/http's RoundTrip and response bodies
// return when the request's context ends, and client-go's REST client
// passes the caller's context to them, so a working client returns at once.
const CancelTimeout = 10 * time.Second

var dumpNameChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// withDump writes the goroutine dump of a *probe.StuckError into dir and
// names the file in the error it returns; other errors pass unchanged.
func withDump(err error, dir, name string) error {
	var stuck *probe.StuckError
	if !errors.As(err, &stuck) {
		return err
	}
	path := filepath.Join(dir, "goroutines-"+dumpNameChars.ReplaceAllString(name, "-")+".txt")
	werr := os.MkdirAll(dir, 0o755)
	if werr == nil {
		werr = os.WriteFile(path, stuck.Dump(), 0o644)
	}
	if werr != nil {
		return fmt.Errorf("%w; goroutine dump not written: %v", err, werr)
	}
	return fmt.Errorf("%w; goroutine dump in %s", err, path)
}

func (o *Observed) dump() (string, error) {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return "", err
	}
	rec := o.Recorder.Snapshot()
	data, err := json.MarshalIndent(struct {
		probe.Record
		Reinitialisations []probe.Reinit `json:"reinitialisations"`
	}{rec, probe.Reinitialisations(rec)}, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(o.Dir, "probe-"+o.Name+".json")
	return path, os.WriteFile(path, data, 0o644)
}

// EventuallyConverged waits until the store equals a quorum read of the
// server, then until the handler calls add up to it too (controllers act on
// events, not on the store: a relist that fixes the store but tells no
// handler fails here), and returns how long the store took; the failure
// message carries the diff and where the record and logs are.
func (o *Observed) EventuallyConverged(ctx context.Context, server probe.Lister) time.Duration {
	ginkgo.GinkgoHelper()
	start := time.Now()
	timeout := o.convergeTimeout()
	met := false
	endConverge := o.env.TimePhase(timing.ClientConverge)
	defer endConverge() // also when the wait failed
	defer func() {
		// Also when the wait failed: the timeline shows where it gave up.
		at := time.Now()
		if met {
			o.converged = append(o.converged, at)
		}
		o.env.RecordBound(fmt.Sprintf("informer %s converged", o.Name), start, at, timeout, met)
	}()
	gomega.Eventually(ctx, func(ctx context.Context) error {
		if err := o.detectorError(); err != nil {
			// Its reflector has stopped: the store will not converge.
			return gomega.StopTrying(err.Error())
		}
		return probe.Converged(ctx, o.Informer.GetStore(), server)
	}).WithTimeout(timeout).WithPolling(50*time.Millisecond).Should(gomega.Succeed(),
		"informer %s converges to the server within %s (record and logs: %s)", o.Name, timeout, o.Dir)
	took := time.Since(start)
	met = true
	endConverge()
	if o.HandlerChecked {
		o.env.EventuallyHandlersConverged(ctx, o.Name, o.Recorder, server, o.Dir)
	}
	o.ExpectStackEncoding()
	return took
}

// AnsweredInCBOR is the assertion ExpectStackEncoding makes on the CBOR
// stacks (negative controls match it).
const AnsweredInCBOR = "asked for CBOR and was answered in CBOR"

// ExpectStackEncoding asserts, on a CBOR stack, that every request of the
// probe so far asked for CBOR (its Accept header) and that every 2xx
// answer was CBOR (application/cbor, or application/cbor-seq for a watch):
// the client gates and the server's took effect. A server without the
// gate answers JSON, which the client accepts at q=0.9 and decodes without
// a word. Other stacks: nothing to check here (TestStacks checks their
// encodings). EventuallyConverged calls it; a spec that checks no
// convergence calls it itself.
func (o *Observed) ExpectStackEncoding() {
	ginkgo.GinkgoHelper()
	if !o.Stack.CBOR() {
		return
	}
	var wrong []string
	rec := o.Recorder.Snapshot()
	for _, r := range rec.Requests {
		ct, _, _ := mime.ParseMediaType(r.ContentType)
		asked := strings.Contains(r.Accept, "application/cbor")
		answered := r.Status < 200 || r.Status > 299 || ct == "application/cbor" || ct == "application/cbor-seq"
		if !asked || !answered {
			wrong = append(wrong, fmt.Sprintf("#%d %s %s: Accept %q, answered %d %q", r.ID, r.Method, r.Path, r.Accept, r.Status, r.ContentType))
		}
	}
	gomega.Expect(wrong).To(gomega.BeEmpty(), "informer %s (stack %s) "+AnsweredInCBOR+" (%d requests; record and logs: %s)", o.Name, o.Stack, len(rec.Requests), o.Dir)
}

// EventuallyHandlersConverged waits, within HandlerLagTimeout, until the
// handler calls recorded in rec add up to a quorum read of the server. For
// an informer whose store has converged.
func (e *Env) EventuallyHandlersConverged(ctx context.Context, name string, rec *probe.Recorder, server probe.Lister, dir string) {
	ginkgo.GinkgoHelper()
	defer e.TimePhase(timing.ClientHandlers)()
	gomega.Eventually(ctx, func(ctx context.Context) error {
		return probe.HandlersConverged(ctx, rec.Snapshot(), server)
	}).WithTimeout(HandlerLagTimeout).WithPolling(50*time.Millisecond).Should(gomega.Succeed(),
		"informer %s: %s within %s of its store (record and logs: %s)", name, HandlersAddUp, HandlerLagTimeout, dir)
}

// SawEveryDelete is the assertion ExpectDeletesObserved makes (negative
// controls match it).
const SawEveryDelete = "saw every delete"

// ExpectDeletesObserved asserts delete accounting.
func (o *Observed) ExpectDeletesObserved(deleted ...probe.Object) {
	ginkgo.GinkgoHelper()
	gomega.Expect(probe.DeletesObserved(o.Recorder.Snapshot(), deleted)).To(gomega.Succeed(),
		"informer %s "+SawEveryDelete+" (record and logs: %s)", o.Name, o.Dir)
}

// Numbers summarises the record; recovery is the time from the fault's end
// to convergence (0 if not measured).
func (o *Observed) Numbers(recovery time.Duration) Numbers {
	return NumbersOf(o.Name, o.Recorder.Snapshot(), recovery)
}

// NumbersOf summarises a record under an informer's name (for records a
// spec narrowed itself, e.g. one informer of several sharing a client).
func NumbersOf(name string, rec probe.Record, recovery time.Duration) Numbers {
	reinits := probe.Reinitialisations(rec)
	n := Numbers{Informer: name, Reinitialisations: probe.CountByCause(reinits), Dials: len(rec.Dials),
		Requests: map[string]int{}, Events: map[string]int{}, RecoverySeconds: recovery.Seconds()}
	for _, r := range reinits {
		n.ReinitDetails = append(n.ReinitDetails, r.String())
	}
	for _, r := range rec.Requests {
		n.Requests[r.Kind()]++
	}
	if len(rec.ConsistencyChecks) > 0 {
		n.Requests[probe.KindConsistencyCheck] = len(rec.ConsistencyChecks)
	}
	for _, i := range rec.Inconsistencies {
		n.Inconsistencies = append(n.Inconsistencies, i.Report)
	}
	for _, e := range rec.Events {
		n.Events[string(e.Kind)]++
		if e.Tombstone {
			n.Events["Delete (tombstone)"]++
		}
		if e.UIDChanged() {
			n.Events["Update (UID changed)"]++
		}
	}
	return n
}

// Report adds the numbers to the spec's report (Env.ReportNumbers).
func (o *Observed) Report(recovery time.Duration) Numbers {
	n := o.Numbers(recovery)
	o.env.ReportNumbers(n)
	return n
}

// ExpectWatchOpen asserts, inside an Eventually, that the last of an
// informer's requests rs is a watch the server accepted and that is still
// open (probe.Request.OpenWatch), and returns it; what names the informer.
//
//	Eventually(func(g Gomega) {
//		last := e2e.ExpectWatchOpen(g, "the informer", pods.Recorder.Snapshot().Requests)
//		...
//	}).WithContext(ctx).WithTimeout(e2e.EventTimeout).Should(Succeed())
func ExpectWatchOpen(g gomega.Gomega, what string, rs []probe.Request) probe.Request {
	g.Expect(rs).NotTo(gomega.BeEmpty(), "%s has sent requests", what)
	last := rs[len(rs)-1]
	g.Expect(last.OpenWatch()).To(gomega.BeTrue(), "%s has a watch open: %+v", what, last)
	return last
}
