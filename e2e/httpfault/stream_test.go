package httpfault_test

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
)

// framings are the two watch encodings a typed client may get, with the
// Content-Type kube-apiserver answers a watch with.
var framings = []struct {
	name        string
	contentType string
}{
	{"protobuf", "application/vnd.kubernetes.protobuf;stream=watch"},
	{"json", "application/json"},
}

// step is one event of a synthesised stream: what kube-apiserver sends for a
// streaming list of two pods, the end of the initial events, a change and a
// periodic bookmark.
type step struct {
	typ  watch.EventType
	name string // "" for a bookmark
	rv   string
	end  bool // the bookmark carries k8s.io/initial-events-end=true
}

var streamingList = []step{
	{watch.Added, "a", "5", false},
	{watch.Added, "b", "6", false},
	{watch.Bookmark, "", "10", true},
	{watch.Modified, "a", "11", false},
	{watch.Bookmark, "", "12", false},
}

// watchServer serves every request with the synthesised stream in the
// framing of contentType, encoded the way kube-apiserver encodes it
// (pkg/endpoints/handlers/watch.go: the framer's writer, the stream
// serializer for the event, the media type's serializer for its object).
// A write that fails because the client has gone ends the stream quietly.
// With hold, the stream stays open after the last event until the client
// goes; closed then receives the request.
func watchServer(t *testing.T, contentType string, hold bool) (srv *httptest.Server, closed chan struct{}) {
	t.Helper()
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		t.Fatal(err)
	}
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		t.Fatalf("no serializer for %s", mediaType)
	}
	closed = make(chan struct{}, 8)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(w), info.StreamSerializer.Serializer)
		for _, s := range streamingList {
			if err := enc.Encode(encodeEvent(t, info.Serializer, s)); err != nil {
				// The client went away (a cut stream's connection is
				// closed under the server's writes): what matters is
				// what the client decoded, which each test checks.
				t.Logf("server: encode: %v", err)
				return
			}
			w.(http.Flusher).Flush()
		}
		if hold {
			<-r.Context().Done()
			closed <- struct{}{}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, closed
}

func encodeEvent(t *testing.T, s runtime.Serializer, st step) *metav1.WatchEvent {
	t.Helper()
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: st.name, Namespace: "ns", ResourceVersion: st.rv}}
	if st.name == "" {
		pod.Namespace = ""
	}
	if st.end {
		pod.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	var buf bytes.Buffer
	if err := s.Encode(pod, &buf); err != nil {
		t.Fatal(err)
	}
	return &metav1.WatchEvent{Type: string(st.typ), Object: runtime.RawExtension{Raw: buf.Bytes()}}
}

// seen is an event as the client decoded it.
type seen struct {
	typ  watch.EventType
	name string
	rv   string
	end  bool
}

func (s seen) String() string { return fmt.Sprintf("%s %s@%s end=%v", s.typ, s.name, s.rv, s.end) }

func expected(steps []step) []seen {
	var out []seen
	for _, s := range steps {
		out = append(out, seen(s))
	}
	return out
}

// rig is one framing's set-up: a context bounding the test, the
// synthesised server (its streams held open with hold; closed as
// watchServer's), a StreamInjector with no rule yet, and a typed client
// through it (rules added later apply to its next requests).
func rig(t *testing.T, contentType string, hold bool) (ctx context.Context, in *httpfault.StreamInjector, cs kubernetes.Interface, closed chan struct{}) {
	t.Helper()
	srv, closed := watchServer(t, contentType, hold)
	// Cancelled before the server closes (cleanups run last first), as a
	// deferred cancel in the test would be.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	in = &httpfault.StreamInjector{}
	return ctx, in, clientFor(t, srv, contentType, in), closed
}

func clientFor(t *testing.T, srv *httptest.Server, contentType string, in *httpfault.StreamInjector) kubernetes.Interface {
	t.Helper()
	mediaType, _, _ := mime.ParseMediaType(contentType)
	cfg := in.Instrument(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: mediaType}})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// streamingWatch opens a streaming list as client-go's reflector does.
func streamingWatch(ctx context.Context, t *testing.T, cs kubernetes.Interface, sendInitialEvents bool) watch.Interface {
	t.Helper()
	opts := metav1.ListOptions{AllowWatchBookmarks: true}
	if sendInitialEvents {
		opts.SendInitialEvents = ptr.To(true)
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	w, err := cs.CoreV1().Pods("ns").Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// collect reads n events, or until the stream ends if n < 0.
func collect(t *testing.T, w watch.Interface, n int) []seen {
	t.Helper()
	var out []seen
	timeout := time.After(10 * time.Second)
	for n < 0 || len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return out
			}
			if ev.Type == watch.Error {
				t.Fatalf("error event: %v", ev.Object)
			}
			m, err := meta.Accessor(ev.Object)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, seen{ev.Type, m.GetName(), m.GetResourceVersion(), m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"})
		case <-timeout:
			t.Fatalf("timed out after %d events: %v", len(out), out)
		}
	}
	return out
}

// TestDropInitialEventsEnd: for each framing, the bookmark that ends the
// initial events is dropped, every other event reaches the client intact
// and in order; undone, a new stream carries it again; a watch that does
// not ask for initial events is not rewritten.
func TestDropInitialEventsEnd(t *testing.T) {
	for _, f := range framings {
		t.Run(f.name, func(t *testing.T) {
			ctx, in, cs, _ := rig(t, f.contentType, false)
			restore, dropped := in.DropInitialEventsEnd(httpfault.StreamingLists)

			got := collect(t, streamingWatch(ctx, t, cs, true), -1)
			want := expected(slices.Delete(slices.Clone(streamingList), 2, 3))
			if !slices.Equal(got, want) {
				t.Fatalf("events:\n got %v\nwant %v", got, want)
			}
			if dropped() != 1 {
				t.Fatalf("dropped %d bookmarks, want 1", dropped())
			}
			mediaType, _, _ := mime.ParseMediaType(f.contentType)
			if r := in.Rewritten(); r[mediaType] != 1 || len(r) != 1 {
				t.Fatalf("rewritten streams %v, want one %s", r, mediaType)
			}

			// A resuming watch does not match StreamingLists: untouched.
			if got := collect(t, streamingWatch(ctx, t, cs, false), -1); !slices.Equal(got, expected(streamingList)) {
				t.Fatalf("plain watch events:\n got %v\nwant %v", got, expected(streamingList))
			}
			restore()
			if got := collect(t, streamingWatch(ctx, t, cs, true), -1); !slices.Equal(got, expected(streamingList)) {
				t.Fatalf("events after restore:\n got %v\nwant %v", got, expected(streamingList))
			}
			if dropped() != 1 {
				t.Fatalf("dropped %d bookmarks after restore, want still 1", dropped())
			}
			if n := in.EndStreams(func(*http.Request) bool { return true }); n != 0 {
				t.Fatalf("%d rewritten streams still open after their ends", n)
			}
		})
	}
}

// TestEndStreams: a stream the server holds open is ended by the injector
// with a clean end after its last whole event (no ERROR event reaches the
// client), and the server's side is closed too.
func TestEndStreams(t *testing.T) {
	for _, f := range framings {
		t.Run(f.name, func(t *testing.T) {
			ctx, in, cs, closed := rig(t, f.contentType, true)
			_, dropped := in.DropInitialEventsEnd(httpfault.StreamingLists)
			w := streamingWatch(ctx, t, cs, true)
			defer w.Stop()
			if got := collect(t, w, 4); !slices.Equal(got, expected(slices.Delete(slices.Clone(streamingList), 2, 3))) {
				t.Fatalf("events before the end: %v", got)
			}
			if n := in.EndStreams(httpfault.Watches); n != 0 {
				t.Fatalf("EndStreams(Watches) ended %d streaming lists", n)
			}
			if n := in.EndStreams(httpfault.StreamingLists); n != 1 {
				t.Fatalf("EndStreams ended %d streams, want 1", n)
			}
			if rest := collect(t, w, -1); len(rest) != 0 {
				t.Fatalf("events after the end: %v", rest)
			}
			select {
			case <-closed:
			case <-ctx.Done():
				t.Fatal("the server's stream was not closed")
			}
			if dropped() != 1 {
				t.Fatalf("dropped %d, want 1", dropped())
			}
		})
	}
}

// TestSendInitialEventsEndFirst: the broken stream begins with an
// initial-events-end bookmark of the given type, then the server's events.
func TestSendInitialEventsEndFirst(t *testing.T) {
	for _, f := range framings {
		t.Run(f.name, func(t *testing.T) {
			ctx, in, cs, _ := rig(t, f.contentType, false)
			_, sent := in.SendInitialEventsEndFirst(httpfault.StreamingLists, func() runtime.Object { return &corev1.Pod{} })
			got := collect(t, streamingWatch(ctx, t, cs, true), -1)
			want := append([]seen{{watch.Bookmark, "", "0", true}}, expected(streamingList)...)
			if !slices.Equal(got, want) {
				t.Fatalf("events:\n got %v\nwant %v", got, want)
			}
			if sent() != 1 {
				t.Fatalf("sent %d bookmarks, want 1", sent())
			}
		})
	}
}

// TestDropInitialObject: for each framing, a streaming list loses its first
// initial object and nothing else, once per stream; undone, a new stream
// carries it again.
func TestDropInitialObject(t *testing.T) {
	for _, f := range framings {
		t.Run(f.name, func(t *testing.T) {
			ctx, in, cs, _ := rig(t, f.contentType, false)
			restore, dropped := in.DropInitialObject(httpfault.StreamingLists)

			want := expected(slices.Delete(slices.Clone(streamingList), 0, 1))
			for i := 1; i <= 2; i++ {
				if got := collect(t, streamingWatch(ctx, t, cs, true), -1); !slices.Equal(got, want) {
					t.Fatalf("stream %d events:\n got %v\nwant %v", i, got, want)
				}
				if dropped() != i {
					t.Fatalf("dropped %d objects after %d streams, want %d", dropped(), i, i)
				}
			}
			restore()
			if got := collect(t, streamingWatch(ctx, t, cs, true), -1); !slices.Equal(got, expected(streamingList)) {
				t.Fatalf("events after restore:\n got %v\nwant %v", got, expected(streamingList))
			}
		})
	}
}

// TestCutInitialEvents: for each framing, the next stream is cut after its
// first initial object (the client's watch ends there, without the
// bookmark), the one after passes whole.
func TestCutInitialEvents(t *testing.T) {
	for _, f := range framings {
		t.Run(f.name, func(t *testing.T) {
			ctx, in, cs, _ := rig(t, f.contentType, false)
			restore, cut := in.CutInitialEvents(httpfault.StreamingLists, 1, 1)
			defer restore()

			if got, want := collect(t, streamingWatch(ctx, t, cs, true), -1), expected(streamingList[:1]); !slices.Equal(got, want) {
				t.Fatalf("cut stream's events:\n got %v\nwant %v", got, want)
			}
			if cut() != 1 {
				t.Fatalf("cut %d streams, want 1", cut())
			}
			if got := collect(t, streamingWatch(ctx, t, cs, true), -1); !slices.Equal(got, expected(streamingList)) {
				t.Fatalf("the stream after the cut:\n got %v\nwant %v", got, expected(streamingList))
			}
			if cut() != 1 {
				t.Fatalf("cut %d streams after the second, want 1", cut())
			}
		})
	}
}

// TestRewriteEvents: for each framing, a rewrite sees every event decoded,
// with the initial events and their end told apart; the bookmark after the
// initial events is dropped and the change's resourceVersion rewritten,
// re-encoded so the client decodes it; an observer beneath sees the
// server's events unchanged.
func TestRewriteEvents(t *testing.T) {
	for _, f := range framings {
		t.Run(f.name, func(t *testing.T) {
			ctx, in, cs, _ := rig(t, f.contentType, false)
			var observed []seen
			_, nObserved := in.ObserveEvents(httpfault.WatchStreams, func(e httpfault.Event) {
				m, _ := meta.Accessor(e.Object)
				observed = append(observed, seen{e.Type, m.GetName(), m.GetResourceVersion(), e.InitialEventsEnd})
			})
			var initial []bool
			restore, rewritten := in.RewriteEvents(httpfault.StreamingLists, func(e *httpfault.Event) bool {
				initial = append(initial, e.Initial)
				m, err := meta.Accessor(e.Object)
				if err != nil {
					t.Errorf("event object %T: %v", e.Object, err)
					return true
				}
				switch {
				case e.Type == watch.Bookmark && !e.InitialEventsEnd:
					return false
				case e.Type == watch.Modified:
					m.SetResourceVersion("999")
				}
				return true
			})
			got := collect(t, streamingWatch(ctx, t, cs, true), -1)
			want := expected(streamingList[:4])
			want[3].rv = "999"
			if !slices.Equal(got, want) {
				t.Fatalf("events:\n got %v\nwant %v", got, want)
			}
			if !slices.Equal(initial, []bool{true, true, false, false, false}) {
				t.Fatalf("Initial of each event: %v", initial)
			}
			if rewritten() != 5 || nObserved() != 5 {
				t.Fatalf("rewritten %d, observed %d events, want 5 each", rewritten(), nObserved())
			}
			if !slices.Equal(observed, expected(streamingList)) {
				t.Fatalf("observed:\n got %v\nwant %v", observed, expected(streamingList))
			}
			restore()
			if got := collect(t, streamingWatch(ctx, t, cs, true), -1); !slices.Equal(got, expected(streamingList)) {
				t.Fatalf("events after restore:\n got %v\nwant %v", got, expected(streamingList))
			}
		})
	}
}

// TestInjectBookmark: for each framing, a bookmark injected into an open
// stream after the server's events reaches the client, decodable, at the
// resourceVersion given; a stream that does not match gets none.
func TestInjectBookmark(t *testing.T) {
	for _, f := range framings {
		t.Run(f.name, func(t *testing.T) {
			ctx, in, cs, _ := rig(t, f.contentType, true)
			defer in.Pass(httpfault.WatchStreams)()
			w := streamingWatch(ctx, t, cs, true)
			defer w.Stop()
			if got := collect(t, w, len(streamingList)); !slices.Equal(got, expected(streamingList)) {
				t.Fatalf("events before the injection: %v", got)
			}
			if n := in.OpenStreams(httpfault.StreamingLists); n != 1 {
				t.Fatalf("%d open streaming lists, want 1", n)
			}
			if n := in.InjectBookmark(httpfault.Watches, func() runtime.Object { return &corev1.Pod{} }, "20"); n != 0 {
				t.Fatalf("injected into %d plain watches, want none", n)
			}
			if n := in.InjectBookmark(httpfault.StreamingLists, func() runtime.Object { return &corev1.Pod{} }, "20"); n != 1 {
				t.Fatalf("injected into %d streams, want 1", n)
			}
			if got, want := collect(t, w, 1), []seen{{watch.Bookmark, "", "20", false}}; !slices.Equal(got, want) {
				t.Fatalf("injected event: got %v, want %v", got, want)
			}
		})
	}
}
