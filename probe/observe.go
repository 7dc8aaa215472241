package probe

import (
	"cmp"
	"fmt"
	"maps"
	"mime"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/informer-conformance/informer-conformance/report"
)

// QueryShape is a request's query in comparable form: its parameters
// sorted, each with its value, except those whose values differ between
// two runs of the same code: a resourceVersion other than "" and "0"
// becomes "<rv>", timeoutSeconds and timeout "<s>" (the reflector draws the
// watch's at random),
// continue "<token>", selectors "<selector>".
func QueryShape(q url.Values) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(q)) {
		v := q.Get(k)
		switch k {
		case "resourceVersion":
			if v != "" && v != "0" {
				v = "<rv>"
			}
		case "timeoutSeconds", "timeout":
			v = "<s>"
		case "continue":
			v = "<token>"
		case "labelSelector", "fieldSelector":
			v = "<selector>"
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, "&")
}

// The observations a scenario may mark varying (e2e.Observed): the time
// from the informer's start to its sync, and (after a request's kind and
// target) the media types and encodings of the server's 2xx answers.
const (
	StartToSynced          = "start to synced"
	AnswersContentType     = "Content-Type of 2xx answers"
	AnswersContentEncoding = "Content-Encoding of 2xx answers"
)

// Observations are what rec shows the informer (named informer in the
// spec) and its client did, in the comparable form of report.Observation;
// namespace is the informer's (it is replaced by "<ns>" in what they
// name). Per kind of request and target ("GET list
// /api/v1/namespaces/<ns>/pods"): the first request's query shape and
// Accept header and the Content-Type and Content-Encoding of the 2xx
// answers (these hold from run to run for the informer's initial request's
// kind and target; for the others, which a fault's timing brings or not,
// the query and the encoding are marked as varying,
// report.Observation.Varies, and the Accept and the Content-Type as
// occasional, report.Observation.Occasional), then, varying, every query shape,
// the statuses and how many. Then the watch error handler's errors, their
// stable part by class (report.ErrorTexts). Then, varying: the resource
// versions the informer reported (as their relation to the objects it
// saw), the delay after failed requests and the handler calls by type;
// start to synced.
func Observations(informer, namespace string, rec Record) []report.Observation {
	var out []report.Observation
	valued := func(what string, values []string, varies bool) {
		if len(values) > 0 {
			o := report.Value(what, strings.Join(values, report.ErrorTextSeparator)).Of(informer)
			if varies {
				o = o.Varying()
			}
			out = append(out, o)
		}
	}
	occasional := func(what string, values []string, other bool) {
		valued(what, values, false)
		if other && len(values) > 0 {
			out[len(out)-1] = out[len(out)-1].Occasionally()
		}
	}
	type group struct {
		first                               Request
		queries, types, encodings, statuses []string
		n                                   int
	}
	groups := map[string]*group{}
	initial := "" // the group of the informer's first request (its initial sync)
	for _, r := range append(slices.Clone(rec.Requests), rec.ConsistencyChecks...) {
		target := r.Kind() + " " + namespaced(r.Path, namespace)
		if r.Kind() != r.Method {
			target = r.Method + " " + target
		}
		if initial == "" && !r.Discovery() {
			initial = target
		}
		g := groups[target]
		if g == nil {
			g = &group{first: r}
			groups[target] = g
		}
		g.n++
		g.queries = addOnce(g.queries, orNone(r.Query))
		if r.ContentType != "" && r.Status >= 200 && r.Status < 300 {
			g.types = addOnce(g.types, MediaNames(r.ContentType))
		}
		if r.Status >= 200 && r.Status < 300 {
			g.encodings = addOnce(g.encodings, cmp.Or(r.ContentEncoding, "identity"))
		}
		g.statuses = addOnce(g.statuses, statusOf(r))
	}
	for _, t := range slices.Sorted(maps.Keys(groups)) {
		g := groups[t]
		// What the informer asks first, and the encoding of what the
		// server answers it, hold from run to run; the other requests
		// (a fallback, a relist) come or not with the faults' timing:
		// their query varies with it (the resourceVersion it resumes
		// from), and so does the size of an answer, which kube-apiserver
		// compresses past a size, but what the client asks for (Accept)
		// and the media type the server answers it in do not.
		other := t != initial
		valued(t+": first request's query", []string{orNone(g.first.Query)}, other)
		occasional(t+": first request's Accept", []string{orNone(MediaNames(g.first.Accept))}, other)
		occasional(t+": "+AnswersContentType, sorted(g.types), other)
		valued(t+": "+AnswersContentEncoding, sorted(g.encodings), other)
		valued(t+": queries", sorted(g.queries), true)
		valued(t+": statuses", sorted(g.statuses), true)
		out = append(out, report.Calls(t+": requests", g.n).Of(informer).Varying())
	}

	// The watch error handler's errors: their stable part, one
	// observation per class (report.StableErrorText, ErrorClass).
	errs := map[string][]string{}
	for _, e := range rec.WatchErrors {
		c := ErrorClass(e)
		errs[c] = addOnce(errs[c], report.StableErrorText(e.Err, namespace))
	}
	for _, c := range slices.Sorted(maps.Keys(errs)) {
		out = append(out, report.ErrorTexts("watch error handler: "+c, errs[c]).Of(informer))
	}

	for _, v := range rec.ReportedRVs {
		out = append(out, report.Value(v.Which+" resourceVersion when "+v.When, rvRelation(v, rec)).Of(informer).Varying())
	}
	if !rec.Started.IsZero() && !rec.Synced.IsZero() {
		o := report.Seconds(StartToSynced, rec.Synced.Sub(rec.Started)).Of(informer)
		if failedBefore(rec.Requests, rec.Synced) {
			// The sync waited on retries: their backoff's jitter
			// (wait.Backoff in the reflector) sets it, run to run.
			o = o.Varying()
		}
		out = append(out, o)
	}
	if d, ok := delayAfterFailure(rec.Requests); ok {
		out = append(out, report.Seconds("delay after a failed request (median)", d).Of(informer).Varying())
	}
	calls := map[string]int{}
	for _, e := range rec.Events {
		kind := e.Class()
		switch {
		case kind != string(e.Kind):
		case e.Resync():
			kind = "Update (resync)"
		case e.Kind == Add && e.InInitialList:
			kind = "Add (initial list)"
		}
		calls[kind]++
	}
	for _, k := range slices.Sorted(maps.Keys(calls)) {
		out = append(out, report.Calls("handler calls: "+k, calls[k]).Of(informer).Varying())
	}
	return out
}

// MediaNames shortens the media types of an Accept or Content-Type header
// to their names ("application/vnd.kubernetes.protobuf;stream=watch" ->
// "protobuf;stream=watch", "application/json" -> "JSON"), keeping the
// parameters and the order.
func MediaNames(header string) string {
	var out []string
	for _, part := range strings.Split(header, ",") {
		part = strings.TrimSpace(part)
		mt, params, err := mime.ParseMediaType(part)
		if err != nil {
			out = append(out, part)
			continue
		}
		name := mt
		switch mt {
		case "application/json":
			name = "JSON"
		case "application/vnd.kubernetes.protobuf":
			name = "protobuf"
		case "application/cbor":
			name = "CBOR"
		case "application/cbor-seq":
			name = "CBOR sequence"
		case "application/yaml":
			name = "YAML"
		}
		for _, k := range slices.Sorted(maps.Keys(params)) {
			name += ";" + k + "=" + params[k]
		}
		out = append(out, name)
	}
	return strings.Join(out, ", ")
}

func statusOf(r Request) string {
	switch {
	case r.Status == 0 && r.Err != "":
		return "no response"
	case r.Status == 0:
		return "open"
	case r.ErrorCode != 0:
		return fmt.Sprintf("%d, then ERROR event %d %s", r.Status, r.ErrorCode, r.ErrorReason)
	}
	return strconv.Itoa(r.Status)
}

// rvRelation says what a resource version the informer reported is, in
// terms that hold from run to run: empty, the initial-events-end
// bookmark's, the newest object's the handler saw by then, newer than all
// of them (a list's or a bookmark's), or older than one.
func rvRelation(v ReportedRV, rec Record) string {
	if v.RV == "" {
		return "empty"
	}
	for _, r := range rec.Requests {
		if r.InitialEventsEndRV == v.RV && !r.Start.After(v.Time) {
			return "the initial-events-end bookmark's"
		}
	}
	rv, err := strconv.ParseInt(v.RV, 10, 64)
	if err != nil {
		return "not a number"
	}
	var newest int64 = -1
	for _, e := range rec.Events {
		if e.Time.After(v.Time) {
			break
		}
		if n, err := strconv.ParseInt(e.ResourceVersion, 10, 64); err == nil && n > newest {
			newest = n
		}
	}
	switch {
	case newest < 0:
		return "set, no object seen"
	case rv == newest:
		return "the newest object's it saw"
	case rv > newest:
		return "newer than every object it saw"
	}
	return "older than an object it saw"
}

// failedBefore says whether a request that ended before t failed (no
// response, a status of 400 or more, an ERROR event, a body that broke off).
func failedBefore(rs []Request, t time.Time) bool {
	for _, r := range rs {
		if !r.End.IsZero() && r.End.Before(t) && (r.Status >= 400 || r.ErrorCode != 0 || r.Err != "") {
			return true
		}
	}
	return false
}

// delayAfterFailure is the median time from the end of a failed request
// (no response, a status of 400 or more, an ERROR event, a body that broke
// off) to the informer's next request: its retries' delays.
func delayAfterFailure(rs []Request) (time.Duration, bool) {
	var delays []time.Duration
	for i, r := range rs[:max(len(rs)-1, 0)] {
		failed := r.Status >= 400 || r.ErrorCode != 0 || (r.Err != "" && !r.End.IsZero())
		if !failed || r.End.IsZero() {
			continue
		}
		delays = append(delays, max(rs[i+1].Start.Sub(r.End), 0))
	}
	if len(delays) == 0 {
		return 0, false
	}
	slices.Sort(delays)
	return delays[len(delays)/2], true
}

// NormaliseError is report.NormaliseError.
//
// Deprecated: call report.NormaliseError, beside report.StableErrorText.
func NormaliseError(text, namespace string) string {
	return report.NormaliseError(text, namespace)
}

func namespaced(s, namespace string) string {
	if namespace == "" {
		return s
	}
	return strings.ReplaceAll(s, namespace, "<ns>")
}

func addOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
