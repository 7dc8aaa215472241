package probe

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/informer-conformance/informer-conformance/report"
)

func TestQueryShape(t *testing.T) {
	q, _ := url.ParseQuery("watch=true&resourceVersion=1234&timeoutSeconds=391&allowWatchBookmarks=true&labelSelector=a%3Db")
	if got, want := QueryShape(q), "allowWatchBookmarks=true&labelSelector=<selector>&resourceVersion=<rv>&timeoutSeconds=<s>&watch=true"; got != want {
		t.Errorf("QueryShape = %q, want %q", got, want)
	}
	q, _ = url.ParseQuery("limit=500&resourceVersion=0")
	if got, want := QueryShape(q), "limit=500&resourceVersion=0"; got != want {
		t.Errorf("QueryShape = %q, want %q", got, want)
	}
}

func TestObservations(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	rec := Record{
		Started: t0, Synced: at(0.5),
		Requests: []Request{
			{Method: "GET", Path: "/api/v1/namespaces/ns-x1/pods", Query: "limit=500&resourceVersion=0", Accept: "application/vnd.kubernetes.protobuf, */*",
				ContentType: "application/vnd.kubernetes.protobuf", Status: 200, Start: at(0.1), End: at(0.2)},
			{Method: "GET", Path: "/api/v1/namespaces/ns-x1/pods", Watch: true, Query: "watch=true", Status: 200, Start: at(0.3), End: at(2), ErrorCode: 410, ErrorReason: "Expired",
				ContentEncoding: "gzip"},
			{Method: "GET", Path: "/api/v1/namespaces/ns-x1/pods", Query: "limit=500&resourceVersion=<rv>", Status: 200, Start: at(3), End: at(3.1)},
		},
		Events: []Event{
			{Time: at(0.2), Kind: Add, ResourceVersion: "10", InInitialList: true},
			{Time: at(1), Kind: Update, ResourceVersion: "12", OldResourceVersion: "10"},
		},
		WatchErrors: []WatchError{{Time: at(2), Err: `Get "https://127.0.0.1:4444/api/v1/namespaces/ns-x1/pods?watch=true": too old resource version: 5 (12)`, Reason: "Expired"}},
		ReportedRVs: []ReportedRV{{Time: at(0.5), When: RVSynced, Which: "informer", RV: "11"}, {Time: at(5), When: RVStopping, Which: "informer", RV: "12"}},
	}
	got := map[string]report.Observation{}
	for _, o := range Observations("pods", "ns-x1", rec) {
		got[o.What] = o
	}
	for what, want := range map[string]string{
		"GET list /api/v1/namespaces/<ns>/pods: queries":                          "limit=500&resourceVersion=0 | limit=500&resourceVersion=<rv>",
		"GET list /api/v1/namespaces/<ns>/pods: first request's query":            "limit=500&resourceVersion=0",
		"GET list /api/v1/namespaces/<ns>/pods: first request's Accept":           "protobuf, */*",
		"GET list /api/v1/namespaces/<ns>/pods: Content-Type of 2xx answers":      "protobuf",
		"GET list /api/v1/namespaces/<ns>/pods: Content-Encoding of 2xx answers":  "identity",
		"GET watch /api/v1/namespaces/<ns>/pods: Content-Encoding of 2xx answers": "gzip",
		"GET watch /api/v1/namespaces/<ns>/pods: statuses":                        "200, then ERROR event 410 Expired",
		"watch error handler: Expired":                                            "Get <url>: too old resource version: N (N)",
		"informer resourceVersion when synced":                                    "newer than every object it saw",
		"informer resourceVersion when stopping":                                  "the newest object's it saw",
	} {
		if o := got[what]; o.Value != want {
			t.Errorf("%s = %q, want %q", what, o.Value, want)
		}
	}
	for what, want := range map[string]float64{
		"start to synced":                                 0.5,
		"delay after a failed request (median)":           1,
		"handler calls: Add (initial list)":               1,
		"GET list /api/v1/namespaces/<ns>/pods: requests": 2,
	} {
		if o := got[what]; o.Number == nil || *o.Number != want {
			t.Errorf("%s = %v, want %v", what, o.Number, want)
		}
	}
	if _, ok := got["handler calls: Update (resync)"]; ok {
		t.Errorf("an update to a new resourceVersion counted as a resync: %v", got)
	}
	for what := range got {
		if strings.Contains(what, "ns-x1") {
			t.Errorf("%q names the namespace: not comparable between runs", what)
		}
	}
}

// BenchmarkObservations: what a spec's clean-up spends per probe on a record
// larger than most specs' (40 requests, 1000 handler calls, 10 watch errors).
func BenchmarkObservations(b *testing.B) {
	t0 := time.Unix(1000, 0)
	var rec Record
	rec.Started, rec.Synced = t0, t0.Add(time.Second)
	for i := range 40 {
		rec.Requests = append(rec.Requests, Request{Method: "GET", Path: "/api/v1/namespaces/ns-x1/pods", Watch: i%2 == 1, Query: "watch=true&resourceVersion=<rv>",
			Accept: "application/vnd.kubernetes.protobuf, */*", ContentType: "application/vnd.kubernetes.protobuf;stream=watch", Status: 200,
			Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Duration(i)*time.Second + 500*time.Millisecond), ErrorCode: int32(410 * (i % 3 / 2))})
	}
	for i := range 1000 {
		rec.Events = append(rec.Events, Event{Time: t0.Add(time.Duration(i) * time.Millisecond), Kind: Update, ResourceVersion: fmt.Sprint(i + 2), OldResourceVersion: fmt.Sprint(i + 1)})
	}
	for i := range 10 {
		rec.WatchErrors = append(rec.WatchErrors, WatchError{Time: t0, Err: fmt.Sprintf(`Get "https://127.0.0.1:4444/api/v1/namespaces/ns-x1/pods?watch=true": too old resource version: %d (%d)`, i, i+5), Reason: "Expired"})
	}
	rec.ReportedRVs = []ReportedRV{{Time: t0.Add(time.Second), When: RVSynced, Which: "informer", RV: "500"}, {Time: t0.Add(time.Hour), When: RVStopping, Which: "informer", RV: "1001"}}
	for range b.N {
		Observations("pods", "ns-x1", rec)
	}
}

// TestObservationsVary: what follows a fault is marked as varying between
// runs; what the client asks first is not; what it asks for in a request
// that follows a fault, and the media type it gets, are occasional.
func TestObservationsVary(t *testing.T) {
	rec := Record{Requests: []Request{{Method: "GET", Path: "/api/v1/pods", Query: "limit=500", Accept: "application/json", ContentType: "application/json", Status: 200},
		{Method: "GET", Path: "/api/v1/pods", Watch: true, Query: "watch=true", Accept: "application/json", ContentType: "application/json;stream=watch", Status: 200}}, Events: []Event{{Kind: Add}}}
	occasional := 0
	for _, o := range Observations("pods", "", rec) {
		initial := strings.HasPrefix(o.What, "GET list ")
		shape := strings.Contains(o.What, "first request's") || strings.Contains(o.What, "Content-Type") || strings.Contains(o.What, "Content-Encoding")
		asked := strings.Contains(o.What, "Accept") || strings.Contains(o.What, "Content-Type")
		wantVaries, wantOccasional := !(initial && shape), !initial && asked
		if wantOccasional {
			wantVaries = false
			occasional++
		}
		if o.Varies != wantVaries || o.Occasional != wantOccasional {
			t.Errorf("%s: varies %t, occasional %t; want %t, %t", o.What, o.Varies, o.Occasional, wantVaries, wantOccasional)
		}
	}
	if occasional != 2 {
		t.Errorf("%d occasional observations, want 2 (the watch's Accept and Content-Type)", occasional)
	}
}
