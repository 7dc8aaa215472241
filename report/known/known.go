// Package known is what the suite's verdict run learned about client-go,
// shipped with the module as data (known.json, embedded) and read at run
// time: which failing specs are a known behaviour of a client-go release
// (a documented change, a known regression: the upstream change and the
// release that changed or fixed it) and which failures the verdict run
// traced to this suite itself (fixed by a commit since).
//
// Every failing spec of a report is then one of two things: Known for the
// client-go under test (Verdict.Known, with its entries), or Unexplained
// (everything else, with why: no entry applies, no verdict data for that
// client-go, a negative control, an unknown version). The report, its JUnit
// messages, `hack/matrix compare` and the reusable workflow's gate read
// Explain; the verdict run (`make verdicts`, hack/matrix) writes the
// entries' Seen columns and the run they come from, and renders
// docs/clientgo-releases.md from the same entries.
package known

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"golang.org/x/mod/semver"
)

// File is the data's path in the module, for the tools that rewrite it.
const File = "report/known/known.json"

//go:embed known.json
var embedded []byte

// Data is the verdict data: the run it comes from and its entries.
type Data struct {
	// Run is the verdict run the entries' Seen columns come from.
	Run Run `json:"run"`
	// Entries explain failing specs, in the order the verdict page lists
	// them.
	Entries []Entry `json:"entries"`
	// Changes are upstream changes that change what the informers do
	// without failing a spec (an encoding, a request's shape, a metric),
	// each said once; Observations tie the observation changes a
	// comparison lists (hack/matrix compare) to them.
	Changes      []UpstreamChange  `json:"changes,omitempty"`
	Observations []ObservationRule `json:"observations,omitempty"`
	// Noise are observations the suite recorded as comparable that vary
	// between runs of the same code, found by a verdict run and marked
	// varying at their source since (FixedBySuite): in a comparison of
	// columns run before the fix, a change of one is run-to-run noise.
	Noise []NoiseRule `json:"noise,omitempty"`
	// patterns are the Observations' patterns, compiled once by Parse
	// (Check compiles them to check them).
	patterns map[string]*regexp.Regexp
}

// The components a change can come with.
const (
	ComponentClientGo      = "client-go"
	ComponentKubeAPIServer = "kube-apiserver"
	ComponentEtcd          = "etcd"
)

// UpstreamChange is a change a release of a component made to what an
// informer sees or does.
type UpstreamChange struct {
	// ID names it for the rules that point at it.
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Component is client-go (empty), kube-apiserver or etcd; AddedIn the
	// release of it that brought the change.
	Component string   `json:"component,omitempty"`
	AddedIn   string   `json:"addedIn"`
	Upstream  string   `json:"upstream"`
	Links     []string `json:"links,omitempty"`
}

// ComponentOf is the change's component, client-go when empty.
func (c UpstreamChange) ComponentOf() string {
	if c.Component == "" {
		return ComponentClientGo
	}
	return c.Component
}

// Brought says whether a step of the change's component from version
// from to version to brings the change (from before AddedIn, to at it or
// after).
func (c UpstreamChange) Brought(from, to string) bool {
	return semver.Compare(canonical(from), c.AddedIn) < 0 && semver.Compare(canonical(to), c.AddedIn) >= 0
}

// ObservationRule ties an observation change (its sentence, as hack/matrix
// compare writes it) to an upstream change: the sentence contains Contains
// and matches Pattern (each when set).
type ObservationRule struct {
	Change   string `json:"change"`
	Contains string `json:"contains,omitempty"`
	Pattern  string `json:"pattern,omitempty"`
}

// NoiseRule names an observation change (its sentence, as ObservationRule
// matches one) that is noise in runs of the suite before FixedBySuite.
type NoiseRule struct {
	// Why says what varies between runs and why.
	Why string `json:"why"`
	// FixedBySuite is the commit of this repository that marks the
	// observation varying where it is recorded.
	FixedBySuite string `json:"fixedBySuite"`
	Contains     string `json:"contains,omitempty"`
	Pattern      string `json:"pattern,omitempty"`
}

// NoiseOf is the noise rule that matches an observation change's
// sentence, if one does.
func (d Data) NoiseOf(sentence string) (NoiseRule, bool) {
	for _, r := range d.Noise {
		if strings.Contains(sentence, r.Contains) && (r.Pattern == "" || d.pattern(r.Pattern).MatchString(sentence)) {
			return r, true
		}
	}
	return NoiseRule{}, false
}

// ExplainObservation is the upstream changes of component that explain an
// observation change's sentence between its versions from and to.
func (d Data) ExplainObservation(sentence, component, from, to string) []UpstreamChange {
	var out []UpstreamChange
	for _, r := range d.Observations {
		c, ok := d.change(r.Change)
		if !ok || c.ComponentOf() != component || !c.Brought(from, to) || !strings.Contains(sentence, r.Contains) {
			continue
		}
		if r.Pattern != "" && !d.pattern(r.Pattern).MatchString(sentence) {
			continue
		}
		if !slices.ContainsFunc(out, func(o UpstreamChange) bool { return o.ID == c.ID }) {
			out = append(out, c)
		}
	}
	return out
}

// pattern is an observation rule's pattern compiled: Parse's, or (data
// built in code) compiled now; Check refused a pattern that does not
// compile.
func (d Data) pattern(p string) *regexp.Regexp {
	if re, ok := d.patterns[p]; ok {
		return re
	}
	return regexp.MustCompile(p)
}

// change is the change of that ID.
func (d Data) change(id string) (UpstreamChange, bool) {
	for _, c := range d.Changes {
		if c.ID == id {
			return c, true
		}
	}
	return UpstreamChange{}, false
}

// Run names a verdict run.
type Run struct {
	// Commit is the suite's commit the run's columns ran at.
	Commit string `json:"commit"`
	// KubeAPIServer is the server version the columns ran against.
	KubeAPIServer string `json:"kubeAPIServer"`
	// ClientGo are the client-go versions it ran, oldest first: a version
	// outside their range has no verdict data (its failures are
	// unexplained, never explained by an older release's entries).
	ClientGo []string `json:"clientGo"`
	// Labels is the label filter of the run's columns.
	Labels string `json:"labels"`
	// Page is the verdict page rendered from the run.
	Page string `json:"page"`
}

// The kinds of entry.
const (
	// KindChange is a change client-go made on purpose (a release note, a
	// PR, a KEP).
	KindChange = "documented change"
	// KindRegression is a known upstream bug, with the release that fixed
	// it.
	KindRegression = "regression"
	// KindSuiteDefect is a failure the verdict run traced to this suite,
	// fixed by a commit of this repository since (FixedBySuite): it
	// explains only the verdict run's own columns, never a run of the
	// suite after the fix.
	KindSuiteDefect = "suite defect, fixed since the run"
)

// Entry explains a spec failing on some client-go releases.
type Entry struct {
	// Spec is a substring of the spec's full text (Ginkgo's containers and
	// leaf, space separated, as the informer report names specs).
	Spec string `json:"spec"`
	// Also are more such substrings, for an entry that the specs of
	// several scenarios show (a server's behaviour): the entry explains a
	// spec that holds Spec or any of them.
	Also []string `json:"also,omitempty"`
	// Kind is KindChange, KindRegression or KindSuiteDefect.
	Kind string `json:"kind"`
	// Upstream names the PR, issue or release note; Links are their
	// addresses.
	Upstream string   `json:"upstream"`
	Links    []string `json:"links,omitempty"`
	// Why is what the spec sees, and why that client-go does it (file and
	// function).
	Why string `json:"why"`
	// ChangedIn are the client-go changes that end the behaviour: the entry
	// applies to a client-go that has none of them. A change is present
	// from its release on, unless one of its gates is switched off.
	ChangedIn []Change `json:"changedIn,omitempty"`
	// KubeAPIServer, when set, limits the entry to those servers.
	KubeAPIServer *Range `json:"kubeAPIServer,omitempty"`
	// FixedBySuite is the commit of this repository that fixed a suite
	// defect (KindSuiteDefect).
	FixedBySuite string `json:"fixedBySuite,omitempty"`
	// Seen are the verdict run's columns on which the entry explained a
	// failure ("v0.33.13 default", "v0.35.10 InOrderInformers=false"),
	// written by the verdict run.
	Seen []string `json:"seen,omitempty"`
}

// Change is a client-go release that changed a behaviour, behind its
// feature gates (the change is absent when any of them is off).
type Change struct {
	ClientGo string   `json:"clientGo"`
	Gates    []string `json:"gates,omitempty"`
}

// Range is a range of versions: From (inclusive) to Before (exclusive),
// either open.
type Range struct {
	From   string `json:"from,omitempty"`
	Before string `json:"before,omitempty"`
}

// Contains says whether v lies in r.
func (r Range) Contains(v string) bool {
	v = canonical(v)
	return (r.From == "" || semver.Compare(v, r.From) >= 0) && (r.Before == "" || semver.Compare(v, r.Before) < 0)
}

// String is the range in words.
func (r Range) String() string {
	switch {
	case r.From != "" && r.Before != "":
		return r.From + " up to " + r.Before
	case r.From != "":
		return r.From + " and later"
	case r.Before != "":
		return "before " + r.Before
	}
	return "any"
}

var (
	loadOnce sync.Once
	loaded   Data
	loadErr  error
)

// Load is the embedded data, checked (Check).
func Load() (Data, error) {
	loadOnce.Do(func() {
		loaded, loadErr = Parse(embedded)
	})
	return loaded, loadErr
}

// Parse reads and checks verdict data.
func Parse(b []byte) (Data, error) {
	var d Data
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return Data{}, fmt.Errorf("%s: %w", File, err)
	}
	if err := d.Check(); err != nil {
		return Data{}, fmt.Errorf("%s: %w", File, err)
	}
	d.patterns = map[string]*regexp.Regexp{}
	for _, r := range d.Observations {
		if r.Pattern != "" {
			d.patterns[r.Pattern] = regexp.MustCompile(r.Pattern) // Check compiled it
		}
	}
	for _, r := range d.Noise {
		if r.Pattern != "" {
			d.patterns[r.Pattern] = regexp.MustCompile(r.Pattern)
		}
	}
	return d, nil
}

// Check says what is wrong with the data: a version that is not one, a
// kind it does not know, an entry without its explanation, a suite defect
// without its fixing commit, a change outside the run's client-go range.
func (d Data) Check() error {
	var errs []string
	if len(d.Run.ClientGo) == 0 {
		errs = append(errs, "run.clientGo: empty (the client-go versions the verdict run covered)")
	}
	for _, v := range d.Run.ClientGo {
		if !isVersion(v) {
			errs = append(errs, fmt.Sprintf("run.clientGo: %q is not a client-go version (vX.Y.Z)", v))
		}
	}
	if !slices.IsSortedFunc(d.Run.ClientGo, semver.Compare) {
		errs = append(errs, "run.clientGo: not oldest first")
	}
	if d.Run.KubeAPIServer != "" && !isVersion(d.Run.KubeAPIServer) {
		errs = append(errs, fmt.Sprintf("run.kubeAPIServer: %q is not a version", d.Run.KubeAPIServer))
	}
	seen := map[string]bool{}
	for i, e := range d.Entries {
		name := fmt.Sprintf("entries[%d] (%.40s)", i, e.Spec)
		if e.Spec == "" || e.Upstream == "" || e.Why == "" || slices.Contains(e.Also, "") {
			errs = append(errs, name+": spec, upstream and why are required (and no empty also)")
		}
		key := e.Spec + "\x00" + e.Upstream
		if seen[key] {
			errs = append(errs, name+": the same spec and upstream twice")
		}
		seen[key] = true
		switch e.Kind {
		case KindChange, KindRegression:
			if len(e.ChangedIn) == 0 && e.KubeAPIServer == nil {
				errs = append(errs, name+": a client-go change or regression names the release that changed or fixed it (changedIn), a server's the kube-apiserver versions it holds on (kubeAPIServer)")
			}
			if e.FixedBySuite != "" {
				errs = append(errs, name+": fixedBySuite is a suite defect's")
			}
		case KindSuiteDefect:
			if e.FixedBySuite == "" {
				errs = append(errs, name+": a suite defect names the commit that fixed it (fixedBySuite)")
			}
		default:
			errs = append(errs, fmt.Sprintf("%s: kind %q (want %q, %q or %q)", name, e.Kind, KindChange, KindRegression, KindSuiteDefect))
		}
		for _, c := range e.ChangedIn {
			if !isVersion(c.ClientGo) {
				errs = append(errs, fmt.Sprintf("%s: changedIn %q is not a client-go version (vX.Y.Z)", name, c.ClientGo))
			} else if len(d.Run.ClientGo) > 0 && !d.covers(c.ClientGo) {
				errs = append(errs, fmt.Sprintf("%s: changedIn %s lies outside the run's client-go %s-%s: the run could not have seen it", name, c.ClientGo, d.Run.ClientGo[0], d.Run.ClientGo[len(d.Run.ClientGo)-1]))
			}
		}
		if r := e.KubeAPIServer; r != nil {
			for _, v := range []string{r.From, r.Before} {
				if v != "" && !isVersion(v) {
					errs = append(errs, fmt.Sprintf("%s: kubeAPIServer %q is not a version", name, v))
				}
			}
		}
		for _, l := range e.Links {
			if !strings.HasPrefix(l, "https://") {
				errs = append(errs, fmt.Sprintf("%s: link %q is no https address", name, l))
			}
		}
	}
	ids := map[string]bool{}
	for i, c := range d.Changes {
		name := fmt.Sprintf("changes[%d] (%s)", i, c.ID)
		if c.ID == "" || c.Upstream == "" || ids[c.ID] {
			errs = append(errs, name+": an id of its own and upstream are required")
		}
		ids[c.ID] = true
		if c.Kind != KindChange && c.Kind != KindRegression {
			errs = append(errs, fmt.Sprintf("%s: kind %q (want %q or %q)", name, c.Kind, KindChange, KindRegression))
		}
		switch c.ComponentOf() {
		case ComponentClientGo:
			if !isVersion(c.AddedIn) {
				errs = append(errs, fmt.Sprintf("%s: addedIn %q is not a client-go version (vX.Y.Z)", name, c.AddedIn))
			} else if len(d.Run.ClientGo) > 0 && !d.covers(c.AddedIn) {
				errs = append(errs, fmt.Sprintf("%s: addedIn %s lies outside the run's client-go", name, c.AddedIn))
			}
		case ComponentKubeAPIServer, ComponentEtcd:
			if !isVersion(c.AddedIn) {
				errs = append(errs, fmt.Sprintf("%s: addedIn %q is not a version", name, c.AddedIn))
			}
		default:
			errs = append(errs, fmt.Sprintf("%s: component %q (want client-go, kube-apiserver or etcd)", name, c.Component))
		}
	}
	for i, r := range d.Observations {
		name := fmt.Sprintf("observations[%d]", i)
		if !ids[r.Change] {
			errs = append(errs, fmt.Sprintf("%s: change %q is none of changes", name, r.Change))
		}
		if r.Contains == "" && r.Pattern == "" {
			errs = append(errs, name+": contains or pattern is required")
		}
		if _, err := regexp.Compile(r.Pattern); err != nil {
			errs = append(errs, fmt.Sprintf("%s: pattern: %v", name, err))
		}
	}
	for i, r := range d.Noise {
		name := fmt.Sprintf("noise[%d]", i)
		if r.Why == "" || r.FixedBySuite == "" {
			errs = append(errs, name+": why and fixedBySuite (the commit that marks it varying) are required")
		}
		if r.Contains == "" && r.Pattern == "" {
			errs = append(errs, name+": contains or pattern is required")
		}
		if _, err := regexp.Compile(r.Pattern); err != nil {
			errs = append(errs, fmt.Sprintf("%s: pattern: %v", name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// isVersion says whether v is a full semantic version (v0.33.0,
// v0.38.0-alpha.2).
func isVersion(v string) bool {
	return semver.IsValid(v) && semver.Canonical(v) == strings.SplitN(v, "+", 2)[0]
}

// canonical is v with a "v" in front.
func canonical(v string) string {
	if v != "" && !strings.HasPrefix(v, "v") {
		return "v" + v
	}
	return v
}

// covers says whether client-go version v lies within the run's versions.
func (d Data) covers(v string) bool {
	if len(d.Run.ClientGo) == 0 {
		return false
	}
	v = canonical(v)
	return semver.Compare(v, d.Run.ClientGo[0]) >= 0 && semver.Compare(v, d.Run.ClientGo[len(d.Run.ClientGo)-1]) <= 0
}

// Applies says whether the entry explains its spec failing with client-go
// version clientGo (vX.Y.Z), off saying whether a gate is switched off.
func (e Entry) Applies(clientGo string, off func(gate string) bool) bool {
	clientGo = canonical(clientGo)
	for _, c := range e.ChangedIn {
		if semver.Compare(clientGo, c.ClientGo) < 0 {
			continue // not yet changed
		}
		if !slices.ContainsFunc(c.Gates, off) {
			return false // changed, and not switched back
		}
	}
	return true
}

// HoldsOn says whether the entry holds on kube-apiserver server ("" not
// known): an entry without a KubeAPIServer range holds on any server, one
// with a range only on a known server inside it.
func (e Entry) HoldsOn(server string) bool {
	return e.KubeAPIServer == nil || server != "" && e.KubeAPIServer.Contains(server)
}

// Matches says whether the entry is about spec (a spec's full text).
func (e Entry) Matches(spec string) bool {
	return strings.Contains(spec, e.Spec) || slices.ContainsFunc(e.Also, func(a string) bool { return strings.Contains(spec, a) })
}

// Changes is the entry's changes in words: "changed in client-go v0.36.0
// (gates AtomicFIFO, UnlockWhileProcessingFIFO)".
func (e Entry) Changes() string {
	verb := "changed"
	if e.Kind == KindRegression {
		verb = "fixed"
	}
	var parts []string
	for _, c := range e.ChangedIn {
		p := c.ClientGo
		switch len(c.Gates) {
		case 0:
		case 1:
			p += " (gate " + c.Gates[0] + ")"
		default:
			p += " (gates " + strings.Join(c.Gates, ", ") + ")"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return ""
	}
	return verb + " in client-go " + strings.Join(parts, " and ")
}

// Subject is what a spec ran with, as Explain needs it.
type Subject struct {
	// Spec is the spec's full text; Control says it is a negative control
	// (a deliberately broken client: its failure is the suite's, never
	// client-go's).
	Spec    string
	Control bool
	// ClientGo is the client-go version under test ("" unknown);
	// Replacement what replaced it in the go.mod, if anything.
	ClientGo, Replacement string
	// GateOff says whether a client-go gate was off in the run (nil: all
	// at their defaults).
	GateOff func(gate string) bool
	// KubeAPIServer is the server's version ("" unknown).
	KubeAPIServer string
}

// Verdict is what a failing spec's failure is.
type Verdict struct {
	// Known: an entry explains it; Entries are those that do.
	Known   bool    `json:"known"`
	Entries []Entry `json:"entries,omitempty"`
	// ClientGo is the client-go version the verdict is for.
	ClientGo string `json:"clientGo,omitempty"`
	// Why says why a failure is unexplained: no entry applies, no verdict
	// data for that client-go, ... ("" when Known).
	Why string `json:"why,omitempty"`
	// Caveat qualifies a known verdict (a replaced client-go).
	Caveat string `json:"caveat,omitempty"`
	// Settings names a client setting of the run that held the spec's
	// informers (their client-side rate limiter) and by how much, for a
	// failure no entry explains: the downstream's settings may cause it,
	// apart from client-go's behaviour.
	Settings string `json:"settings,omitempty"`
}

// Explain says what s's failure is: known for its client-go (the entries
// of d that apply), or unexplained and why. Suite defects never explain a
// run of the suite: they were fixed before it.
func (d Data) Explain(s Subject) Verdict {
	v := Verdict{ClientGo: s.ClientGo}
	switch {
	case s.Control:
		// A control tests the suite against a broken client, not
		// client-go, unless the server takes away what the broken client
		// needs to break (an entry of a kube-apiserver range, for a
		// client-go the data covers).
		if e := d.serverEntries(s); len(e) > 0 && semver.IsValid(canonical(s.ClientGo)) && d.covers(s.ClientGo) {
			return Verdict{Known: true, Entries: e, ClientGo: s.ClientGo}
		}
		v.Why = "a negative control: its deliberately broken client was not caught, a defect of this suite's check, not client-go's behaviour"
		return v
	case s.ClientGo == "":
		v.Why = "the client-go version under test is not known, so no verdict data applies"
		return v
	case !semver.IsValid(canonical(s.ClientGo)):
		v.Why = fmt.Sprintf("client-go %s is no release version, so no verdict data applies", s.ClientGo)
		return v
	case !d.covers(s.ClientGo):
		v.Why = fmt.Sprintf("no verdict data for client-go %s (the data covers %s-%s, from the verdict run at %s): failures unexplained", s.ClientGo, d.Run.ClientGo[0], d.Run.ClientGo[len(d.Run.ClientGo)-1], d.Run.Commit)
		return v
	}
	off := s.GateOff
	if off == nil {
		off = func(string) bool { return false }
	}
	for _, e := range d.Entries {
		if e.Kind == KindSuiteDefect || !e.Matches(s.Spec) || !e.Applies(s.ClientGo, off) {
			continue
		}
		if !e.HoldsOn(s.KubeAPIServer) {
			continue
		}
		v.Entries = append(v.Entries, e)
	}
	if len(v.Entries) == 0 {
		v.Why = fmt.Sprintf("no known behaviour of client-go %s explains it (verdict data of the run at %s)", s.ClientGo, d.Run.Commit)
		return v
	}
	v.Known = true
	if s.Replacement != "" {
		v.Caveat = "client-go is replaced by " + s.Replacement + ": the data describes the released " + s.ClientGo
	}
	return v
}

// serverEntries is the entries of d of a kube-apiserver range that hold
// s's server and match its spec: what that server does, whatever the client.
func (d Data) serverEntries(s Subject) []Entry {
	var out []Entry
	for _, e := range d.Entries {
		if e.Kind != KindSuiteDefect && e.KubeAPIServer != nil && e.HoldsOn(s.KubeAPIServer) && e.Matches(s.Spec) {
			out = append(out, e)
		}
	}
	return out
}

// Line is the verdict in one line: "known for client-go v0.33.0: kubernetes
// PR #132240 (...), changed in client-go v0.35.0 (gate ...)", or
// "unexplained: ...".
func (v Verdict) Line() string {
	if !v.Known && v.Settings != "" {
		return "the client's settings may cause it: " + v.Settings + " (" + v.Why + ")"
	}
	if !v.Known {
		return "unexplained: " + v.Why
	}
	var parts []string
	for _, e := range v.Entries {
		p := e.Kind + ": " + e.Upstream
		if c := e.Changes(); c != "" && !strings.Contains(e.Upstream, c) {
			p += "; " + c
		}
		if len(e.Links) > 0 {
			p += " (" + strings.Join(e.Links, ", ") + ")"
		}
		if e.KubeAPIServer != nil {
			p += "; on kube-apiserver " + e.KubeAPIServer.String()
		}
		parts = append(parts, p)
	}
	line := "known for client-go " + v.ClientGo + ": " + strings.Join(parts, "; also ")
	if v.Caveat != "" {
		line += " (" + v.Caveat + ")"
	}
	return line
}
