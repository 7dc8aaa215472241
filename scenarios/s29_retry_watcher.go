package scenarios

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/report"
)

// S29's assertions: a RetryWatcher resumes a watch the server ended, each
// object reaching its caller once; it reports a status it cannot recover
// from (410, 403) as an ERROR event and stops.
const (
	RetryWatcherResumes = "the RetryWatcher resumed the ended watch from its resourceVersion: every object reached the caller, once"
	RetryWatcherReports = "the RetryWatcher reported the unrecoverable status as an ERROR event and stopped"
	RetryWatcherStops   = "the RetryWatcher stopped when asked (Stop called twice): Done and its result channel closed"
)

// S29Bound is how soon after the fault S29's RetryWatcher must have done
// what it should (its restart delay is 1 s: tools/watch/retrywatcher.go
// minRestartDelay).
const S29Bound = 5 * time.Second

// S29Fault is what S29 does to the RetryWatcher's watch.
type S29Fault string

const (
	// WatchEndedCleanly: the server ends the watch (a clean EOF).
	WatchEndedCleanly S29Fault = "watch ended by the server"
	// WatchExpired: the watch ends with an ERROR event 410 Expired.
	WatchExpired S29Fault = "ERROR event 410"
	// WatchRefused: the watch ends cleanly and every new one is answered
	// 403 Forbidden (the user lost its right to watch).
	WatchRefused S29Fault = "new watches refused (403)"
)

// S29RetryWatcher is S29's value: both tables in client-go's default mode, and its negative controls.
var S29RetryWatcher = Register(Scenario{
	ID: "S29", Title: "a RetryWatcher through the informers' faults", Labels: []string{"retry-watcher"},
	Specs: []Spec{
		{
			Text: "resumes what it can, reports and stops on what it cannot",
			Entries: []Entry{
				{
					Name: "a watch the server ended: resumed, every object once", Modes: DefaultMode, Sample: true,
					Feature: string(WatchEndedCleanly),
					Run:     RunWith(RetryWatcher, WatchEndedCleanly),
				},
				{
					Name: "an ERROR event 410: reported, stopped", Modes: DefaultMode,
					Feature: string(WatchExpired),
					Run:     RunWith(RetryWatcher, WatchExpired),
				},
				{
					Name: "new watches refused (403): reported, stopped", Modes: DefaultMode, Labels: []string{"release-sensitive"},
					Feature: string(WatchRefused),
					Run:     RunWith(RetryWatcher, WatchRefused),
				},
			},
		},
		{
			Text: "UntilWithSync on the same faults: every new object reaches its condition, once",
			Entries: []Entry{
				{
					Name: "a watch the server ended", Modes: DefaultMode,
					Feature: "UntilWithSync: " + string(WatchEndedCleanly),
					Run:     RunWith(UntilWithSync, WatchEndedCleanly),
				},
				{
					Name: "an ERROR event 410: listed again", Modes: DefaultMode,
					Feature: "UntilWithSync: " + string(WatchExpired),
					Run:     RunWith(UntilWithSync, WatchExpired),
				},
				{
					Name: "new watches refused (403): listed again", Modes: DefaultMode,
					Feature: "UntilWithSync: " + string(WatchRefused),
					Run:     RunWith(UntilWithSync, WatchRefused),
				},
			},
		},
		{
			Text:   "fails when the client resumes its watches without their resourceVersion",
			Client: DropWatchResourceVersion,
			Run:    RunWith(RetryWatcher, WatchEndedCleanly),
			Fails:  []string{RetryWatcherResumes}, Because: "the S29 assertion catches a resume that starts over",
		},
		{
			Text:   "fails when the client hides the refusal's status",
			Client: httpfault.StatusesAsErrors,
			Run:    RunWith(RetryWatcher, WatchRefused),
			Fails:  []string{RetryWatcherReports}, Because: "the S29 assertion catches a refusal the RetryWatcher never reports",
		},
		{
			Text:   "fails when closing an open watch waits for its end",
			Client: DrainWatchOnClose,
			Run:    RunWith(RetryWatcher, WatchEndedCleanly),
			Fails:  []string{RetryWatcherStops}, Because: "the S29 assertion catches a Stop that never completes",
		},
		{
			Text:   "fails when no event of a re-watch reaches UntilWithSync",
			Client: SilentRewatches,
			Run:    RunWith(UntilWithSync, WatchEndedCleanly),
			Fails:  []string{UntilWithSyncDelivers}, Because: "the S29 assertion catches objects UntilWithSync never sees",
		},
	},
})

// RetryWatcher is S29: client-go's tools/watch RetryWatcher (what
// UntilWithoutRetry's callers and many controllers use to watch without an
// informer) on a typed pod watch, through faults the informers get: objects
// are created before and after the fault, which is injected on the
// client's next watch (httpfault), s.Client, when set, being the broken
// client of a negative control.
//
// WatchEndedCleanly: every object reaches the caller, each in one ADDED
// event, no ERROR event (RetryWatcherResumes). WatchExpired and
// WatchRefused: an ERROR event with the status's code reaches the caller
// and the RetryWatcher stops (Done) within S29Bound (RetryWatcherReports).
//
// Expected of client-go (tools/watch/retrywatcher.go doReceive): a clean
// end re-watches from the last resourceVersion received, after
// minRestartDelay; an ERROR event 410 is passed on and stops it, on
// v0.31-v0.37. A watch refused when (re)opened: v0.32-v0.37 pass a 403 or
// 401 on as an ERROR event and stop (kubernetes PR #126038); v0.31 logs it
// and retries for ever, the caller never told.
func RetryWatcher(ctx context.Context, s e2e.Setup, fault S29Fault) {
	isWatch := httpfault.Watches
	r, ctx := startS29(ctx, s, isWatch)
	env, writer := r.env, r.env.Subjects
	rw, got := startRetryWatcher(ctx, r)
	_, err := writer.Create(ctx, "watched-0")
	Expect(err).NotTo(HaveOccurred())
	Expect(got.drain(ctx, func() bool { return got.added["watched-0"] > 0 }, e2e.EventTimeout)).To(BeTrue(), "the RetryWatcher delivered a creation before the fault")

	e2e.By(ctx, "the fault on the RetryWatcher's watch: "+string(fault))
	defer injectS29(ctx, r.in, fault, isWatch)()
	// The open watch ends cleanly, as a server ends it; the injector
	// answers the RetryWatcher's next watch.
	start := time.Now()
	Expect(r.streams.EndStreams(isWatch)).To(Equal(1), "the RetryWatcher's open watch ended")
	createNamed(ctx, writer, "after-%d", 3)
	if fault == WatchEndedCleanly {
		expectRetryWatcherResumed(ctx, env, got, fault, start)
	} else {
		expectRetryWatcherStopped(ctx, env, rw, got, fault, start)
	}

	// Stop, twice (a caller's deferred Stop after its own): running or
	// already stopped, it returns, and Done and ResultChan close.
	e2e.By(ctx, "Stop called twice")
	stopStart := time.Now()
	err = e2e.CallWithin(ctx, "s29-stop", "the RetryWatcher's Stop, twice, then Done and ResultChan", S29Bound, func() {
		rw.Stop()
		rw.Stop()
		<-rw.Done()
		<-got.resultClosed
	})
	env.RecordBound("the RetryWatcher stopped when asked twice", stopStart, time.Now(), S29Bound, err == nil)
	Expect(err).NotTo(HaveOccurred(), RetryWatcherStops)
}

// s29Received is what a RetryWatcher's result channel delivered: ADDED
// events by name and the ERROR events' statuses.
type s29Received struct {
	added  map[string]int
	errors []metav1.Status
	events chan watch.Event
	// resultClosed is closed when the RetryWatcher closed its result
	// channel.
	resultClosed chan struct{}
}

// startRetryWatcher starts a RetryWatcher on S29's pods at their list's
// resource version, stopped when the spec ends, and reads its results.
func startRetryWatcher(ctx context.Context, r *s29Run) (*watchtools.RetryWatcher, *s29Received) {
	ns := r.env.Namespace
	list, err := r.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	lw := watcherFunc(func(o metav1.ListOptions) (watch.Interface, error) { return r.cs.CoreV1().Pods(ns).Watch(ctx, o) })
	//lint:ignore SA1019 the one constructor every client-go from v0.31 has (NewRetryWatcherWithContext came in v0.33)
	rw, err := watchtools.NewRetryWatcher(list.ResourceVersion, lw)
	Expect(err).NotTo(HaveOccurred())
	e2e.Defer(ctx, rw.Stop)
	got := &s29Received{added: map[string]int{}, events: make(chan watch.Event, 100), resultClosed: make(chan struct{})}
	go func() {
		defer close(got.resultClosed)
		for e := range rw.ResultChan() {
			select {
			case got.events <- e:
			default: // the spec stopped reading: what is left is not counted
			}
		}
	}()
	return rw, got
}

// drain counts the results until until holds or bound passes; it says
// whether until held.
func (got *s29Received) drain(ctx context.Context, until func() bool, bound time.Duration) bool {
	t := time.NewTimer(bound)
	defer t.Stop()
	for !until() {
		select {
		case e := <-got.events:
			got.count(e)
		case <-t.C:
			return until()
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// count counts one result.
func (got *s29Received) count(e watch.Event) {
	switch e.Type {
	case watch.Added:
		if m, ok := e.Object.(metav1.Object); ok {
			got.added[m.GetName()]++
		}
	case watch.Error:
		if st, ok := e.Object.(*metav1.Status); ok {
			got.errors = append(got.errors, *st)
		} else {
			got.errors = append(got.errors, metav1.Status{Message: fmt.Sprintf("%T", e.Object)})
		}
	}
}

// expectRetryWatcherResumed: after a watch that ended cleanly, the
// RetryWatcher delivered each creation once, and no ERROR event.
func expectRetryWatcherResumed(ctx context.Context, env *e2e.Env, got *s29Received, fault S29Fault, start time.Time) {
	all := func() bool { return got.added["after-0"] > 0 && got.added["after-1"] > 0 && got.added["after-2"] > 0 }
	got.drain(ctx, all, S29Bound)
	// Duplicates would arrive with the rest: one more moment to see them.
	got.drain(ctx, func() bool { return false }, time.Second)
	var wrong []string
	for _, name := range []string{"watched-0", "after-0", "after-1", "after-2"} {
		if got.added[name] != 1 {
			wrong = append(wrong, fmt.Sprintf("%s: %d ADDED events", name, got.added[name]))
		}
	}
	for _, st := range got.errors {
		wrong = append(wrong, fmt.Sprintf("ERROR event %d %s", st.Code, st.Reason))
	}
	env.Observe(report.Calls("ADDED events after the end of the watch", got.added["after-0"]+got.added["after-1"]+got.added["after-2"]))
	env.Note("S29 RetryWatcher", fmt.Sprintf("%s: ADDED %v, errors %d, %s after the fault", fault, got.added, len(got.errors), time.Since(start).Round(time.Millisecond)))
	Expect(wrong).To(BeEmpty(), RetryWatcherResumes)
}

// expectRetryWatcherStopped: after a fault it cannot resume from (410, a
// refused watch), the RetryWatcher reported it as an ERROR event and
// stopped within S29Bound.
func expectRetryWatcherStopped(ctx context.Context, env *e2e.Env, rw *watchtools.RetryWatcher, got *s29Received, fault S29Fault, start time.Time) {
	want := int32(http.StatusGone)
	if fault == WatchRefused {
		want = http.StatusForbidden
	}
	stopped := func() bool {
		select {
		case <-rw.Done():
			return len(got.errors) > 0
		default:
			return false
		}
	}
	done := got.drain(ctx, stopped, S29Bound)
	codes := []int32{}
	for _, st := range got.errors {
		codes = append(codes, st.Code)
	}
	env.Observe(report.Value("ERROR events the caller got", fmt.Sprint(codes)))
	env.Observe(report.Value("stopped", fmt.Sprint(done)))
	env.Note("S29 RetryWatcher", fmt.Sprintf("%s: ERROR events %v, stopped %t within %s", fault, codes, done, S29Bound))
	env.RecordBound("the RetryWatcher reported "+string(fault)+" and stopped", start, time.Now(), S29Bound, done)
	Expect(done).To(BeTrue(), RetryWatcherReports+" within %s: ERROR events %v", S29Bound, codes)
	Expect(codes).To(ContainElement(want), RetryWatcherReports+": an ERROR event %d", want)
}

// DropWatchResourceVersion is a negative control's broken client: its
// watches go out without their resourceVersion, so a resumed watch starts
// over with every object as ADDED.
func DropWatchResourceVersion(cfg *rest.Config) *rest.Config {
	return httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
		if q := req.URL.Query(); q.Get("watch") == "true" && q.Has("resourceVersion") {
			q.Del("resourceVersion")
			req = req.Clone(req.Context())
			req.URL.RawQuery = q.Encode()
		}
		return rt.RoundTrip(req)
	})
}

// watcherFunc is a function as the cache.Watcher a RetryWatcher watches
// through.
type watcherFunc func(metav1.ListOptions) (watch.Interface, error)

func (f watcherFunc) Watch(o metav1.ListOptions) (watch.Interface, error) { return f(o) }

// DrainWatchOnClose is a negative control's broken client: closing a watch
// body that has not ended reads it to its end first (as a transport that
// drains bodies to reuse their connection would), so stopping an open
// watch waits for the server to end it, minutes later.
func DrainWatchOnClose(cfg *rest.Config) *rest.Config {
	return httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && httpfault.Watches(req) {
			resp.Body = &drainingBody{ReadCloser: resp.Body}
		}
		return resp, err
	})
}

type drainingBody struct {
	io.ReadCloser
	ended atomic.Bool
}

func (b *drainingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.ended.Store(true)
	}
	return n, err
}

func (b *drainingBody) Close() error {
	if !b.ended.Load() {
		_, _ = io.Copy(io.Discard, b.ReadCloser)
	}
	return b.ReadCloser.Close()
}

// S29's UntilWithSync assertion: every object created after the fault
// reached the condition as one ADDED event, none as DELETED, and
// UntilWithSync returned once the condition held.
const UntilWithSyncDelivers = "UntilWithSync's condition saw every object created after the fault, each ADDED once, and UntilWithSync returned"

// UntilWithSync is S29's other half: client-go's tools/watch UntilWithSync
// (an informer of its own behind a watch.Interface, what `kubectl wait`
// and many controllers' one-shot waits use) through the same faults as the
// RetryWatcher, s.Client, when set, being the broken client of a negative
// control. Its precondition sees the objects created before; its condition
// holds once the three objects created after the fault have arrived.
//
// Asserts (UntilWithSyncDelivers), within S29Bound of the fault: each
// object created after it reached the condition in exactly one ADDED event,
// no object in a DELETED event, and UntilWithSync returned (its informer
// stopped). Observed: the MODIFIED events of objects that did not change
// (a relist's Replace, handed to the informer's UpdateFunc).
//
// Expected of client-go (tools/watch/until.go UntilWithSync,
// informerwatcher.go NewIndexerInformerWatcher; tools/cache/reflector.go
// ListAndWatch): unlike the RetryWatcher, its reflector recovers from all
// three: a clean end re-watches from the last resourceVersion, an ERROR 410
// or a refused watch (403, not retriable: isWatchErrorRetriable) ends
// ListAndWatch, which lists again after its backoff (800 ms at first); the
// new objects arrive from that list as Adds. v0.31-v0.37.
func UntilWithSync(ctx context.Context, s e2e.Setup, fault S29Fault) {
	// The informer's open watch may be its streaming list's: every watch
	// stream is held; the faults go to resuming watches.
	isWatch, anyWatch := httpfault.Watches, httpfault.WatchStreams
	run, ctx := startS29(ctx, s, anyWatch)
	env, writer := run.env, run.env.Subjects
	u := startUntilWithSync(ctx, run)
	Eventually(u.preconditioned).WithTimeout(e2e.SyncTimeout).Should(BeClosed(), "UntilWithSync's informer synced and ran the precondition")
	Expect(u.before.Load()).To(Equal(int32(3)), "UntilWithSync's precondition saw the objects created before it")
	_, err := writer.Create(ctx, "watched-0")
	Expect(err).NotTo(HaveOccurred())
	Expect(u.waitFor(func() bool { return u.count("watched-0", watch.Added) > 0 }, e2e.EventTimeout)).To(BeTrue(), "UntilWithSync's condition saw a creation before the fault")

	e2e.By(ctx, "the fault on UntilWithSync's watch: "+string(fault))
	defer injectS29(ctx, run.in, fault, isWatch)()
	start := time.Now()
	Expect(run.streams.EndStreams(anyWatch)).To(Equal(1), "UntilWithSync's open watch ended")
	createNamed(ctx, writer, "after-%d", 3)
	var r s29Return
	var ok bool
	select {
	case r = <-u.returned:
		ok = true
	case <-time.After(S29Bound):
	}
	wrong, modified := u.wrong()
	if !ok {
		wrong = append(wrong, fmt.Sprintf("UntilWithSync had not returned %s after the fault", S29Bound))
	} else if r.err != nil {
		wrong = append(wrong, fmt.Sprintf("UntilWithSync returned %v", r.err))
	}
	took := "-"
	end := time.Now()
	if ok {
		took, end = r.at.Sub(start).Round(time.Millisecond).String(), r.at
	}
	// How many depends on when the fault met the watch (measured 1-4 over
	// runs of the same code): compared between series only.
	env.Observe(report.Calls("UntilWithSync: MODIFIED events of unchanged objects", modified).Varying())
	env.Note("S29 UntilWithSync", fmt.Sprintf("%s: returned %t (%s after the fault), MODIFIED events %d, %v", fault, ok, took, modified, wrong))
	env.RecordBound("UntilWithSync saw the new objects through "+string(fault)+" and returned", start, end, S29Bound, len(wrong) == 0)
	Expect(wrong).To(BeEmpty(), UntilWithSyncDelivers)
}

// s29Until is an UntilWithSync call on S29's pods, in the background: its
// precondition records how many objects its store held, its condition
// counts the events by name and type and holds once every "after-N" pod
// was added.
type s29Until struct {
	mu     sync.Mutex
	events map[string]map[watch.EventType]int
	// seen gets a value at each event.
	seen           chan struct{}
	before         atomic.Int32
	preconditioned chan struct{}
	returned       chan s29Return
}

// s29Return is what UntilWithSync returned, and when.
type s29Return struct {
	ev  *watch.Event
	err error
	at  time.Time
}

// startUntilWithSync starts the call, bounded by 4 S29Bound.
func startUntilWithSync(ctx context.Context, run *s29Run) *s29Until {
	u := &s29Until{events: map[string]map[watch.EventType]int{}, seen: make(chan struct{}, 100),
		preconditioned: make(chan struct{}), returned: make(chan s29Return, 1)}
	lw := cache.NewListWatchFromClient(run.cs.CoreV1().RESTClient(), "pods", run.env.Namespace, fields.Everything())
	var once sync.Once
	precondition := func(store cache.Store) (bool, error) {
		u.before.Store(int32(len(store.List())))
		once.Do(func() { close(u.preconditioned) })
		return false, nil
	}
	condition := func(e watch.Event) (bool, error) {
		if m, ok := e.Object.(metav1.Object); ok {
			u.mu.Lock()
			if u.events[m.GetName()] == nil {
				u.events[m.GetName()] = map[watch.EventType]int{}
			}
			u.events[m.GetName()][e.Type]++
			u.mu.Unlock()
		}
		select {
		case u.seen <- struct{}{}:
		default:
		}
		return u.count("after-0", watch.Added) > 0 && u.count("after-1", watch.Added) > 0 && u.count("after-2", watch.Added) > 0, nil
	}
	uctx, cancel := context.WithTimeout(ctx, 4*S29Bound)
	e2e.Defer(ctx, cancel)
	go func() {
		ev, err := watchtools.UntilWithSync(uctx, lw, &corev1.Pod{}, precondition, condition)
		u.returned <- s29Return{ev, err, time.Now()}
	}()
	return u
}

// count is how many events of type t the condition saw of name.
func (u *s29Until) count(name string, t watch.EventType) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.events[name][t]
}

// waitFor waits, event by event, until cond holds or bound passes; it
// says whether cond held.
func (u *s29Until) waitFor(cond func() bool, bound time.Duration) bool {
	t := time.NewTimer(bound)
	defer t.Stop()
	for !cond() {
		select {
		case <-u.seen:
		case <-t.C:
			return cond()
		}
	}
	return true
}

// wrong is what the condition saw amiss (an "after-N" pod not added once,
// any DELETED event) and how many MODIFIED events it saw.
func (u *s29Until) wrong() (wrong []string, modified int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, name := range []string{"after-0", "after-1", "after-2"} {
		if n := u.events[name][watch.Added]; n != 1 {
			wrong = append(wrong, fmt.Sprintf("%s: %d ADDED events", name, n))
		}
	}
	for name, byType := range u.events {
		if byType[watch.Deleted] > 0 {
			wrong = append(wrong, fmt.Sprintf("%s: %d DELETED events", name, byType[watch.Deleted]))
		}
		modified += byType[watch.Modified]
	}
	return wrong, modified
}

// SilentRewatches is a negative control's broken client: the server
// answers every watch after the first, but none of its events reach the
// client (a proxy holding the stream), so nothing after a re-watch arrives.
func SilentRewatches(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	var watches atomic.Int32
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return httpfault.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			// A streaming list is a watch too: the first is the
			// informer's initial one, in either sync mode.
			if err == nil && httpfault.WatchStreams(req) && watches.Add(1) > 1 {
				resp.Body = &silentBody{ReadCloser: resp.Body, ctx: req.Context()}
			}
			return resp, err
		})
	})
	return cfg
}

type silentBody struct {
	io.ReadCloser
	ctx context.Context
}

func (b *silentBody) Read([]byte) (int, error) {
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

// startS29 is what both halves of S29 share: an Env with three objects
// created before anything watches, the injectors (the streams matching
// held kept open, to be ended at will) and a clientset through them,
// s.Client last.
func startS29(ctx context.Context, s e2e.Setup, held httpfault.Match) (*s29Run, context.Context) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	createNamed(ctx, env.Subjects, "before-%d", 3)
	r := &s29Run{env: env, in: &httpfault.Injector{Faults: env.Faults}, streams: &httpfault.StreamInjector{Faults: env.Faults}}
	restorePass := r.streams.Pass(held)
	e2e.Defer(ctx, restorePass)
	cfg := r.streams.Instrument(r.in.Instrument(rest.CopyConfig(env.User)))
	if s.Client != nil {
		cfg = s.Client(cfg)
	}
	var err error
	r.cs, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return r, ctx
}

type s29Run struct {
	env     *e2e.Env
	in      *httpfault.Injector
	streams *httpfault.StreamInjector
	cs      *kubernetes.Clientset
}

// injectS29 arms fault on the next watches matching isWatch (a clean end
// needs nothing: the open watch's end is the fault) and returns its undo.
func injectS29(ctx context.Context, in *httpfault.Injector, fault S29Fault, isWatch httpfault.Match) (restore func()) {
	switch fault {
	case WatchEndedCleanly:
		return func() {}
	case WatchExpired:
		restore, _ = in.EndWatchesWithError(isWatch, 1, http.StatusGone, metav1.StatusReasonExpired, "S29: too old resource version")
	case WatchRefused:
		restore, _ = in.FailRequests(isWatch, -1, http.StatusForbidden, metav1.StatusReasonForbidden, "S29: pods is forbidden")
	default:
		e2e.Fail(ctx, fmt.Sprintf("S29: no such fault %q", fault))
	}
	return restore
}
