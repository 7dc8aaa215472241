package probe

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/informer-conformance/informer-conformance/probe/watchlistdetector"
)

// TestDetectorOn: client-go read the variable watchlistdetector set before
// its init (or the one the process was started with).
func TestDetectorOn(t *testing.T) {
	v, set := watchlistdetector.AtStart()
	want := true
	if set {
		want, _ = strconv.ParseBool(v)
	}
	if DetectorEnabled() != want {
		t.Fatalf("detector enabled = %t, want %t (%s at start: %q, set %t): package initialisation order changed?", DetectorEnabled(), want, watchlistdetector.Env, v, set)
	}
	if want && DetectorState() != "on" {
		t.Errorf("DetectorState() = %q, want on", DetectorState())
	}
}

func TestIsConsistencyCheck(t *testing.T) {
	cases := []struct {
		method, query string
		want          bool
	}{
		// consistencydetector.CheckDataConsistency's LIST (prepareListCallOptions).
		{"GET", "resourceVersion=1234&resourceVersionMatch=Exact", true},
		{"GET", "limit=500&resourceVersion=1234&resourceVersionMatch=Exact", true},
		// The reflector's own requests.
		{"GET", "limit=500&resourceVersion=0", false},                 // LIST from the watch cache
		{"GET", "limit=500&resourceVersion=", false},                  // consistent LIST
		{"GET", "limit=500&resourceVersion=1234", false},              // relist at the last resourceVersion
		{"GET", "limit=500&continue=abc&resourceVersion=1234", false}, // next page
		{"GET", "allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true", false},
		{"GET", "allowWatchBookmarks=true&resourceVersion=1234&watch=true", false},
		// Not a valid detector request: exact needs a resourceVersion other than 0.
		{"GET", "resourceVersion=0&resourceVersionMatch=Exact", false},
		{"GET", "resourceVersionMatch=Exact", false},
		{"GET", "resourceVersion=1234&resourceVersionMatch=Exact&watch=true", false},
		{"POST", "resourceVersion=1234&resourceVersionMatch=Exact", false},
	}
	for _, c := range cases {
		q, err := url.ParseQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := IsConsistencyCheck(c.method, q); got != c.want {
			t.Errorf("%s ?%s: got %t, want %t", c.method, c.query, got, c.want)
		}
	}
}

// TestConsistencyChecksApart: the detector's LIST after a relist's
// streaming list is recorded apart, numbered apart, and is neither a
// re-initialisation nor the request a re-initialisation follows.
func TestConsistencyChecksApart(t *testing.T) {
	rec := &Recorder{}
	start := func(r Request) requestRef { return rec.startRequest(r) }
	start(Request{Start: at(0), Method: "GET", Watch: true, SendInitialEvents: true, Status: 200})
	c1 := start(Request{Start: at(0.1), Method: "GET", ResourceVersion: "10", ResourceVersionMatch: "Exact", ConsistencyCheck: true})
	rec.updateRequest(c1, func(r *Request) { r.Status, r.End = 200, at(0.11) })
	rec.MarkSynced(at(0.2))
	w := start(Request{Start: at(1), Method: "GET", Watch: true, ResourceVersion: "10"})
	rec.updateRequest(w, func(r *Request) { r.Status, r.End, r.ErrorCode = 200, at(5), 410 })
	relist := start(Request{Start: at(6), Method: "GET", Watch: true, SendInitialEvents: true, Status: 200})
	c2 := start(Request{Start: at(6.1), Method: "GET", ResourceVersion: "20", ResourceVersionMatch: "Exact", ConsistencyCheck: true})
	rec.updateRequest(c2, func(r *Request) { r.Status = 200 })

	got := rec.Snapshot()
	if len(got.Requests) != 3 || len(got.ConsistencyChecks) != 2 {
		t.Fatalf("requests %d, consistency checks %d; want 3 and 2", len(got.Requests), len(got.ConsistencyChecks))
	}
	if relist.id != 3 || c2.id != 2 || got.ConsistencyChecks[1].ID != 2 || got.ConsistencyChecks[1].Status != 200 {
		t.Errorf("numbering: relist #%d (want 3), second check #%d (want 2), %+v", relist.id, c2.id, got.ConsistencyChecks[1])
	}
	if got.Requests[2].ID != 3 || got.Requests[1].ErrorCode != 410 {
		t.Errorf("updates reached the wrong request: %+v", got.Requests)
	}
	if k := got.ConsistencyChecks[0].Kind(); k != KindConsistencyCheck {
		t.Errorf("kind %q", k)
	}
	rs := Reinitialisations(got)
	if len(rs) != 1 || rs[0].Request.ID != 3 || rs[0].Cause != CauseGone {
		t.Errorf("want one re-initialisation, #3 after the 410: %v", rs)
	}
	// Even if a check were in Requests, it would not re-initialise.
	if (Request{Method: "GET", ConsistencyCheck: true}).Reinitialises() {
		t.Error("a consistency check re-initialises")
	}
}

const detectorMessage = "data inconsistency detected for k8s.io/client-go/informers/factory.go:160, panicking!"

// TestDetectorHandler: a detector panic under HandleCrash in a goroutine a
// running probe started is recorded on that probe and ends only that
// goroutine; the process goes on.
func TestDetectorHandler(t *testing.T) {
	p := &Probe{Recorder: &Recorder{}}
	register(p)
	defer unregister(p)
	done := make(chan struct{})
	reached := false
	started := make(chan struct{})
	go func() { // the probe's starter, as Start's
		p.mu.Lock()
		p.starters = append(p.starters, goroutineID())
		p.mu.Unlock()
		go func() { // an informer goroutine, as the reflector's
			defer close(done)
			func() {
				defer utilruntime.HandleCrash()
				panic(detectorMessage)
			}()
			reached = true
		}()
		close(started)
	}()
	<-started
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the reflector goroutine did not end within 10s")
	}
	if reached {
		t.Error("the goroutine went on after the detector's panic")
	}
	err := p.Inconsistent()
	var ie *InconsistencyError
	if !errors.As(err, &ie) || len(ie.Reports) != 1 || ie.Reports[0].Report != detectorMessage {
		t.Fatalf("want one report, got %v", err)
	}
	if !strings.HasPrefix(err.Error(), DetectorReported) || !strings.Contains(err.Error(), detectorMessage) {
		t.Errorf("message %q", err)
	}
}

// TestDetectorHandlerLeavesOtherPanics: other panics, and a detector
// panic in a goroutine no probe started, are left to HandleCrash (which
// crashes): the handler returns.
func TestDetectorHandlerLeavesOtherPanics(t *testing.T) {
	p := &Probe{Recorder: &Recorder{}}
	register(p)
	defer unregister(p)
	p.starters = []int64{-1}
	for _, v := range []any{"boom", errors.New(detectorMessage), detectorMessage} {
		detectorHandler(context.Background(), v) // would not return if it took the panic
	}
	if p.Recorder.inconsistent() {
		t.Error("recorded a panic of a goroutine the probe did not start")
	}
}

// TestOwnerOf walks the goroutines' creators up to a probe's starter,
// which has exited.
func TestOwnerOf(t *testing.T) {
	p := &Probe{}
	gs := []goroutine{{id: 30, parent: 20}, {id: 20, parent: 10}, {id: 40, parent: 5}, {id: 50}}
	owners := map[int64]*Probe{10: p}
	if ownerOf(30, gs, owners) != p || ownerOf(20, gs, owners) != p {
		t.Error("a descendant of the starter is not the probe's")
	}
	if ownerOf(40, gs, owners) != nil || ownerOf(50, gs, owners) != nil || ownerOf(99, gs, owners) != nil {
		t.Error("a goroutine outside the probe's family is the probe's")
	}
}
