package probe

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/consistencydetector"

	"github.com/informer-conformance/informer-conformance/probe/watchlistdetector"
)

// client-go's watch-list consistency detector (KUBE_WATCHLIST_INCONSISTENCY_DETECTOR,
// switched on by package watchlistdetector): after every streaming list,
// before the reflector replaces its store, tools/cache/reflector.go watchList
// calls checkWatchListDataConsistencyIfRequested
// (reflector_data_consistency_detector.go), which calls
// consistencydetector.CheckDataConsistency (util/consistencydetector): it
// LISTs through the informer's own ListerWatcher at the streaming list's
// resourceVersion with resourceVersionMatch=Exact (prepareListCallOptions;
// a snapshot read from etcd), retrying every second until it gets an answer
// or the informer stops, and compares the objects, sorted by UID, with what
// the stream delivered. On a difference it panics with
// "data inconsistency detected for <reflector name>, panicking!" (v0.31 to
// v0.37 alike). Client-go v0.31-v0.33 run the same check after a typed,
// dynamic or metadata client's List served as a watch-list
// (gentype/type.go alsoLister.List:
// CheckWatchListFromCacheDataConsistencyIfRequested), in the caller's
// goroutine.
//
// The reflector's goroutine runs ListAndWatch under utilruntime.HandleCrash
// (v0.31-v0.35: wait.BackoffUntil, apimachinery pkg/util/wait/backoff.go;
// v0.36-v0.37: Reflector.RunWithContext's DelayFunc.Until, wait/loop.go),
// which recovers the panic, calls utilruntime.PanicHandlers, then panics
// again (ReallyCrash): the whole test process would die. detectorHandler,
// one of those handlers, records the report on the probe whose informer
// the goroutine belongs to and ends that goroutine (runtime.Goexit, before
// the second panic): the informer's reflector stops, the process and every
// other goroutine go on, and the spec fails naming the detector and the
// informer (e2e). Any other panic, and a detector panic in a goroutine no
// probe started, pass through untouched and crash as client-go intends.

// Inconsistency is one report of the consistency detector.
type Inconsistency struct {
	Time time.Time `json:"time"`
	// Report is the detector's panic message; the difference itself is in
	// client-go's log (klog, "previously received data ... is different").
	Report string `json:"report"`
}

// IsConsistencyCheck says whether a request is the consistency detector's
// LIST: a GET that is not a watch, with resourceVersionMatch=Exact at a
// resourceVersion. The reflector never asks that itself: its LISTs
// (Reflector.list through tools/pager) carry only a resourceVersion, its
// streaming lists resourceVersionMatch=NotOlderThan, and its watches no
// match at all.
func IsConsistencyCheck(method string, q url.Values) bool {
	w := q.Get("watch")
	rv := q.Get("resourceVersion")
	return method == http.MethodGet && w != "true" && w != "1" &&
		q.Get("resourceVersionMatch") == string(metav1.ResourceVersionMatchExact) && rv != "" && rv != "0"
}

// DetectorEnabled says whether client-go's watch-list consistency detector
// is on in this process (what client-go read at its init).
func DetectorEnabled() bool {
	return consistencydetector.IsDataConsistencyDetectionForWatchListEnabled()
}

// DetectorState spells DetectorEnabled for reports: "on", or "off" and why.
func DetectorState() string {
	if DetectorEnabled() {
		return "on"
	}
	v, set := watchlistdetector.AtStart()
	if set {
		return fmt.Sprintf("off (%s=%q when the process started; client-go reads it once, at its init)", watchlistdetector.Env, v)
	}
	return fmt.Sprintf("off (%s was set to true before client-go's init, and client-go did not take it)", watchlistdetector.Env)
}

// InconsistencyError is a detector report about an informer.
type InconsistencyError struct{ Reports []Inconsistency }

// DetectorReported starts every InconsistencyError's message (negative
// controls match it).
const DetectorReported = "client-go's watch-list consistency detector (" + watchlistdetector.Env + ") reported"

func (e *InconsistencyError) Error() string {
	s := DetectorReported
	for i, r := range e.Reports {
		if i > 0 {
			s += ";"
		}
		s += fmt.Sprintf(" %q at %s", r.Report, r.Time.Format("15:04:05.000"))
	}
	return s + ": what a streaming list delivered differs from a LIST at its resourceVersion (the difference is in client-go's log)"
}

// Inconsistent returns the detector's reports about the probe's informers
// as an *InconsistencyError, or nil.
func (p *Probe) Inconsistent() error {
	if rs := p.Recorder.Snapshot().Inconsistencies; len(rs) > 0 {
		return &InconsistencyError{Reports: rs}
	}
	return nil
}

// detectorPanic is the detector's panic message.
var detectorPanic = regexp.MustCompile(`^data inconsistency detected for .*, panicking!$`)

func init() {
	// In init: PanicHandlers is read, unlocked, by every HandleCrash.
	utilruntime.PanicHandlers = append(utilruntime.PanicHandlers, detectorHandler)
}

// running are the probes started and not yet shut down.
var running = struct {
	sync.Mutex
	probes map[*Probe]struct{}
}{probes: map[*Probe]struct{}{}}

func register(p *Probe) {
	running.Lock()
	defer running.Unlock()
	running.probes[p] = struct{}{}
}

func unregister(p *Probe) {
	running.Lock()
	defer running.Unlock()
	delete(running.probes, p)
}

// detectorHandler is a utilruntime.PanicHandlers entry: see above.
func detectorHandler(_ context.Context, v any) {
	msg, ok := v.(string)
	if !ok || !detectorPanic.MatchString(msg) {
		return
	}
	p := probeOf(goroutineID())
	if p == nil {
		return
	}
	p.Recorder.addInconsistency(Inconsistency{Time: time.Now(), Report: msg})
	runtime.Goexit()
}

// probeOf is the running probe that started, directly or not, goroutine
// id, or nil.
func probeOf(id int64) *Probe {
	running.Lock()
	owners := map[int64]*Probe{}
	for p := range running.probes {
		p.mu.Lock()
		for _, s := range p.starters {
			owners[s] = p
		}
		p.mu.Unlock()
	}
	running.Unlock()
	if len(owners) == 0 {
		return nil
	}
	var all bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&all, 2)
	return ownerOf(id, parseGoroutines(all.Bytes()), owners)
}

// ownerOf walks up from goroutine id through the goroutines that created
// it to one in owners.
func ownerOf(id int64, gs []goroutine, owners map[int64]*Probe) *Probe {
	parent := map[int64]int64{}
	for _, g := range gs {
		parent[g.id] = g.parent
	}
	for seen := 0; id != 0 && seen <= len(gs); seen++ {
		if p, ok := owners[id]; ok {
			return p
		}
		id = parent[id]
	}
	return nil
}
