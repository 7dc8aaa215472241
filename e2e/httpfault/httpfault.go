// Package httpfault injects HTTP-level faults into a client's requests: a
// list or watch answered 429, 500 or 410, or a watch whose stream carries one
// ERROR event (410 Gone, 500 InternalError, too large resource version) and
// ends, as kube-apiserver sends them.
//
// Where it lives: in the client's transport (rest.Config.Wrap), below the
// probe's recorder. The alternative, a TLS-terminating proxy with its own
// serving certificate, would need the client to trust another CA (or the
// backend to issue the proxy a certificate: impossible for kind and existing
// clusters) and would re-encrypt every byte. client-go decodes a response by
// its Content-Type, whatever it asked for, so a synthesized JSON Status or a
// one-event JSON watch stream reaches the reflector exactly as the server's
// would; everything between the transport and the socket (TLS, HTTP/2,
// dials) stays real, and the TCP-level faults are the fault proxy's job.
// Every injection is undoable and counts what it answered.
package httpfault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
)

// Match selects requests.
type Match func(*http.Request) bool

func isWatch(r *http.Request) bool {
	w := r.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

// Watches matches watch requests that resume (not streaming lists).
func Watches(r *http.Request) bool {
	return isWatch(r) && r.URL.Query().Get("sendInitialEvents") != "true"
}

// StreamingLists matches watches that ask for initial events.
func StreamingLists(r *http.Request) bool {
	return isWatch(r) && r.URL.Query().Get("sendInitialEvents") == "true"
}

// WatchStreams matches every watch request: resuming watches and
// streaming lists.
func WatchStreams(r *http.Request) bool { return isWatch(r) }

// Lists matches LIST requests.
func Lists(r *http.Request) bool { return r.Method == http.MethodGet && !isWatch(r) }

// Every matches every request.
func Every(*http.Request) bool { return true }

// RoundTripperFunc is a function as an http.RoundTripper: the one way the
// specs and their broken clients write a transport wrapper.
type RoundTripperFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f RoundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Injector holds the active injections of one client.
type Injector struct {
	// Faults is where the injector records its rules' windows (nil:
	// nowhere): the spec's log (e2e.Env.Faults). A negative control's
	// broken client leaves it nil: its rewrites are the client under test,
	// not a fault the spec applies.
	Faults *faultlog.Log

	mu    sync.Mutex
	rules []*rule
	last  time.Time // when a rule last answered
}

type rule struct {
	match   Match
	left    int // answers left; <0 = unlimited
	answer  func(*http.Request) *http.Response
	fail    func(*http.Request) error // instead of answer: the request fails without an answer
	answers int
	// what names the rule's answer in its faultlog window; end closes the
	// window, at restore or when the rule has no answer left.
	what string
	end  func()
}

// Instrument returns a copy of cfg whose transport consults the injector.
// Wrap it before probe.Instrument so the recorder sees the injected answers.
func (in *Injector) Instrument(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return transport{next: rt, in: in} })
	return cfg
}

type transport struct {
	next http.RoundTripper
	in   *Injector
}

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if resp, err := t.in.answer(req); resp != nil || err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return resp, err
	}
	return t.next.RoundTrip(req)
}

func (in *Injector) answer(req *http.Request) (*http.Response, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, r := range in.rules {
		if r.left != 0 && r.match(req) {
			if r.left > 0 {
				r.left--
				if r.left == 0 {
					r.end()
				}
			}
			r.answers++
			in.last = time.Now()
			if r.fail != nil {
				return nil, r.fail(req)
			}
			return r.answer(req), nil
		}
	}
	return nil, nil
}

func (in *Injector) add(r *rule) (restore func(), answered func() int) {
	times := "every matching request"
	if r.left >= 0 {
		times = fmt.Sprintf("the next %d matching requests", r.left)
	}
	r.end = in.Faults.Begin(faultlog.HTTPFault, r.what+" to "+times)
	in.mu.Lock()
	in.rules = append(in.rules, r)
	in.mu.Unlock()
	var once sync.Once
	restore = func() {
		once.Do(func() {
			r.end()
			in.mu.Lock()
			defer in.mu.Unlock()
			for i, x := range in.rules {
				if x == r {
					in.rules = append(in.rules[:i], in.rules[i+1:]...)
					break
				}
			}
		})
	}
	answered = func() int {
		in.mu.Lock()
		defer in.mu.Unlock()
		return r.answers
	}
	return restore, answered
}

// LastAnswer is when one of the injector's rules last answered a request
// (zero if none has): a request the client sends after it reached the server.
func (in *Injector) LastAnswer() time.Time {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.last
}

// status builds the Status kube-apiserver sends for code.
func status(code int32, reason metav1.StatusReason, message string) *metav1.Status {
	return &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: code, Reason: reason, Message: message,
	}
}

func jsonResponse(req *http.Request, code int, body []byte) *http.Response {
	h := http.Header{"Content-Type": []string{"application/json"}}
	if code == http.StatusTooManyRequests {
		h.Set("Retry-After", "1")
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), StatusCode: code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}
}

// FailRequests answers the next `times` matching requests (times < 0: all)
// with an HTTP error carrying a Status, as kube-apiserver would: a 429 with
// Retry-After: 1 (its max-in-flight filter's value), any other code without.
func (in *Injector) FailRequests(match Match, times int, code int32, reason metav1.StatusReason, message string) (restore func(), answered func() int) {
	retryAfter := NoRetryAfter
	if code == http.StatusTooManyRequests {
		retryAfter = 1
	}
	return in.FailRequestsRetryAfter(match, times, code, reason, message, retryAfter)
}

// RefuseRequests fails every matching request, until restore, as a refused
// dial does: with a *net.OpError wrapping ECONNREFUSED, which client-go
// classifies as connection refused (the reflector backs off and retries;
// utilnet.IsConnectionRefused). The fault proxy refuses new connections
// too, but a request can still go out on an HTTP/2 connection opened
// before: this refuses the client's requests whatever connection they
// would take.
func (in *Injector) RefuseRequests(match Match) (restore func(), answered func() int) {
	return in.add(&rule{match: match, left: -1, what: "connection refused", fail: func(*http.Request) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}})
}

// NoRetryAfter, as FailRequestsRetryAfter's retryAfter, leaves the
// Retry-After header out.
const NoRetryAfter = -1

// FailRequestsRetryAfter is FailRequests with the Retry-After header chosen:
// retryAfter seconds, or none (NoRetryAfter). It decides who handles the
// answer in client-go v0.36: the REST client retries a 429 or 5xx itself
// only when it carries Retry-After (rest/with_retry.go checkWait), waiting
// that long, at most 10 times (rest/request.go NewRequest, maxRetries); any
// other answer, and the 11th in a row, reaches the caller (the reflector).
func (in *Injector) FailRequestsRetryAfter(match Match, times int, code int32, reason metav1.StatusReason, message string, retryAfter int) (restore func(), answered func() int) {
	body, _ := json.Marshal(status(code, reason, message))
	return in.add(&rule{match: match, left: times, what: fmt.Sprintf("%d %s", code, reason), answer: func(req *http.Request) *http.Response {
		resp := jsonResponse(req, int(code), body)
		resp.Header.Del("Retry-After")
		if retryAfter != NoRetryAfter {
			resp.Header.Set("Retry-After", strconv.Itoa(retryAfter))
		}
		return resp
	}})
}

// EndWatchesWithError answers the next `times` matching watches with a 200
// stream holding one ERROR event, then the end of the stream: what
// kube-apiserver sends when a watch cannot go on (410 "too old resource
// version", 500 for an etcd event with PrevKv=nil, ...).
func (in *Injector) EndWatchesWithError(match Match, times int, code int32, reason metav1.StatusReason, message string) (restore func(), answered func() int) {
	st, _ := json.Marshal(status(code, reason, message))
	ev, _ := json.Marshal(metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Raw: st}})
	return in.add(&rule{match: match, left: times, what: fmt.Sprintf("a watch ended by an ERROR event %d %s", code, reason), answer: func(req *http.Request) *http.Response {
		return jsonResponse(req, http.StatusOK, append(ev, '\n'))
	}})
}

// EndWatchesCleanly answers the next `times` matching watches with a 200
// stream that ends at once with no event: a server closing the watch (EOF).
func (in *Injector) EndWatchesCleanly(match Match, times int) (restore func(), answered func() int) {
	return in.add(&rule{match: match, left: times, what: "a watch ended at once", answer: func(req *http.Request) *http.Response {
		return jsonResponse(req, http.StatusOK, nil)
	}})
}

// StatusesAsErrors wraps a transport so that every non-2xx answer becomes a
// transport error: a broken client stack, for negative controls (client-go
// then cannot tell a 429 to back off from a failure).
func StatusesAsErrors(cfg *rest.Config) *rest.Config {
	return Intercept(cfg, func(next http.RoundTripper, req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err == nil && resp.StatusCode >= 300 {
			_ = resp.Body.Close()
			return nil, fmt.Errorf("broken transport: HTTP %d", resp.StatusCode)
		}
		return resp, err
	})
}

// TooManyRequestsAsInternalErrors wraps a transport so that every 429 answer
// without Retry-After becomes a 500 InternalError (Status and code): a broken
// client stack, for negative controls, that backs off only when told how long
// (client-go's reflector then sees a failure where it should see throttling).
func TooManyRequestsAsInternalErrors(cfg *rest.Config) *rest.Config {
	return Intercept(cfg, func(next http.RoundTripper, req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "" {
			return resp, err
		}
		_ = resp.Body.Close()
		body, _ := json.Marshal(status(http.StatusInternalServerError, metav1.StatusReasonInternalError, "broken client stack: a 429 without Retry-After taken for a failure"))
		return jsonResponse(req, http.StatusInternalServerError, body), nil
	})
}

// Intercept is a copy of cfg whose transport hands each request to f with
// the transport it wraps (next): a broken or observing client in a few
// lines, f deciding what to send and what to answer.
func Intercept(cfg *rest.Config, f func(next http.RoundTripper, req *http.Request) (*http.Response, error)) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return RoundTripperFunc(func(req *http.Request) (*http.Response, error) { return f(next, req) })
	})
	return cfg
}
