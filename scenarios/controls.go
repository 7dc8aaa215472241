package scenarios

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
)

// Broken client set-ups shared by several negative controls (a control
// hands one to its scenario: a transport wrapper as its client, a handler
// wrapper as its handler). Set-ups one scenario alone uses are in its file.

// EndOfWatchAsError wraps cfg's transport so that a watch body ending in EOF
// or an unexpected EOF returns a plain error instead.
func EndOfWatchAsError(cfg *rest.Config) *rest.Config {
	return WatchBodyErrors(cfg, func(err error) error {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return errors.New("watch stream ended (reported as an error by a broken client)")
		}
		return err
	})
}

// AnyWatchEndAsError is EndOfWatchAsError and GoawayCloseAsError at once:
// a broken client that reports every end of a watch as an error, whether
// the server ended the stream (EOF) or closed its connection after a GOAWAY
// (a kube-apiserver's shutdown ends its watches either way, depending on
// timing: S23's drain).
func AnyWatchEndAsError(cfg *rest.Config) *rest.Config {
	return GoawayCloseAsError(EndOfWatchAsError(cfg))
}

// WatchBodyErrors wraps cfg's transport so that every read of a watch's
// body returns rewrite(err) for its error err (nil included).
func WatchBodyErrors(cfg *rest.Config, rewrite func(error) error) *rest.Config {
	return httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && req.URL.Query().Get("watch") == "true" {
			resp.Body = rewrittenBody{resp.Body, rewrite}
		}
		return resp, err
	})
}

type rewrittenBody struct {
	io.ReadCloser
	rewrite func(error) error
}

func (b rewrittenBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	return n, b.rewrite(err)
}

// PinListResourceVersion wraps cfg's transport so that a LIST or streaming
// list asking for resourceVersion "" (a consistent read) goes out at the
// last non-empty resourceVersion the client listed at: a client that
// retries the same resourceVersion forever, as client-go did before
// k8s#107133 was fixed (its reflector never got off a resourceVersion the
// server answered "too large").
func PinListResourceVersion(cfg *rest.Config) *rest.Config {
	var (
		mu   sync.Mutex
		last string
	)
	return httpfault.Intercept(cfg, func(next http.RoundTripper, req *http.Request) (*http.Response, error) {
		q := req.URL.Query()
		watch := q.Get("watch") == "true" || q.Get("watch") == "1"
		if req.Method == http.MethodGet && (!watch || q.Get("sendInitialEvents") == "true") {
			mu.Lock()
			switch rv := q.Get("resourceVersion"); {
			case rv != "":
				last = rv
			case last != "":
				req = req.Clone(req.Context())
				q.Set("resourceVersion", last)
				req.URL.RawQuery = q.Encode()
			}
			mu.Unlock()
		}
		return next.RoundTrip(req)
	})
}

// InitialListOnly wraps h into a handler told of the initial list and
// nothing after: a client whose relists and watch events fix the store
// without notifying the controller.
func InitialListOnly(h cache.ResourceEventHandler) cache.ResourceEventHandler {
	return initialListOnly{h}
}

type initialListOnly struct{ next cache.ResourceEventHandler }

func (h initialListOnly) OnAdd(obj any, inInitialList bool) {
	if inInitialList {
		h.next.OnAdd(obj, true)
	}
}
func (initialListOnly) OnUpdate(any, any) {}
func (initialListOnly) OnDelete(any)      {}

// AcceptJSONOnly wraps cfg's transport so that every request asks for JSON
// only, whatever client-go put in its Accept header: a client that ignores
// the CBOR gates (any client-go before v0.32). The probe's recorder, outside
// the wrapper, still sees client-go's own Accept; the answer is JSON.
func AcceptJSONOnly(cfg *rest.Config) *rest.Config {
	return httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
		req = req.Clone(req.Context())
		req.Header.Set("Accept", "application/json")
		return rt.RoundTrip(req)
	})
}

// DropTombstones is the classic controller bug: a delete handler that
// type-asserts its object and returns on a DeletedFinalStateUnknown.
func DropTombstones(h cache.ResourceEventHandler) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.OnAdd(obj, false) },
		UpdateFunc: h.OnUpdate,
		DeleteFunc: func(obj any) {
			if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				return
			}
			h.OnDelete(obj)
		},
	}
}

// DeafHandler passes on Adds only: a controller that never hears of an
// object's end.
func DeafHandler(h cache.ResourceEventHandler) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) { h.OnAdd(obj, false) }}
}

// GoawayCloseAsError wraps cfg's transport so that a watch body ending with
// the GOAWAY-then-close error of Go's HTTP/2 client ("http2: server sent
// GOAWAY and closed the connection") returns an error apimachinery does not
// take for an end of stream: apimachinery before kubernetes PR #73277 (its
// pkg/util/net IsProbableEOF did not know the message), so the stream
// watcher sends an ERROR event and the reflector relists.
func GoawayCloseAsError(cfg *rest.Config) *rest.Config {
	return WatchBodyErrors(cfg, func(err error) error {
		if err != nil && strings.Contains(err.Error(), "GOAWAY") {
			return errors.New("watch stream broken after GOAWAY (reported as an error by a broken client)")
		}
		return err
	})
}
