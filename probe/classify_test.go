package probe

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// streaming list, then a watch that ended as given, then req.
func seq(ended Request, next Request) Record {
	initial := Request{ID: 1, Start: at(0), End: at(0.1), Method: "GET", Watch: true, SendInitialEvents: true, Status: 200, InitialEventsEnd: true, Events: 3, Err: "closed by the client"}
	ended.ID, next.ID = 2, 3
	return Record{Requests: []Request{initial, ended, next}, Synced: at(0.2)}
}

func TestCauses(t *testing.T) {
	relist := Request{Start: at(10), Method: "GET", Watch: true, SendInitialEvents: true, ResourceVersion: "100"}
	list := Request{Start: at(10), Method: "GET", ResourceVersion: "100"}
	watch := func(r Request) Request {
		r.Start, r.End, r.Method, r.Watch = at(1), at(9), "GET", true
		if r.Status == 0 && r.Err == "" {
			r.Status = 200
		}
		return r
	}
	cases := []struct {
		name  string
		ended Request
		next  Request
		want  Cause
	}{
		{"410 event", watch(Request{ErrorCode: 410, ErrorMessage: "too old resource version: 1 (50)", CleanEOF: true}), relist, CauseGone},
		{"too large event", watch(Request{ErrorCode: 504, ErrorMessage: "Too large resource version: 200, current: 100"}), list, CauseTooLargeRV},
		{"500 event", watch(Request{ErrorCode: 500, ErrorMessage: "etcd event received with PrevKv=nil"}), relist, CauseInternalError},
		{"429 opening", watch(Request{Status: 429}), list, CauseTooManyRequests},
		{"403 opening", watch(Request{Status: 403}), list, CauseOtherStatus},
		{"refused", watch(Request{Err: "dial tcp 127.0.0.1:1: connect: connection refused"}), relist, CauseTransport},
		{"connection lost", watch(Request{Status: 200, Err: "http2: client connection lost"}), relist, CauseTransport},
		{"clean close", watch(Request{CleanEOF: true}), relist, CauseCleanClose},
		{"client timeout", watch(Request{Status: 200, Err: "context deadline exceeded (Client.Timeout or context cancellation while reading body)"}), relist, CauseClientTimeout},
		{"client timeout seen as a canceled request", watch(Request{Status: 200, Err: "net/http: request canceled"}), relist, CauseClientTimeout},
		{"closed by client", watch(Request{Status: 200, Err: "closed by the client"}), list, CauseClientClosed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs := Reinitialisations(seq(c.ended, c.next))
			if len(rs) != 1 {
				t.Fatalf("got %d re-initialisations, want 1: %v", len(rs), rs)
			}
			if rs[0].Cause != c.want || rs[0].After == nil || rs[0].After.ID != 2 {
				t.Errorf("got %s, want %s after #2", rs[0], c.want)
			}
		})
	}
}

// TestInitialSyncIsNotAReinit: the initial streaming list, a fallback LIST
// before the sync, and watches that resume are not re-initialisations.
func TestInitialSyncIsNotAReinit(t *testing.T) {
	rec := Record{Synced: at(1), Requests: []Request{
		{ID: 1, Start: at(0), Method: "GET", Watch: true, SendInitialEvents: true, Status: 200, Err: "closed by the client"},
		{ID: 2, Start: at(0.5), Method: "GET", Status: 200, CleanEOF: true},
		{ID: 3, Start: at(1.1), Method: "GET", Watch: true, ResourceVersion: "10", Status: 200, CleanEOF: true},
		{ID: 4, Start: at(300), Method: "GET", Watch: true, ResourceVersion: "20", Status: 200},
	}}
	if rs := Reinitialisations(rec); len(rs) != 0 {
		t.Errorf("want none, got %v", rs)
	}
	rec.Synced = time.Time{} // without a sync time the first one is the initial
	if rs := Reinitialisations(rec); len(rs) != 1 || rs[0].Request.ID != 2 {
		t.Errorf("without a sync time: want only #2, got %v", rs)
	}
}

func TestCountByCause(t *testing.T) {
	got := CountByCause([]Reinit{{Cause: CauseGone}, {Cause: CauseGone}, {Cause: CauseTransport}})
	if got[CauseGone] != 2 || got[CauseTransport] != 1 || len(got) != 2 {
		t.Errorf("CountByCause = %v", got)
	}
}

// TestDiscoveryIsNotAReinit: a REST mapper's discovery GETs (an informer
// source such as controller-runtime's cache reads them through the
// informers' client), after the sync too, are neither lists nor
// re-initialisations; lists of cluster-scoped and grouped resources are.
func TestDiscoveryIsNotAReinit(t *testing.T) {
	rec := Record{Synced: at(1), Requests: []Request{
		{ID: 1, Start: at(0), Method: "GET", Path: "/api/v1/namespaces/ns/pods", Status: 200},
		{ID: 2, Start: at(2), Method: "GET", Path: "/api", Status: 200},
		{ID: 3, Start: at(2), Method: "GET", Path: "/api/v1", Status: 200},
		{ID: 4, Start: at(2), Method: "GET", Path: "/apis/apps/v1", Status: 200},
		{ID: 5, Start: at(2), Method: "GET", Path: "/apis", Status: 200},
		{ID: 6, Start: at(3), Method: "GET", Path: "/api/v1/namespaces", Status: 200},
		{ID: 7, Start: at(3), Method: "GET", Path: "/apis/apps/v1/deployments", Status: 200},
	}}
	rs := Reinitialisations(rec)
	if len(rs) != 2 || rs[0].Request.ID != 6 || rs[1].Request.ID != 7 {
		t.Errorf("want the lists #6 and #7, got %v", rs)
	}
	for _, r := range rec.Requests[1:5] {
		if r.Kind() != "discovery" {
			t.Errorf("%s: kind %q, want discovery", r.Path, r.Kind())
		}
	}
}

// TestCauseSkipsWrites: a write made through the informer's client between
// the watch that ended and the relist (S13's SelfSubjectReviews, 201) is not
// the cause; the watch is.
func TestCauseSkipsWrites(t *testing.T) {
	rec := Record{Synced: at(1), Requests: []Request{
		{ID: 1, Start: at(0), Method: "GET", Path: "/api/v1/namespaces/ns/pods", Status: 200},
		{ID: 2, Start: at(1.1), End: at(5), Method: "GET", Watch: true, ResourceVersion: "10", Status: 200, Err: "http2: server sent GOAWAY and closed the connection"},
		{ID: 3, Start: at(5), Method: "POST", Path: "/apis/authentication.k8s.io/v1/selfsubjectreviews", Status: 201},
		{ID: 4, Start: at(5.1), Method: "GET", Path: "/api", Status: 200},
		{ID: 5, Start: at(5.2), Method: "GET", Path: "/api/v1/namespaces/ns/pods", Status: 200},
	}}
	rs := Reinitialisations(rec)
	if len(rs) != 1 || rs[0].After == nil || rs[0].After.ID != 2 || rs[0].Cause != CauseTransport {
		t.Errorf("want one re-initialisation caused by watch #2's transport error, got %v", rs)
	}
}
