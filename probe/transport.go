package probe

import (
	"context"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// initialEventsEnd is the annotation of the bookmark that ends a streaming
// list (metav1.InitialEventsAnnotationKey).
const initialEventsEnd = "k8s.io/initial-events-end"

// Instrument returns a copy of cfg whose client records every request and
// dial into rec. The copy gets its own transport (a custom Dial makes
// client-go's transport cache skip it), so nothing is shared with other clients.
func Instrument(cfg *rest.Config, rec *Recorder) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &recordingTransport{next: rt, rec: rec} })
	dial := cfg.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		d := Dial{Time: time.Now(), Addr: addr}
		if err != nil {
			d.Err = err.Error()
		}
		rec.addDial(d)
		return c, err
	}
	return cfg
}

type recordingTransport struct {
	next http.RoundTripper
	rec  *Recorder
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	r := Request{
		Start:                time.Now(),
		Method:               req.Method,
		Path:                 req.URL.Path,
		Watch:                q.Get("watch") == "true" || q.Get("watch") == "1",
		ResourceVersion:      q.Get("resourceVersion"),
		ResourceVersionMatch: q.Get("resourceVersionMatch"),
		SendInitialEvents:    q.Get("sendInitialEvents") == "true",
		TimeoutSeconds:       q.Get("timeoutSeconds"),
		Limit:                q.Get("limit"),
		Accept:               req.Header.Get("Accept"),
		Query:                QueryShape(q),
		ConsistencyCheck:     IsConsistencyCheck(req.Method, q),
	}
	id := t.rec.startRequest(r)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if info.Conn != nil {
				local := info.Conn.LocalAddr().String()
				t.rec.updateRequest(id, func(r *Request) { r.Conn = local })
			}
		},
	}))
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		t.rec.updateRequest(id, func(r *Request) { r.End, r.Err = time.Now(), err.Error() })
		return nil, err
	}
	contentType := resp.Header.Get("Content-Type")
	encoding := resp.Header.Get("Content-Encoding")
	if resp.Uncompressed {
		// net/http asked for gzip itself, decompressed the body and
		// removed the header.
		encoding = "gzip"
	}
	t.rec.updateRequest(id, func(r *Request) {
		r.Status, r.ContentType, r.ContentEncoding = resp.StatusCode, contentType, encoding
	})
	body := &recordingBody{rc: resp.Body, rec: t.rec, id: id}
	if r.Watch && resp.StatusCode == http.StatusOK {
		body.startDecoder(contentType)
	}
	resp.Body = body
	return resp, nil
}

// cborSequence is a CBOR watch stream's media type (runtime's
// ContentTypeCBORSequence, which apimachinery v0.31 lacks).
const cborSequence = "application/cbor-seq"

// recordingBody notes how a response body ended and, for watches, tees the
// stream into a decoder that records ERROR events and the end of initial
// events. The decoder never holds the reader back for long: if it cannot
// decode, it drains.
type recordingBody struct {
	rc   io.ReadCloser
	rec  *Recorder
	id   requestRef
	pw   *io.PipeWriter
	done chan struct{}
	once sync.Once
}

func (b *recordingBody) startDecoder(contentType string) {
	pr, pw := io.Pipe()
	b.pw, b.done = pw, make(chan struct{})
	go func() {
		defer close(b.done)
		defer io.Copy(io.Discard, pr) //nolint:errcheck // drain whatever could not be decoded
		mediaType, _, err := mime.ParseMediaType(contentType)
		if err != nil {
			return
		}
		var framer runtime.Framer
		var stream, objects runtime.Serializer
		switch mediaType {
		case runtime.ContentTypeCBOR, cborSequence:
			// client-go's scheme.Codecs has no CBOR serializer; a watch
			// answered in CBOR is a sequence of self-delimiting data items
			// (apiserver pkg/endpoints/handlers/watch.go: application/cbor-seq).
			s := cbor.NewSerializer(scheme.Scheme, scheme.Scheme)
			framer, stream, objects = cbor.NewFramer(), s, s
		default:
			info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
			if !ok || info.StreamSerializer == nil {
				return
			}
			framer, stream, objects = info.StreamSerializer.Framer, info.StreamSerializer.Serializer, info.Serializer
		}
		dec := streaming.NewDecoder(framer.NewFrameReader(pr), stream)
		for {
			var ev metav1.WatchEvent
			obj, _, err := dec.Decode(nil, &ev)
			if err != nil {
				return
			}
			if e, ok := obj.(*metav1.WatchEvent); ok {
				ev = *e
			}
			b.recordEvent(objects, ev)
		}
	}()
}

func (b *recordingBody) recordEvent(s runtime.Serializer, ev metav1.WatchEvent) {
	var status *metav1.Status
	bookmarkEnd, bookmarkRV := false, ""
	switch ev.Type {
	case "ERROR":
		// The CBOR serializer hands the event's object on as JSON
		// (apimachinery v0.32+: cbor.Transcode, on by default) or as CBOR
		// (v0.31): either decodes.
		for _, d := range []runtime.Decoder{s, scheme.Codecs.UniversalDeserializer()} {
			st := &metav1.Status{}
			if _, _, err := d.Decode(ev.Object.Raw, nil, st); err == nil {
				status = st
				break
			}
		}
	case "BOOKMARK":
		// A built-in object, or a custom resource's (unstructured).
		for _, d := range []runtime.Decoder{scheme.Codecs.UniversalDeserializer(), unstructured.UnstructuredJSONScheme, s} {
			obj, _, err := d.Decode(ev.Object.Raw, nil, nil)
			if err != nil {
				continue
			}
			if m, err := meta.Accessor(obj); err == nil && m.GetAnnotations()[initialEventsEnd] == "true" {
				bookmarkEnd, bookmarkRV = true, m.GetResourceVersion()
			}
			break
		}
	}
	now := time.Now()
	b.rec.updateRequest(b.id, func(r *Request) {
		r.Events++
		if r.FirstEvent.IsZero() {
			r.FirstEvent = now
		}
		r.LastEvent, r.LastEventType = now, string(ev.Type)
		if r.EventTypes == nil {
			r.EventTypes = map[string]int{}
		}
		r.EventTypes[string(ev.Type)]++
		if status != nil {
			r.ErrorCode, r.ErrorReason, r.ErrorMessage = status.Code, string(status.Reason), status.Message
		}
		if bookmarkEnd {
			r.InitialEventsEnd, r.InitialEventsEndRV = true, bookmarkRV
		}
	})
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && b.pw != nil {
		_, _ = b.pw.Write(p[:n]) // fails only once the decoder gave up and drained
	}
	if err != nil {
		b.end(err)
	}
	return n, err
}

func (b *recordingBody) Close() error {
	err := b.rc.Close()
	b.end(nil)
	return err
}

// end records how the body ended, once: EOF is a clean close by the server,
// anything else is an error; closing it ourselves before either is the
// client going away (a stopped watch or a client-side timeout).
func (b *recordingBody) end(readErr error) {
	b.once.Do(func() {
		if b.pw != nil {
			_ = b.pw.Close()
			<-b.done // the decoder has recorded what it saw
		}
		b.rec.updateRequest(b.id, func(r *Request) {
			r.End = time.Now()
			switch {
			case errors.Is(readErr, io.EOF):
				r.CleanEOF = true
			case readErr != nil:
				r.Err = readErr.Error()
			default:
				r.Err = "closed by the client"
			}
		})
	})
}
