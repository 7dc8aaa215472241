package probe

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/informer-conformance/informer-conformance/report"
)

// EventKind is the handler that was called.
type EventKind string

const (
	Add    EventKind = "Add"
	Update EventKind = "Update"
	Delete EventKind = "Delete"
)

// Event is one handler call.
type Event struct {
	Time            time.Time `json:"time"`
	Kind            EventKind `json:"kind"`
	Key             string    `json:"key"`
	UID             string    `json:"uid"`
	ResourceVersion string    `json:"resourceVersion"`
	// OldUID and OldResourceVersion are the old object's, for updates.
	OldUID             string `json:"oldUID,omitempty"`
	OldResourceVersion string `json:"oldResourceVersion,omitempty"`
	// Tombstone: the delete carried a cache.DeletedFinalStateUnknown.
	Tombstone bool `json:"tombstone,omitempty"`
	// InInitialList: an Add from the initial list (client-go's isInInitialList).
	InInitialList bool `json:"inInitialList,omitempty"`
}

// Resync reports an Update that changed nothing: the same object (UID)
// at the same resourceVersion, what a resync delivers.
func (e Event) Resync() bool {
	return e.Kind == Update && e.OldResourceVersion == e.ResourceVersion && e.OldUID == e.UID
}

// Class names the call as the reports draw it: its kind, or "Delete
// (tombstone)" for a DeletedFinalStateUnknown, "Update (UID changed)" for
// the same name recreated.
func (e Event) Class() string {
	switch {
	case e.Tombstone:
		return "Delete (tombstone)"
	case e.UIDChanged():
		return "Update (UID changed)"
	}
	return string(e.Kind)
}

// UIDChanged reports an Update whose old and new objects differ in UID: the
// same name was deleted and recreated and the informer saw only an update.
func (e Event) UIDChanged() bool { return e.Kind == Update && e.OldUID != "" && e.OldUID != e.UID }

// Request is one HTTP request of the informer's client.
type Request struct {
	ID                   int       `json:"id"`
	Start                time.Time `json:"start"`
	End                  time.Time `json:"end"` // response body closed or request failed; zero while open
	Method               string    `json:"method"`
	Path                 string    `json:"path"`
	Watch                bool      `json:"watch,omitempty"`
	ResourceVersion      string    `json:"resourceVersion,omitempty"`
	ResourceVersionMatch string    `json:"resourceVersionMatch,omitempty"`
	SendInitialEvents    bool      `json:"sendInitialEvents,omitempty"`
	TimeoutSeconds       string    `json:"timeoutSeconds,omitempty"`
	Limit                string    `json:"limit,omitempty"`
	Status               int       `json:"status,omitempty"` // 0: no response
	// Accept is what the client asked for (its Accept header), ContentType
	// what the server answered in (the response's Content-Type): the
	// encoding of the informer stack under test (protobuf, JSON, CBOR).
	Accept      string `json:"accept,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	// ContentEncoding is the answer's body encoding ("gzip"; "" for
	// none), also when net/http decompressed it on its own.
	ContentEncoding string `json:"contentEncoding,omitempty"`
	// Query is the request's query in comparable form (QueryShape): its
	// parameters sorted, with the values that differ between runs of the
	// same code (resource versions, timeouts, continue tokens, selectors)
	// replaced by what they are.
	Query string `json:"query,omitempty"`
	// Conn is the local address (host:port) of the TCP connection that
	// carried the request (httptrace GotConn): requests with the same Conn
	// shared a connection; the fault proxy names its connections by it.
	Conn string `json:"conn,omitempty"`
	// Err is the transport error of the request, or how the body ended when
	// it did not end with a clean EOF (e.g. "http2: client connection lost").
	Err string `json:"err,omitempty"`
	// CleanEOF: the (watch) body ended with io.EOF: the server closed it.
	CleanEOF bool `json:"cleanEOF,omitempty"`
	// Watch streams: events seen, an ERROR event's status, the
	// initial-events-end bookmark of a streaming list.
	Events           int    `json:"events,omitempty"`
	ErrorCode        int32  `json:"errorCode,omitempty"`
	ErrorReason      string `json:"errorReason,omitempty"`
	ErrorMessage     string `json:"errorMessage,omitempty"`
	InitialEventsEnd bool   `json:"initialEventsEnd,omitempty"`
	// InitialEventsEndRV is that bookmark's resourceVersion: the one a
	// streaming list syncs at (client-go reflector.go watchList).
	InitialEventsEndRV string `json:"initialEventsEndRV,omitempty"`
	// FirstEvent and LastEvent are when the stream's first and last events
	// were decoded, LastEventType the last one's type (ADDED, BOOKMARK, ...).
	FirstEvent    time.Time `json:"firstEvent,omitzero"`
	LastEvent     time.Time `json:"lastEvent,omitzero"`
	LastEventType string    `json:"lastEventType,omitempty"`
	// EventTypes counts the stream's events by type.
	EventTypes map[string]int `json:"eventTypes,omitempty"`
	// ConsistencyCheck: the LIST client-go's watch-list consistency
	// detector sends after a streaming list (IsConsistencyCheck); such
	// requests are recorded in Record.ConsistencyChecks, numbered apart.
	ConsistencyCheck bool `json:"consistencyCheck,omitempty"`
}

// Duration of the request until its body closed (or until now if open).
func (r Request) Duration() time.Duration {
	if r.End.IsZero() {
		return time.Since(r.Start)
	}
	return r.End.Sub(r.Start)
}

// OpenWatch reports whether r is a watch the server accepted (200) that is
// still open and has had no ERROR event: an informer that is watching.
func (r Request) OpenWatch() bool {
	return r.Watch && r.Status == 200 && r.ErrorCode == 0 && r.End.IsZero()
}

// Kind names the request as the reports do: "list", "streaming list",
// "watch", or its method for anything else.
// EndedByServer is Request.Ended of a stream the server closed cleanly
// (EOF): no failure.
const EndedByServer = report.EndedByServer

// Ended says how the request ended: its transport error or how its body
// broke off, an ERROR event's status, "open", EndedByServer, or "" (a
// plain answer read to its end).
func (r Request) Ended() string {
	switch {
	case r.Err != "":
		return r.Err
	case r.ErrorCode != 0:
		return fmt.Sprintf("ERROR event %d %s", r.ErrorCode, r.ErrorReason)
	case r.End.IsZero():
		return "open"
	case r.CleanEOF:
		return EndedByServer
	}
	return ""
}

func (r Request) Kind() string {
	switch {
	case r.ConsistencyCheck:
		return KindConsistencyCheck
	case r.Discovery():
		return "discovery"
	case r.Watch && r.SendInitialEvents:
		return "streaming list"
	case r.Watch:
		return "watch"
	case r.Method == "GET":
		return "list"
	}
	return r.Method
}

// KindConsistencyCheck is Request.Kind of the consistency detector's LIST.
const KindConsistencyCheck = report.KindConsistencyCheck

// Reinitialises reports whether the request (re)loads the whole state: a
// LIST, or a WATCH that asks for initial events (a streaming list). The
// probe's client serves only its informer, whose only plain GETs are lists
// and, on an informer source with a discovery-backed REST mapper
// (controller-runtime's), discovery; the consistency detector's LIST only
// reads (its answer is compared, never stored).
func (r Request) Reinitialises() bool {
	return !r.ConsistencyCheck && ((!r.Watch && r.Method == "GET" && !r.Discovery()) || (r.Watch && r.SendInitialEvents))
}

// Discovery reports a GET of an API group or version's discovery document
// (/api, /api/v1, /apis, /apis/apps, /apis/apps/v1): what a REST mapper
// reads to find a resource's kind, never a list of objects.
func (r Request) Discovery() bool {
	if r.Method != "GET" || r.Watch {
		return false
	}
	parts := strings.Split(strings.Trim(r.Path, "/"), "/")
	switch parts[0] {
	case "api":
		return len(parts) <= 2
	case "apis":
		return len(parts) <= 3
	}
	return false
}

// Dial is one TCP dial of the informer's client.
type Dial struct {
	Time time.Time `json:"time"`
	Addr string    `json:"addr"`
	Err  string    `json:"err,omitempty"`
}

// Recorder is the append-only, lock-protected record of one informer.
type Recorder struct {
	mu              sync.Mutex
	events          []Event
	requests        []Request
	checks          []Request
	inconsistencies []Inconsistency
	dials           []Dial
	synced          time.Time
	started         time.Time
	watchErrors     []WatchError
	rvs             []ReportedRV
}

// WatchError is one call of the informer's watch error handler: what its
// reflector's ListAndWatch returned (client-go calls the handler with every
// list and watch error, tools/cache/reflector.go Run).
type WatchError struct {
	Time time.Time `json:"time"`
	Err  string    `json:"err"`
	// Reason is the API status reason of the error (metav1.StatusReason,
	// apierrors.ReasonForError), empty when it carries none.
	Reason string `json:"reason,omitempty"`
}

// ReportedRV is a resource version the informer reported through one of
// its APIs (Which: "informer" for SharedIndexInformer's
// LastSyncResourceVersion, "controller" for its controller's) at a moment
// (When: "synced", "stopping").
type ReportedRV struct {
	Time  time.Time `json:"time"`
	When  string    `json:"when"`
	Which string    `json:"which"`
	RV    string    `json:"rv"`
}

// Record is a consistent copy of everything recorded so far.
type Record struct {
	Events   []Event   `json:"events"`
	Requests []Request `json:"requests"`
	Dials    []Dial    `json:"dials"`
	// ConsistencyChecks are the LISTs of client-go's watch-list consistency
	// detector (Request.ConsistencyCheck), kept out of Requests: they are
	// the oracle's, not the informer's, and neither re-initialise nor
	// stand between the informer's own requests.
	ConsistencyChecks []Request `json:"consistencyChecks,omitempty"`
	// Inconsistencies are the detector's reports about this informer.
	Inconsistencies []Inconsistency `json:"inconsistencies,omitempty"`
	// Synced is when the informer first reported HasSynced.
	Synced time.Time `json:"synced"`
	// Started is when the probe started its informers (zero: not
	// started through the probe).
	Started time.Time `json:"started,omitzero"`
	// WatchErrors are the calls of the informer's watch error handler (on
	// informers the probe built; a downstream's own are left alone).
	WatchErrors []WatchError `json:"watchErrors,omitempty"`
	// ReportedRVs are the resource versions the informer reported.
	ReportedRVs []ReportedRV `json:"reportedRVs,omitempty"`
}

// OfResource narrows a record shared by several informers of one client
// (one factory) to the informer of one resource: its requests and
// consistency detector LISTs (those whose path ends in resource, e.g.
// "/configmaps"), synced at synced, so its re-initialisations are
// classified by its own requests. Dials and the detector's reports stay
// whole: they belong to the connection and name a reflector, not a resource.
func (r Record) OfResource(resource string, synced time.Time) Record {
	return Record{Requests: ofResource(r.Requests, resource), Dials: r.Dials, Synced: synced, Started: r.Started,
		ConsistencyChecks: ofResource(r.ConsistencyChecks, resource), Inconsistencies: r.Inconsistencies}
}

func ofResource(rs []Request, resource string) []Request {
	var out []Request
	for _, r := range rs {
		if strings.HasSuffix(r.Path, resource) {
			out = append(out, r)
		}
	}
	return out
}

// ObjectRequests are Requests without discovery: the informer's lists,
// streaming lists and watches, in order. On an informer source with a
// discovery-backed REST mapper (controller-runtime's) discovery GETs come
// first; what the informer itself asked for starts here.
func (r Record) ObjectRequests() []Request {
	var out []Request
	for _, q := range r.Requests {
		if !q.Discovery() {
			out = append(out, q)
		}
	}
	return out
}

// appendLocked appends v to *to while holding mu.
func appendLocked[T any](mu *sync.Mutex, to *[]T, v T) {
	mu.Lock()
	defer mu.Unlock()
	*to = append(*to, v)
}

func (r *Recorder) addEvent(e Event) { appendLocked(&r.mu, &r.events, e) }

func (r *Recorder) addDial(d Dial) { appendLocked(&r.mu, &r.dials, d) }

// requestRef names a recorded request: its ID in Requests, or in
// ConsistencyChecks.
type requestRef struct {
	id    int
	check bool
}

// startRequest appends req to Requests, or to ConsistencyChecks, and
// returns where.
func (r *Recorder) startRequest(req Request) requestRef {
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.ConsistencyCheck {
		req.ID = len(r.checks) + 1
		r.checks = append(r.checks, req)
		return requestRef{id: req.ID, check: true}
	}
	req.ID = len(r.requests) + 1
	r.requests = append(r.requests, req)
	return requestRef{id: req.ID}
}

// updateRequest changes a recorded request in place (the only mutation: a
// request's outcome arrives after it started).
func (r *Recorder) updateRequest(ref requestRef, f func(*Request)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ref.check {
		f(&r.checks[ref.id-1])
		return
	}
	f(&r.requests[ref.id-1])
}

func (r *Recorder) addInconsistency(i Inconsistency) { appendLocked(&r.mu, &r.inconsistencies, i) }

// inconsistent says whether the detector has reported this informer.
func (r *Recorder) inconsistent() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.inconsistencies) > 0
}

// MarkSynced records the time of the first sync (later calls are ignored).
func (r *Recorder) MarkSynced(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.synced.IsZero() {
		r.synced = t
	}
}

// markStarted records when the informers started (later calls are ignored).
func (r *Recorder) markStarted(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started.IsZero() {
		r.started = t
	}
}

func (r *Recorder) addWatchError(e WatchError) { appendLocked(&r.mu, &r.watchErrors, e) }

func (r *Recorder) addReportedRV(v ReportedRV) { appendLocked(&r.mu, &r.rvs, v) }

// Snapshot copies the record.
func (r *Recorder) Snapshot() Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Record{Events: slices.Clone(r.events), Requests: slices.Clone(r.requests), Dials: slices.Clone(r.dials),
		ConsistencyChecks: slices.Clone(r.checks), Inconsistencies: slices.Clone(r.inconsistencies), Synced: r.synced,
		Started: r.started, WatchErrors: slices.Clone(r.watchErrors), ReportedRVs: slices.Clone(r.rvs)}
}
