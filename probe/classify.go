package probe

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/informer-conformance/informer-conformance/report"
)

// Cause is why an informer re-initialised; the report's type, so that the
// report reads the causes without importing the probe.
type Cause = report.Cause

// The causes, named after what ended the request before the re-initialisation
// (the cases of client-go's tools/cache/reflector.go watch and list).
const (
	CauseGone            Cause = "410 Gone"                   // watch or list: too old resource version / expired
	CauseTooLargeRV      Cause = "too large resource version" // the server is behind the client's resourceVersion
	CauseInternalError   Cause = "500 InternalError"          // an ERROR event or status 500
	CauseTooManyRequests Cause = "429 TooManyRequests"
	CauseOtherStatus     Cause = "other status"         // 401, 403, 503, ... opening a watch or list
	CauseCleanClose      Cause = "clean close"          // the server ended the stream (EOF)
	CauseClientClosed    Cause = "closed by the client" // the client stopped the stream (timeout, decode error, stop)
	CauseClientTimeout   Cause = "client-side timeout"
	CauseTransport       Cause = "transport error" // connection refused, reset, lost, TLS
	CauseUnknown         Cause = "unknown"
)

// Reinit is one re-initialisation after the first sync, with its cause and
// the request whose ending explains it.
type Reinit struct {
	Request Request  `json:"request"`
	Cause   Cause    `json:"cause"`
	Detail  string   `json:"detail,omitempty"`
	After   *Request `json:"after,omitempty"`
}

func (r Reinit) String() string {
	s := fmt.Sprintf("#%d %s %s", r.Request.ID, r.Request.Method, r.Request.Path)
	if r.Request.Watch {
		s += " (streaming list)"
	}
	s += ": " + string(r.Cause)
	if r.After != nil {
		s += fmt.Sprintf(" after #%d", r.After.ID)
	}
	if r.Detail != "" {
		s += " (" + r.Detail + ")"
	}
	return s
}

// Reinitialisations lists the re-initialisations after the first sync: every
// LIST and every WATCH with sendInitialEvents=true that started after the
// informer first synced (or, without a sync time, every one after the first).
func Reinitialisations(rec Record) []Reinit {
	var out []Reinit
	first := true
	for i, r := range rec.Requests {
		if !r.Reinitialises() {
			continue
		}
		initial := !rec.Synced.IsZero() && r.Start.Before(rec.Synced) || rec.Synced.IsZero() && first
		first = false
		if initial {
			continue
		}
		ri := Reinit{Request: r, Cause: CauseUnknown}
		if prev, ok := previousInformerRequest(rec.Requests[:i]); ok {
			ri.After = &prev
			ri.Cause, ri.Detail = causeOf(prev)
		}
		out = append(out, ri)
	}
	return out
}

// previousInformerRequest is the last of reqs an informer could have made:
// a GET other than discovery. A spec's own writes through the informer's
// client (S13's load of SelfSubjectReviews) are recorded beside them and say
// nothing of why the informer re-initialised.
func previousInformerRequest(reqs []Request) (Request, bool) {
	for i := len(reqs) - 1; i >= 0; i-- {
		if r := reqs[i]; r.Method == "GET" && !r.Discovery() {
			return r, true
		}
	}
	return Request{}, false
}

// causeOf says how a request ended, as a reason to re-initialise.
func causeOf(r Request) (Cause, string) {
	switch {
	case r.ErrorCode != 0:
		return statusCause(int(r.ErrorCode), r.ErrorMessage), r.ErrorMessage
	case r.Status != 0 && r.Status != http.StatusOK:
		return statusCause(r.Status, ""), fmt.Sprintf("HTTP %d", r.Status)
	case r.Status == 0 && r.Err != "":
		return CauseTransport, r.Err
	case r.CleanEOF:
		return CauseCleanClose, fmt.Sprintf("after %d events in %s", r.Events, r.Duration().Round(1e6))
	case strings.Contains(r.Err, "Client.Timeout") || strings.Contains(r.Err, "context deadline exceeded") ||
		// net/http's error when http.Client.Timeout cancels a request
		// whose body is being read (the same deadline, seen from below).
		strings.Contains(r.Err, "net/http: request canceled"):
		return CauseClientTimeout, r.Err
	case r.Err == "closed by the client":
		return CauseClientClosed, fmt.Sprintf("after %d events in %s", r.Events, r.Duration().Round(1e6))
	case r.Err != "":
		return CauseTransport, r.Err
	}
	return CauseUnknown, ""
}

func statusCause(code int, message string) Cause {
	switch {
	case strings.Contains(strings.ToLower(message), "too large resource version"):
		return CauseTooLargeRV
	case code == http.StatusGone:
		return CauseGone
	case code == http.StatusInternalServerError:
		return CauseInternalError
	case code == http.StatusTooManyRequests:
		return CauseTooManyRequests
	case code == http.StatusGatewayTimeout:
		// kube-apiserver answers a too large resourceVersion with 504
		// (apierrors.NewTooLargeResourceVersionError).
		return CauseTooLargeRV
	}
	return CauseOtherStatus
}

// CountByCause tallies re-initialisations.
func CountByCause(rs []Reinit) map[Cause]int {
	m := map[Cause]int{}
	for _, r := range rs {
		m[r.Cause]++
	}
	return m
}
