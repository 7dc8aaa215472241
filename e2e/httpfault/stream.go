package httpfault

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
)

// StreamInjector rewrites the watch streams a client receives, event by
// event, while the real server's stream goes on: what a proxy that edits
// watch streams (or a server that gets the protocol wrong) does to a client.
// Each 200 answer to a matching watch is decoded with the stream framing of
// its Content-Type (apimachinery's framers: protobuf length-delimited frames
// or JSON), and each event is re-encoded with the same serializer unless an
// injection drops it; a response it cannot decode passes through untouched.
//
// It is a transport wrapper of its own (Instrument), independent of
// Injector: wrap it before the probe so that the recorder sees the rewritten
// stream. Every injection is undoable (undoing it stops it on open streams
// too, from their next event) and counts what it did.
type StreamInjector struct {
	// Faults is where the injector records its rules' windows (nil:
	// nowhere), as Injector.Faults.
	Faults *faultlog.Log

	mu        sync.Mutex
	rules     []*streamRule
	open      map[*rewrittenBody]struct{}
	rewritten map[string]int // streams rewritten, by media type
}

type streamAction int

const (
	dropInitialEventsEnd streamAction = iota
	sendInitialEventsEndFirst
	dropInitialObject
	cutInitialEvents
	passThrough
	rewriteEvents
	observeEvents
)

// String names the action in its faultlog window.
func (a streamAction) String() string {
	return [...]string{"initial-events-end bookmark dropped", "initial-events-end bookmark sent first", "first initial object dropped", "stream cut inside its initial events", "streams held to be ended at will", "events rewritten", "events observed"}[a]
}

// Event is one event of a rewritten stream as RewriteEvents and
// ObserveEvents hand it over: the server's event with its object decoded.
type Event struct {
	// Request is the watch request the stream answers.
	Request *http.Request
	Type    watch.EventType
	// Object is the event's object, decoded (a type client-go's scheme
	// knows, or unstructured JSON). A rewrite may change it in place: the
	// event then goes out with it re-encoded as the server encodes it.
	Object runtime.Object
	// Initial: one of a streaming list's initial events (a watch that asked
	// for them, before its initial-events-end bookmark).
	Initial bool
	// InitialEventsEnd: the bookmark that ends the initial events
	// (metav1.InitialEventsAnnotationKey).
	InitialEventsEnd bool
}

type streamRule struct {
	match     Match
	action    streamAction
	newObject func() runtime.Object // sendInitialEventsEndFirst: the bookmark's object
	after     int                   // cutInitialEvents: initial objects passed before the cut
	times     int                   // cutInitialEvents: streams still to cut
	rewrite   func(*Event) bool     // rewriteEvents: changes the event's object, says whether it goes out
	observe   func(Event)           // observeEvents
	removed   bool
	count     int
}

// Instrument returns a copy of cfg whose transport passes matching watch
// streams through the injector. Wrap it before probe.Instrument.
func (in *StreamInjector) Instrument(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return streamTransport{next: rt, in: in} })
	return cfg
}

// DropInitialEventsEnd drops, from every matching watch stream, the
// BOOKMARK event whose object carries the annotation
// k8s.io/initial-events-end=true (metav1.InitialEventsAnnotationKey): the
// event that ends a streaming list's initial events. Everything else passes.
// dropped counts the bookmarks dropped.
func (in *StreamInjector) DropInitialEventsEnd(match Match) (restore func(), dropped func() int) {
	return in.add(&streamRule{match: match, action: dropInitialEventsEnd})
}

// SendInitialEventsEndFirst makes every matching watch stream begin with a
// synthesised initial-events-end BOOKMARK, before any of the server's
// events: a broken server or proxy that declares the initial events over
// before it sent them (a client then "syncs" with an empty store). The
// bookmark's object is newObject() (a type client-go's scheme knows, e.g.
// &corev1.Pod{}) with resourceVersion "0" and the annotation. sent counts
// the bookmarks sent.
//
// At "0", client-go's watch-list consistency detector checks nothing (it
// cannot LIST at "0" with resourceVersionMatch=Exact: client-go v0.36
// util/consistencydetector canFormAdditionalListCall), so the client syncs
// on the bookmark whatever the cluster's age. At "1" the detector's LIST
// was answered "too old" once kube-apiserver had compacted revision 1 (a
// shared cluster past its 5-minute compaction, seen on kind), and the
// detector retries until the watch's context ends: the broken client never
// synced, and S14's control missed it.
func (in *StreamInjector) SendInitialEventsEndFirst(match Match, newObject func() runtime.Object) (restore func(), sent func() int) {
	return in.add(&streamRule{match: match, action: sendInitialEventsEndFirst, newObject: newObject})
}

// DropInitialObject drops, from every matching watch stream, its first
// ADDED event before the initial-events-end bookmark: a streaming list that
// loses one object of its initial state (what client-go's watch-list
// consistency detector exists to catch). Everything else passes. dropped
// counts the events dropped.
func (in *StreamInjector) DropInitialObject(match Match) (restore func(), dropped func() int) {
	return in.add(&streamRule{match: match, action: dropInitialObject})
}

// ErrStreamCut is what a client reads when CutInitialEvents cuts its
// stream: the connection dropped in the middle of the stream
// (io.ErrUnexpectedEOF, what a reset mid-frame looks like to a decoder).
var ErrStreamCut = io.ErrUnexpectedEOF

// CutInitialEvents cuts the next `times` matching watch streams inside
// their initial events: after `after` ADDED events have passed, before the
// initial-events-end bookmark, the client reads ErrStreamCut and the
// server's stream is closed. cut counts the streams cut.
func (in *StreamInjector) CutInitialEvents(match Match, after, times int) (restore func(), cut func() int) {
	return in.add(&streamRule{match: match, action: cutInitialEvents, after: after, times: times})
}

// Pass passes matching watch streams through the injector unchanged, only
// so that EndStreams can end them.
func (in *StreamInjector) Pass(match Match) (restore func()) {
	restore, _ = in.add(&streamRule{match: match, action: passThrough})
	return restore
}

// RewriteEvents hands every event of matching watch streams (after the
// other rules: what they drop it never sees) to rewrite, which may change
// its object in place (its resourceVersion, ...) and says whether the
// event goes out at all: a proxy or a server that edits or loses events.
// An event whose object the injector cannot decode passes unchanged.
// rewritten counts the events handed to rewrite.
func (in *StreamInjector) RewriteEvents(match Match, rewrite func(*Event) (send bool)) (restore func(), rewritten func() int) {
	return in.add(&streamRule{match: match, action: rewriteEvents, rewrite: rewrite})
}

// ObserveEvents calls observe with every event of matching watch streams
// as the server sent it (before any rule applies), from the stream's
// goroutine: a spec's view of what the server said, beneath what the
// client's other transport wrappers do. It changes nothing, so no fault
// window is recorded. An event whose object the injector cannot decode is
// left out. observed counts the events observed.
func (in *StreamInjector) ObserveEvents(match Match, observe func(Event)) (restore func(), observed func() int) {
	r := &streamRule{match: match, action: observeEvents, observe: observe}
	in.mu.Lock()
	in.rules = append(in.rules, r)
	in.mu.Unlock()
	restore = func() {
		in.mu.Lock()
		defer in.mu.Unlock()
		r.removed = true
		in.rules = slices.DeleteFunc(in.rules, func(x *streamRule) bool { return x == r })
	}
	observed = func() int {
		in.mu.Lock()
		defer in.mu.Unlock()
		return r.count
	}
	return restore, observed
}

// InjectBookmark sends, on every open rewritten stream whose request
// matches, a BOOKMARK event at resourceVersion rv, between two of the
// server's whole events: what kube-apiserver sends a watch that allows
// bookmarks (about once a minute, and shortly before the watch's
// timeout), at the moment the spec chooses. Its object is newObject() (a
// type client-go's scheme knows, e.g. &corev1.Pod{}) with rv, encoded as
// the server encodes a watch event's object for the stream's media type.
// A valid bookmark is the caller's to choose: rv no older than any event
// the stream carried, with none of the watch's events at or below it still
// to come; on a streaming list, after its initial events. It returns how
// many streams got the bookmark (a stream the client does not read holds
// the call until it does or ends).
func (in *StreamInjector) InjectBookmark(match Match, newObject func() runtime.Object, rv string) int {
	end := in.Faults.Begin(faultlog.StreamFault, "a BOOKMARK at resourceVersion "+rv+" injected")
	defer end()
	in.mu.Lock()
	var streams []*rewrittenBody
	for b := range in.open {
		if match(b.req) {
			streams = append(streams, b)
		}
	}
	in.mu.Unlock()
	sent := 0
	for _, b := range streams {
		ev, err := bookmarkEvent(newObject(), b.objects, rv, false)
		if err != nil {
			continue
		}
		if b.encode(ev) == nil {
			sent++
		}
	}
	return sent
}

// OpenStreams counts the open rewritten streams whose request matches:
// the watches InjectBookmark and EndStreams would reach now.
func (in *StreamInjector) OpenStreams(match Match) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for b := range in.open {
		if match(b.req) {
			n++
		}
	}
	return n
}

// EndStreams ends the open rewritten streams whose request matches, as a
// server closing them would look to the client: after the last whole event
// the client reads a clean EOF. The injector closes the server's stream
// (the client's request to the server ends). It returns how many it ended.
func (in *StreamInjector) EndStreams(match Match) int {
	in.mu.Lock()
	var ending []*rewrittenBody
	for b := range in.open {
		if match(b.req) {
			ending = append(ending, b)
		}
	}
	in.mu.Unlock()
	for _, b := range ending {
		b.ended.Store(true)
		_ = b.src.Close() // the pump's next read fails; it then closes the client's side cleanly
	}
	return len(ending)
}

// Rewritten counts the streams rewritten so far, by media type
// ("application/vnd.kubernetes.protobuf", "application/json").
func (in *StreamInjector) Rewritten() map[string]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	m := make(map[string]int, len(in.rewritten))
	for k, v := range in.rewritten {
		m[k] = v
	}
	return m
}

func (in *StreamInjector) add(r *streamRule) (restore func(), count func() int) {
	end := in.Faults.Begin(faultlog.StreamFault, r.action.String())
	in.mu.Lock()
	in.rules = append(in.rules, r)
	in.mu.Unlock()
	restore = func() {
		end()
		in.mu.Lock()
		defer in.mu.Unlock()
		r.removed = true
		for i, x := range in.rules {
			if x == r {
				in.rules = append(in.rules[:i], in.rules[i+1:]...)
				break
			}
		}
	}
	count = func() int {
		in.mu.Lock()
		defer in.mu.Unlock()
		return r.count
	}
	return restore, count
}

// matching lists the rules that apply to a watch request, at its start.
func (in *StreamInjector) matching(req *http.Request) []*streamRule {
	if !isWatch(req) {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	var rs []*streamRule
	for _, r := range in.rules {
		if r.match(req) {
			rs = append(rs, r)
		}
	}
	return rs
}

type streamTransport struct {
	next http.RoundTripper
	in   *StreamInjector
}

func (t streamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rules := t.in.matching(req)
	resp, err := t.next.RoundTrip(req)
	if err != nil || len(rules) == 0 || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	mediaType, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return resp, nil
	}
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok || info.StreamSerializer == nil {
		return resp, nil
	}
	pr, pw := io.Pipe()
	b := &rewrittenBody{req: req, src: resp.Body, pr: pr, pw: pw, done: make(chan struct{}), in: t.in,
		enc: streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(pw), info.StreamSerializer.Serializer), objects: info.Serializer}
	t.in.mu.Lock()
	if t.in.open == nil {
		t.in.open = map[*rewrittenBody]struct{}{}
		t.in.rewritten = map[string]int{}
	}
	t.in.open[b] = struct{}{}
	t.in.rewritten[mediaType]++
	t.in.mu.Unlock()
	go t.in.pump(b, info, rules)
	resp.Body = b
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return resp, nil
}

// rewrittenBody is what the client reads: the pump's output.
type rewrittenBody struct {
	req   *http.Request
	src   io.ReadCloser // the server's stream
	pr    *io.PipeReader
	pw    *io.PipeWriter
	done  chan struct{} // the pump has returned
	ended atomic.Bool   // EndStreams: the pump's read error is a clean end
	in    *StreamInjector
	// objects encodes an event's object for the stream's media type.
	objects runtime.Serializer
	// mu serialises the writes of whole events into the client's side:
	// the pump's and InjectBookmark's.
	mu  sync.Mutex
	enc streaming.Encoder
}

// encode writes one whole event into the client's side.
func (b *rewrittenBody) encode(ev *metav1.WatchEvent) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.enc.Encode(ev)
}

func (b *rewrittenBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

// Close ends both sides and waits for the pump.
func (b *rewrittenBody) Close() error {
	_ = b.pr.Close()
	err := b.src.Close()
	<-b.done
	return err
}

// pump decodes the server's events, applies the rules and encodes what
// passes into the client's side of the pipe, whole events at a time.
func (in *StreamInjector) pump(b *rewrittenBody, info runtime.SerializerInfo, rules []*streamRule) {
	defer close(b.done)
	defer func() {
		in.mu.Lock()
		delete(in.open, b)
		in.mu.Unlock()
	}()
	s := info.StreamSerializer
	dec := streaming.NewDecoder(s.Framer.NewFrameReader(b.src), s.Serializer)
	for _, ev := range in.opening(rules, info) {
		if err := b.encode(ev); err != nil {
			b.finish(err)
			return
		}
	}
	var st streamState
	st.cutAfter = in.claimCut(rules)
	streamingList := StreamingLists(b.req)
	for {
		ev := &metav1.WatchEvent{}
		obj, _, err := dec.Decode(nil, ev)
		if err != nil {
			b.finish(err)
			return
		}
		if e, ok := obj.(*metav1.WatchEvent); ok {
			ev = e
		}
		// The event as the rules that look into it see it (decoded only
		// when one does).
		var view *Event
		if in.hasAction(rules, rewriteEvents, observeEvents) {
			if o, err := decodeObject(ev.Object.Raw); err == nil {
				end := ev.Type == string(watch.Bookmark) && initialEventsEndObject(o)
				view = &Event{Request: b.req, Type: watch.EventType(ev.Type), Object: o, InitialEventsEnd: end,
					Initial: streamingList && !st.initialEventsEnded && !end}
				in.observe(rules, *view)
			}
		}
		if in.drop(rules, ev, &st) {
			continue
		}
		if view != nil {
			send, err := in.rewrite(rules, view, ev, b.objects)
			if err != nil {
				b.finish(err)
				return
			}
			if !send {
				continue
			}
		}
		if err := b.encode(ev); err != nil {
			b.finish(err)
			return
		}
		if st.cutAfter > 0 && ev.Type == string(watch.Added) && !st.initialEventsEnded {
			if st.passed++; st.passed == st.cutAfter {
				_ = b.src.Close()
				_ = b.pw.CloseWithError(ErrStreamCut)
				return
			}
		}
	}
}

// claimCut takes one cut from the first cutInitialEvents rule with cuts
// left: how many initial objects the stream passes before it is cut (0:
// not cut).
func (in *StreamInjector) claimCut(rules []*streamRule) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, r := range rules {
		if !r.removed && r.action == cutInitialEvents && r.times > 0 {
			r.times--
			r.count++
			return max(r.after, 1)
		}
	}
	return 0
}

// finish ends the client's side: a clean EOF when the server's stream
// ended cleanly or EndStreams ended it, else the error.
func (b *rewrittenBody) finish(err error) {
	if b.ended.Load() || errors.Is(err, io.EOF) {
		_ = b.pw.Close()
		return
	}
	_ = b.pw.CloseWithError(err)
}

// opening builds the events the rules send before the server's.
func (in *StreamInjector) opening(rules []*streamRule, info runtime.SerializerInfo) []*metav1.WatchEvent {
	in.mu.Lock()
	defer in.mu.Unlock()
	var evs []*metav1.WatchEvent
	for _, r := range rules {
		if r.removed || r.action != sendInitialEventsEndFirst {
			continue
		}
		ev, err := bookmarkEvent(r.newObject(), info.Serializer, "0", true)
		if err != nil {
			continue // an object the scheme does not know: nothing to send
		}
		r.count++
		evs = append(evs, ev)
	}
	return evs
}

// streamState is what a stream's rules remember between its events.
type streamState struct {
	initialEventsEnded bool // the initial-events-end bookmark went by
	objectDropped      bool // dropInitialObject dropped one
	cutAfter, passed   int  // cutInitialEvents: the cut's place, initial objects passed
}

// drop reports whether a rule still in force drops ev, and counts it.
func (in *StreamInjector) drop(rules []*streamRule, ev *metav1.WatchEvent, st *streamState) bool {
	var action streamAction
	switch {
	case ev.Type == string(watch.Bookmark) && isInitialEventsEnd(ev):
		action = dropInitialEventsEnd
	case ev.Type == string(watch.Added) && !st.initialEventsEnded && !st.objectDropped:
		action = dropInitialObject
	default:
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, r := range rules {
		if !r.removed && r.action == action {
			r.count++
			st.objectDropped = st.objectDropped || action == dropInitialObject
			return true
		}
	}
	st.initialEventsEnded = st.initialEventsEnded || action == dropInitialEventsEnd
	return false
}

// isInitialEventsEnd decodes a bookmark's object (JSON or protobuf, any
// type client-go's scheme knows) and looks for the annotation.
func isInitialEventsEnd(ev *metav1.WatchEvent) bool {
	obj, err := decodeObject(ev.Object.Raw)
	return err == nil && initialEventsEndObject(obj)
}

// initialEventsEndObject says whether obj carries the annotation of the
// bookmark that ends a streaming list's initial events.
func initialEventsEndObject(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

// decodeObject decodes a watch event's object: a type client-go's scheme
// knows (JSON or protobuf), or else unstructured JSON (a custom resource).
func decodeObject(raw []byte) (runtime.Object, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err == nil {
		return obj, nil
	}
	u, _, uerr := unstructured.UnstructuredJSONScheme.Decode(raw, nil, nil)
	if uerr != nil {
		return nil, err
	}
	return u, nil
}

// encodeObject encodes obj as the server encodes a watch event's object
// with s (its kind set from client-go's scheme when it is a typed object).
func encodeObject(obj runtime.Object, s runtime.Serializer) ([]byte, error) {
	if _, unstructuredObj := obj.(runtime.Unstructured); !unstructuredObj {
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			return nil, err
		}
		obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	}
	var buf bytes.Buffer
	if err := s.Encode(obj, &buf); err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	return buf.Bytes(), nil
}

// bookmarkEvent builds a BOOKMARK event of obj at resourceVersion rv,
// annotated as the end of a streaming list's initial events when
// initialEventsEnd, its object encoded with s.
func bookmarkEvent(obj runtime.Object, s runtime.Serializer, rv string, initialEventsEnd bool) (*metav1.WatchEvent, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(rv)
	if initialEventsEnd {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	raw, err := encodeObject(obj, s)
	if err != nil {
		return nil, fmt.Errorf("encode bookmark: %w", err)
	}
	return &metav1.WatchEvent{Type: string(watch.Bookmark), Object: runtime.RawExtension{Raw: raw}}, nil
}

// hasAction says whether a rule still in force does one of actions.
func (in *StreamInjector) hasAction(rules []*streamRule, actions ...streamAction) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, r := range rules {
		if !r.removed && slices.Contains(actions, r.action) {
			return true
		}
	}
	return false
}

// observe hands ev to the observing rules still in force.
func (in *StreamInjector) observe(rules []*streamRule, ev Event) {
	var calls []func(Event)
	in.mu.Lock()
	for _, r := range rules {
		if !r.removed && r.action == observeEvents {
			r.count++
			calls = append(calls, r.observe)
		}
	}
	in.mu.Unlock()
	for _, f := range calls {
		f(ev)
	}
}

// rewrite hands view to the rewriting rules still in force, in order, and
// re-encodes ev's object when one did (with s): whether the event goes
// out.
func (in *StreamInjector) rewrite(rules []*streamRule, view *Event, ev *metav1.WatchEvent, s runtime.Serializer) (bool, error) {
	var calls []func(*Event) bool
	in.mu.Lock()
	for _, r := range rules {
		if !r.removed && r.action == rewriteEvents {
			r.count++
			calls = append(calls, r.rewrite)
		}
	}
	in.mu.Unlock()
	if len(calls) == 0 {
		return true, nil
	}
	for _, f := range calls {
		if !f(view) {
			return false, nil
		}
	}
	raw, err := encodeObject(view.Object, s)
	if err != nil {
		return false, err
	}
	ev.Object.Raw = raw
	return true, nil
}
