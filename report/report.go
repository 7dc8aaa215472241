// Package report holds the suite's informer reports as data: what a run
// writes (SuiteSummary, in informer-report-<suite>.json next to Ginkgo's
// reports) and where (Files, ArtifactsRoot). It is plain Go with no test
// framework, so tools that read reports (hack/matrix, a downstream's own)
// import it instead of the Ginkgo harness (package e2e, which writes them).
package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/informer-conformance/informer-conformance/report/known"
)

// EnvArtifacts, when set, is the directory the suite writes its reports
// and artifacts to (default: ./_artifacts of the package under test).
const EnvArtifacts = "INFORMER_CONFORMANCE_ARTIFACTS"

// ArtifactsRoot is $INFORMER_CONFORMANCE_ARTIFACTS, or _artifacts in the
// working directory (made absolute). It is the one place that resolves the
// artifacts root: the harness (package e2e), the tools in hack/ and the
// e2e-framework local provider call it and hand the backends a directory
// under it. cluster/ reads no artifacts variable, but for
// cluster/local/localtest: the plain Go tests of packages that may not
// import report read EnvArtifacts there, with a default of their own.
func ArtifactsRoot() string {
	if a := os.Getenv(EnvArtifacts); a != "" {
		return a
	}
	abs, err := filepath.Abs("_artifacts")
	if err != nil {
		return "_artifacts"
	}
	return abs
}

// SafeName makes s usable as a file name: every run of characters other
// than letters, digits, '.', '_' and '-' becomes one '-'.
func SafeName(s string) string { return unsafeChars.ReplaceAllString(s, "-") }

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Files are a suite's report files in a directory (ArtifactsRoot for a
// run): informer-report-<suite>.json (SuiteSummary), .md (the summary and a
// table of every spec), .summary.md (the summary alone, for a CI job's
// summary) and .html (one self-contained page with a timeline per spec).
type Files struct {
	JSON, Markdown, Summary, HTML string
}

// All lists the files.
func (f Files) All() []string { return []string{f.JSON, f.Markdown, f.Summary, f.HTML} }

// FilesIn names suite's report files in dir.
func FilesIn(dir, suite string) Files {
	base := filepath.Join(dir, "informer-report-"+SafeName(suite))
	return Files{JSON: base + ".json", Markdown: base + ".md", Summary: base + ".summary.md", HTML: base + ".html"}
}

// Spec is the record of one spec in a run's informer report, the one thing
// the reports (markdown, HTML, JSON), the failure messages, compare, the
// verdicts and runcheck read. The front end fills what the test framework
// knows (name, labels, outcome, time, failure, why it skipped); the spec's
// Env fills what the harness measured (its sync mode and stack, the
// numbers per informer, the timeline, the time per phase, where its
// cluster came from, the observations, the rate limiter's holds) and the
// scenario's notes, in one report entry (SpecEntry) written when the spec
// ends; the report adds the verdict. A field of its own is one field here
// and a renderer where it is shown (CONTRIBUTING: "Adding a field to the
// report").
type Spec struct {
	Spec    string   `json:"spec"`
	Labels  []string `json:"labels,omitempty"`
	Outcome string   `json:"outcome"`
	Seconds float64  `json:"seconds"`
	// Skipped is why the spec skipped (the skip's message).
	Skipped string `json:"skipped,omitempty"`
	// SyncMode is the sync mode its informers ran in (e2e.SyncMode's
	// name: "list", "streaming list"); empty for client-go's default.
	SyncMode string `json:"syncMode,omitempty"`
	// Stack is the informer stack its informers were built on ("typed",
	// "dynamic", ...; probe.Stack).
	Stack string `json:"stack,omitempty"`
	// Detector says whether client-go's watch-list consistency detector
	// checked its streaming lists ("on", or "off" and why); empty when its
	// informers did not stream their lists.
	Detector string `json:"detector,omitempty"`
	// UpstreamLimitation is the client-go behaviour the spec documents
	// and cannot change, as the spec found it; empty for none.
	UpstreamLimitation string    `json:"upstreamLimitation,omitempty"`
	Informers          []Numbers `json:"informers,omitempty"`
	// Notes are the scenario's measured outcome in words, by name ("S7
	// outcome", ...): for the reader, never read back.
	Notes   map[string]string `json:"notes,omitempty"`
	Failure string            `json:"failure,omitempty"`
	// Timeline is what the spec's instruments saw, on one time axis.
	Timeline *Timeline `json:"timeline,omitempty"`
	// Time is where the spec's time went: seconds per phase
	// (package timing: the cluster's start, waits on the server, ...).
	Time map[string]float64 `json:"time,omitempty"`
	// ClusterFrom says where the spec's own cluster came from: "started"
	// when the spec asked, "spare ready" or "spare still starting" when it
	// was started ahead, while the spec before ran (cluster/pool.Spares);
	// empty for a shared cluster.
	ClusterFrom string `json:"clusterFrom,omitempty"`
	// Observations are what the spec saw its informers and their clients
	// do, in a form two runs compare (hack/matrix compare).
	Observations []Observation `json:"observations,omitempty"`
	// RateLimiter is what client-go's client-side rate limiter held the
	// informers' requests (nil: not observed).
	RateLimiter *LimiterWaits `json:"rateLimiter,omitempty"`
	// Verdict says what a failed spec's failure is: known behaviour of the
	// client-go under test (with the upstream change) or unexplained
	// (Classify).
	Verdict *known.Verdict `json:"verdict,omitempty"`
}

// SpecEntry names the one Ginkgo report entry in which the harness records
// what the spec's Env filled of its Spec, when the spec ends. The informer
// report and runcheck read it with DecodeSpec, never by parsing other
// entries.
const SpecEntry = "informer-conformance"

// LimiterWaits is what client-go's client-side rate limiter did to a
// spec's informer clients: the requests it saw, those it held 50 ms or
// more (client-go logs those as client-side throttling), the longest hold
// and all holds together.
type LimiterWaits struct {
	Requests       int     `json:"requests"`
	Waited         int     `json:"waited"`
	LongestSeconds float64 `json:"longestSeconds"`
	TotalSeconds   float64 `json:"totalSeconds"`
	// NotObserved says why the waits could not be recorded (another
	// registrant of client-go's metrics hooks took them first).
	NotObserved string `json:"notObserved,omitempty"`
}

// Significant says whether the limiter held requests long enough to be a
// cause of a failure worth naming: a second or more in all.
func (w *LimiterWaits) Significant() bool {
	return w != nil && w.NotObserved == "" && w.TotalSeconds >= 1
}

// String is the waits in words.
func (w LimiterWaits) String() string {
	if w.NotObserved != "" {
		return "not observed: " + w.NotObserved
	}
	return fmt.Sprintf("%d of %d requests held 50 ms or more, %.1f s in all, the longest %.1f s", w.Waited, w.Requests, w.TotalSeconds, w.LongestSeconds)
}

// String is the spec's numbers, an informer a line, for the console (the
// timeline is drawn by the HTML report).
func (s Spec) String() string {
	var lines []string
	for _, n := range s.Informers {
		lines = append(lines, "informer "+n.Informer+": "+n.String())
	}
	return strings.Join(lines, "\n")
}

// DecodeSpec reads a SpecEntry's value: raw, in the process that recorded
// it, or from its JSON (Ginkgo hands other processes' entries over as JSON
// only); ok is false when it is neither.
func DecodeSpec(raw any, asJSON string) (s Spec, ok bool) {
	if s, ok := raw.(Spec); ok {
		return s, true
	}
	if err := json.Unmarshal([]byte(asJSON), &s); err != nil {
		return Spec{}, false
	}
	return s, true
}

// Merge adds to s what the harness recorded of it (from, its SpecEntry):
// every field from has and s has not; informers, observations, notes and
// the time per phase are added to s's.
func (s *Spec) Merge(from Spec) {
	fill := func(dst *string, src string) {
		if *dst == "" {
			*dst = src
		}
	}
	fill(&s.SyncMode, from.SyncMode)
	fill(&s.Stack, from.Stack)
	fill(&s.Detector, from.Detector)
	fill(&s.UpstreamLimitation, from.UpstreamLimitation)
	fill(&s.ClusterFrom, from.ClusterFrom)
	s.Informers = append(s.Informers, from.Informers...)
	s.Observations = append(s.Observations, from.Observations...)
	if from.RateLimiter != nil {
		s.RateLimiter = from.RateLimiter
	}
	if from.Timeline != nil {
		s.Timeline = from.Timeline
	}
	for name, secs := range from.Time {
		if s.Time == nil {
			s.Time = map[string]float64{}
		}
		s.Time[name] += secs
	}
	for name, note := range from.Notes {
		if s.Notes == nil {
			s.Notes = map[string]string{}
		}
		s.Notes[name] = note
	}
}

// SuiteSummary is a suite's informer report: the versions it ran with and
// its specs.
type SuiteSummary struct {
	Suite    string `json:"suite"`
	ClientGo string `json:"clientGo,omitempty"`
	// ClientGoReplacement names what replaced k8s.io/client-go in the go.mod
	// of the module under test (a fork and its version, or a local
	// directory); empty when it is not replaced (or ClientGoUnknown says it
	// could not be told).
	ClientGoReplacement string `json:"clientGoReplacement,omitempty"`
	// ClientGoUnknown says what of ClientGo and ClientGoReplacement the run
	// could not know, and why (a replaced client-go whose module the
	// binary could not find); empty when both are known. The checks that
	// depend on an unknown version say so in their specs' notes and skip
	// reasons.
	ClientGoUnknown string `json:"clientGoUnknown,omitempty"`
	// ClientGoGates is every feature gate of that client-go with the value
	// the run had (a spec's own overrides, such as its sync mode, are in its
	// notes).
	ClientGoGates map[string]Gate `json:"clientGoGates,omitempty"`
	KubeAPIServer string          `json:"kubeAPIServer,omitempty"`
	// Etcd is the etcd version, when the backend knew it.
	Etcd string `json:"etcd,omitempty"`
	// WatchListConsistencyDetector says whether client-go's watch-list
	// consistency detector was on in the run (probe.DetectorState); each
	// streaming-list spec's notes say it too (DetectorNote).
	WatchListConsistencyDetector string `json:"watchListConsistencyDetector,omitempty"`
	// ClientSettings are the client settings the informers ran with: what
	// the downstream's hooks (e2e.Hooks) put in force, or the suite's own.
	ClientSettings *ClientSettings `json:"clientSettings,omitempty"`
	Specs          []Spec          `json:"specs"`
}

// Counts spells a count per key, sorted by key ("410 Gone: 1, clean
// close: 2"), or "none".
func Counts[K ~string](m map[K]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// Cause is why an informer re-initialised: what ended the request before
// its LIST or streaming list (the probe's classifier names them, package
// probe, whose Cause is this type).
type Cause string

// Numbers is what a spec reports about one informer.
type Numbers struct {
	Informer          string         `json:"informer"`
	Reinitialisations map[Cause]int  `json:"reinitialisations"`
	ReinitDetails     []string       `json:"reinitDetails,omitempty"`
	Dials             int            `json:"dials"`
	Requests          map[string]int `json:"requests"`
	Events            map[string]int `json:"events"`
	RecoverySeconds   float64        `json:"recoverySeconds,omitempty"`
	// Inconsistencies are the watch-list consistency detector's reports.
	Inconsistencies []string `json:"inconsistencies,omitempty"`
}

// String renders numbers on one line for the console.
func (n Numbers) String() string {
	return fmt.Sprintf("reinitialisations %v, dials %d, requests %v, events %v, recovery %.2fs", n.Reinitialisations, n.Dials, n.Requests, n.Events, n.RecoverySeconds)
}

// Gate is one client-go feature gate as a run saw it.
type Gate struct {
	Enabled bool `json:"enabled"`
	Default bool `json:"default"`
}

// Timeline is what happened in one spec, in milliseconds since Origin (the
// moment its first instrument started): the faults in force (faultlog, as
// the backends, the fault proxy and the HTTP fault injectors record them),
// each informer's requests, dials, handler events, re-initialisations and
// convergence, and the bounds the spec asserted.
type Timeline struct {
	Origin    time.Time          `json:"origin"`
	EndMs     float64            `json:"endMs"`
	Faults    []TimelineFault    `json:"faults,omitempty"`
	Informers []InformerTimeline `json:"informers,omitempty"`
	Bounds    []Bound            `json:"bounds,omitempty"`
}

// TimelineFault is a fault window; EndMs < 0: still in force at the end.
type TimelineFault struct {
	Kind    string  `json:"kind"`
	Detail  string  `json:"detail,omitempty"`
	StartMs float64 `json:"startMs"`
	EndMs   float64 `json:"endMs"`
}

// InformerTimeline is one informer's record on the spec's time axis.
type InformerTimeline struct {
	Informer string            `json:"informer"`
	SyncedMs *float64          `json:"syncedMs,omitempty"`
	Requests []TimelineRequest `json:"requests,omitempty"`
	DialsMs  []float64         `json:"dialsMs,omitempty"`
	// DialErrors counts the dials that failed.
	DialErrors int               `json:"dialErrors,omitempty"`
	Events     []TimelineEvent   `json:"events,omitempty"`
	Reinits    []TimelineReinit  `json:"reinits,omitempty"`
	Converged  []float64         `json:"convergedMs,omitempty"`
	Checks     []TimelineRequest `json:"consistencyChecks,omitempty"`
}

// TimelineRequest is one request from start to end (EndMs < 0: open at the
// end), its kind (list, watch, streaming list, discovery), its status and
// how it ended.
type TimelineRequest struct {
	ID      int     `json:"id"`
	Kind    string  `json:"kind"`
	StartMs float64 `json:"startMs"`
	EndMs   float64 `json:"endMs"`
	Status  int     `json:"status,omitempty"`
	Ended   string  `json:"ended,omitempty"`
	Events  int     `json:"events,omitempty"`
}

// What a TimelineRequest's Kind and Ended say, where the timeline draws
// them apart (the probe's Request.Kind and Request.Ended use them).
const (
	// KindConsistencyCheck is the consistency detector's LIST.
	KindConsistencyCheck = "consistency check"
	// EndedByServer is a stream the server closed cleanly (EOF): no
	// failure.
	EndedByServer = "closed by the server"
)

// TimelineEvent is a handler call: Add, Update, Delete, "Delete
// (tombstone)", "Update (UID changed)".
type TimelineEvent struct {
	AtMs float64 `json:"atMs"`
	Kind string  `json:"kind"`
}

// TimelineReinit is a re-initialisation (probe.Reinitialisations) at its
// request's start.
type TimelineReinit struct {
	AtMs    float64 `json:"atMs"`
	Request int     `json:"request"`
	Cause   string  `json:"cause"`
}

// Bound is a bound a spec asserted: What happened At, FromMs being when the
// clock started, within BoundSeconds (Within) or not.
type Bound struct {
	What         string  `json:"what"`
	FromMs       float64 `json:"fromMs"`
	AtMs         float64 `json:"atMs"`
	BoundSeconds float64 `json:"boundSeconds"`
	Within       bool    `json:"within"`
	// Failed says why the wait ended before its bound without what it
	// waited for (the requests failed, an error): the bound was not missed,
	// the spec failed for another reason.
	Failed string `json:"failed,omitempty"`
}

// Verdict is the bound's state as the reports print it: "within",
// "MISSED", or "failed: <why>" (Failed) when the wait ended early without
// what it waited for.
func (b Bound) Verdict() string {
	switch {
	case b.Within:
		return "within"
	case b.Failed != "":
		return "failed: " + b.Failed
	}
	return "MISSED"
}

// Seconds is how long it took.
func (b Bound) Seconds() float64 { return (b.AtMs - b.FromMs) / 1000 }

// Observation is what a spec saw its informers and their clients do, in a
// form two runs of the spec compare: the request shapes the informer sent
// and the encodings the server answered in, the errors its watch error
// handler got, the resource versions it reported, its time to sync, its
// handler calls. It is either a Value (two runs differ when their values
// do) or a Number (two runs differ beyond its Class's noise rule: hack/matrix
// compare), never both. Make one with Value, Calls, Seconds or MiB, where it
// is recorded: the constructor declares its noise class.
type Observation struct {
	// Informer is the informer's name in the spec (the probe's); empty for
	// what the spec itself observed.
	Informer string `json:"informer,omitempty"`
	// What is what was observed, as a sentence names it ("list Accept",
	// "start to synced").
	What   string   `json:"what"`
	Value  string   `json:"value,omitempty"`
	Number *float64 `json:"number,omitempty"`
	// Unit is the Number's, for the reader: UnitSeconds, UnitCalls, UnitMiB.
	Unit string `json:"unit,omitempty"`
	// Class is its noise class (NoiseClass reads it).
	Class Class `json:"class,omitempty"`
	// Varies: the observation may differ between two runs of the same
	// code beyond its class's noise (the statuses and errors seen under a
	// fault, handler and request counts, resource versions at a moment):
	// compare lists its changes only between series (several runs a side).
	Varies bool `json:"varies,omitempty"`
	// Occasional: whether it is observed at all is a fault's timing (what
	// the client asked of a request that a fault brings or not: a relist's
	// watch, a consistency check), what it is is not. compare counts its
	// coming or not as noise with one run a side and lists a change of its
	// value whenever both sides saw it, as an ErrorText's texts. Varies
	// overrides it.
	Occasional bool `json:"occasional,omitempty"`
}

// Class is an observation's noise class: how far apart two runs of the
// same code may put it, declared where it is recorded (the constructor),
// read by compare's noise rules.
type Class string

// The noise classes.
const (
	// Exact is a value that two runs of the same code agree on (a request's
	// Accept, the transform calls per object).
	Exact Class = "exact"
	// Count is a number of calls, events or requests: two runs differ when
	// their counts are more than one call and half of BASE's apart.
	Count Class = "count"
	// Duration is a time in seconds: two runs differ beyond compare's
	// recovery noise (-noise).
	Duration Class = "duration"
	// Memory is a size in MiB (2^20 bytes): two runs differ when more than
	// 4 MiB and half of BASE's apart.
	Memory Class = "memory"
	// ErrorText is the stable part of the errors of one class (an API
	// status reason, a kind of transport error) that a fault brought: their
	// texts with what varies from run to run masked (ErrorTexts). Whether a
	// class appears at all depends on the fault's timing; when it appears
	// on both sides, texts that share nothing are a change, even with one
	// run a side.
	ErrorText Class = "error text"
)

// ErrorTextSeparator joins an ErrorText observation's texts in its Value,
// and the several values of a Value the probe saw (Fleet splits both on it).
const ErrorTextSeparator = " | "

// ErrorTexts is an observation of the stable texts of one class of errors
// (ErrorText), each text once, sorted.
func ErrorTexts(what string, texts []string) Observation {
	texts = slices.Clone(texts)
	slices.Sort(texts)
	return Observation{What: what, Value: strings.Join(slices.Compact(texts), ErrorTextSeparator), Class: ErrorText}
}

// Texts are the texts of an ErrorText observation's Value.
func (o Observation) Texts() []string {
	if o.Value == "" {
		return nil
	}
	return strings.Split(o.Value, ErrorTextSeparator)
}

// Units of an Observation's Number, one per numeric class.
const (
	UnitSeconds = "s"
	UnitCalls   = "calls"
	// UnitMiB is memory in MiB (2^20 bytes): S34's heap.
	UnitMiB = "MiB"
)

// Value is an observation of a value (Exact).
func Value(what, value string) Observation {
	return Observation{What: what, Value: value, Class: Exact}
}

// Calls is an observation of a number of calls, events or requests (Count).
func Calls(what string, n int) Observation { return number(what, float64(n), UnitCalls, Count) }

// Seconds is an observation of a time (Duration).
func Seconds(what string, d time.Duration) Observation {
	return number(what, d.Seconds(), UnitSeconds, Duration)
}

// MiB is an observation of a size in MiB (Memory).
func MiB(what string, mib float64) Observation { return number(what, mib, UnitMiB, Memory) }

func number(what string, n float64, unit string, c Class) Observation {
	return Observation{What: what, Number: &n, Unit: unit, Class: c}
}

// Of is o as an observation of the informer named informer.
func (o Observation) Of(informer string) Observation {
	o.Informer = informer
	return o
}

// Varying is o marked as varying between runs of the same code beyond its
// class's noise (Varies).
func (o Observation) Varying() Observation {
	o.Varies = true
	return o
}

// Occasionally is o marked as observed or not with a fault's timing, its
// value not (Occasional).
func (o Observation) Occasionally() Observation {
	o.Occasional = true
	return o
}

// NoiseClass is o's class; for an observation of a report written before
// observations had one, the class its unit implies.
func (o Observation) NoiseClass() Class {
	if o.Class != "" {
		return o.Class
	}
	switch {
	case o.Number == nil:
		return Exact
	case o.Unit == UnitCalls:
		return Count
	case o.Unit == UnitMiB:
		return Memory
	}
	return Duration
}

// Key names the observation within its spec: its informer and what.
func (o Observation) Key() string {
	if o.Informer == "" {
		return o.What
	}
	return "informer " + o.Informer + ": " + o.What
}

// ClientSettings are the settings of the informers' clients that a
// downstream's hooks can change (e2e.Hooks: its rest.Config hook, its
// factory options, its informer source), as they were in force.
type ClientSettings struct {
	// Hooked says the downstream set hooks; the rest is what its Config
	// hook returned for an informer's config (the suite's own when not).
	Hooked bool `json:"hooked"`
	// QPS and Burst as set; client-go's defaults (5, 10) apply to 0
	// (rest.RESTClientFor), a negative QPS means no limiter.
	QPS   float32 `json:"qps"`
	Burst int     `json:"burst"`
	// RateLimiter says a limiter of the hook's own replaces client-go's.
	RateLimiter        bool    `json:"rateLimiter,omitempty"`
	UserAgent          string  `json:"userAgent,omitempty"`
	ContentType        string  `json:"contentType,omitempty"`
	AcceptContentTypes string  `json:"acceptContentTypes,omitempty"`
	TimeoutSeconds     float64 `json:"timeoutSeconds,omitempty"`
	// WrapsTransport and Dial say the hook wraps the transport or dials
	// itself.
	WrapsTransport bool `json:"wrapsTransport,omitempty"`
	Dial           bool `json:"dial,omitempty"`
	// FactoryOptions counts the informer factory options the hooks add (a
	// transform, a resync, list tweaks: client-go's options cannot be told
	// apart from outside).
	FactoryOptions int `json:"factoryOptions,omitempty"`
	// Informers names the downstream's informer source, if any.
	Informers string `json:"informers,omitempty"`
}

// Limiter is the client-side rate limiter in words.
func (c ClientSettings) Limiter() string {
	switch {
	case c.RateLimiter:
		return "a rate limiter of the hook's own"
	case c.QPS < 0:
		return "no client-side rate limiter (QPS < 0)"
	case c.QPS == 0 && c.Burst == 0:
		return "QPS 5, burst 10 (client-go's defaults: QPS and Burst left 0)"
	}
	qps, burst := fmt.Sprintf("%g", c.QPS), fmt.Sprint(c.Burst)
	if c.QPS == 0 {
		qps = "5 (client-go's default)"
	}
	if c.Burst == 0 {
		burst = "10 (client-go's default)"
	}
	return "QPS " + qps + ", burst " + burst
}

// Line is the settings in one line for the report's header.
func (c ClientSettings) Line() string {
	who := "the suite's own, where a spec sets none"
	if c.Hooked {
		who = "set by the downstream's hooks"
	}
	parts := []string{c.Limiter()}
	if c.UserAgent != "" {
		parts = append(parts, "user agent "+c.UserAgent)
	}
	if c.ContentType != "" {
		parts = append(parts, "content type "+c.ContentType)
	}
	if c.AcceptContentTypes != "" {
		parts = append(parts, "accepts "+c.AcceptContentTypes)
	}
	if c.TimeoutSeconds > 0 {
		parts = append(parts, fmt.Sprintf("request timeout %g s", c.TimeoutSeconds))
	}
	if c.WrapsTransport {
		parts = append(parts, "a transport wrapper")
	}
	if c.Dial {
		parts = append(parts, "a dialer of its own")
	}
	if c.FactoryOptions > 0 {
		parts = append(parts, fmt.Sprintf("%d informer factory option(s) (a transform, a resync, list tweaks)", c.FactoryOptions))
	}
	if c.Informers != "" {
		parts = append(parts, "informers built by "+c.Informers)
	}
	return "client settings (" + who + "): " + strings.Join(parts, "; ")
}
