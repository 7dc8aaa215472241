package scenarios

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// Scenario is one scenario of docs/scenarios.md as the suites run it: the
// one definition from which the Ginkgo specs (suites/conformance) and the
// e2e-framework features (integrations/e2eframework) are made, with the
// same names, labels, needs, sync modes, speeds and negative controls. A
// scenario of the catalogue is one value, or two where it has two parts
// (S4, S6): one Ginkgo Describe and one feature each.
//
// Adding a scenario: its body (a function of this package), its value
// (registered with Register, next to the body) and its entry in
// docs/scenarios.md (a heading "## S<n> ..."); nothing else. Tests fail
// when a catalogued scenario has no value or a value no catalogue entry.
type Scenario struct {
	// ID is the catalogue's ("S5"): the key of the reports, the matrix and
	// the verdicts, and the features' scenario label.
	ID string
	// Title follows the ID in the Describe's and the feature's name
	// ("etcd compaction": "S5 etcd compaction").
	Title string
	// Labels are the scenario's own labels ("compaction").
	Labels []string
	// Needs is what every spec of the scenario needs of the cluster beyond
	// a kubeconfig; a spec may need more (Spec.Needs).
	Needs []cluster.Capability
	// Disruptive: the scenario breaks the control plane itself (restarts,
	// compaction, restore), not only the client's connection.
	Disruptive bool
	// Speed of every spec of the scenario (each may be slower).
	Speed Speed
	// Specs are its specs and tables of specs, in order.
	Specs []Spec
	// Vars are the environment variables that set the scenario's
	// parameters (S12's storm size): read with the run's configuration
	// (e2e.Config, which refuses a bad value before any spec), each with
	// its row in docs/running.md's Environment table.
	Vars []cluster.Var

	// file and line are where the value was registered (the Ginkgo
	// specs' code location).
	file string
	line int
}

// Name is the Describe's and the feature's name: the ID, then the title.
func (s Scenario) Name() string { return s.ID + " " + s.Title }

// Location is where the value was registered.
func (s Scenario) Location() (file string, line int) { return s.file, s.line }

// Speed is how long a spec takes by design.
type Speed string

const (
	// Fast: seconds (the default).
	Fast Speed = ""
	// Slow: minutes; the default runs leave it out (`!slow`).
	Slow Speed = "slow"
	// Long: five minutes or more because client-go waits that long by
	// design (a fixed period no option shortens); slow too.
	Long Speed = "long"
)

// Spec is a spec of a scenario, or a table of them (Entries).
type Spec struct {
	// Context, when set, is the Ginkgo Context the spec is in ("when etcd
	// is compacted while the informer is watching"): specs in a row with
	// the same Context share one, as do their Needs and Speed, which are
	// the first's.
	Context string
	// Text is the table's description, or the single spec's text.
	Text string
	// Entries make the spec a table: a spec per entry and sync mode.
	Entries []Entry
	// Run, without Entries, is the single spec, in Mode.
	Run func(ctx context.Context, s e2e.Setup, in Input)
	// Mode is the single spec's sync mode (with its stack); the zero mode
	// leaves client-go in its default mode (a negative control whose broken
	// client does not depend on it).
	Mode e2e.SyncMode
	// Needs is what the spec (every spec of the Context) needs beyond the
	// scenario's needs.
	Needs []cluster.Capability
	// Speed of every spec of the table (or of the Context).
	Speed Speed
	// Sample labels the single spec, or every spec of the table, sample.
	Sample bool
	// Client is the single spec's broken client (e2e.Setup.Client: a
	// negative control's), set in the e2e.Setup its Run gets.
	Client func(*rest.Config) *rest.Config
	// Fails makes the single spec a negative control: it passes only if
	// Run fails with a message containing one of these (the assertion
	// families: ResumesWatch, ...), for the reason Because gives.
	Fails []string
	// Because says what catching the broken client proves.
	Because string
	// SelfChecked makes the single spec a negative control whose Run
	// checks the failure itself (a failure that must come within a bound
	// and name its cause: S10's handler that blocks for ever), instead of
	// matching Fails.
	SelfChecked bool
	// ClientGo constrains the client-go in use for the single spec, or
	// every spec of the table (">= 0.36.0"): an older one skips, saying so.
	ClientGo string
	// Feature is the name of the single spec's e2e-framework assessments
	// (before the mode) where it differs from Text; ModeAlone names them
	// after their mode alone.
	Feature string
	// Attempts, above 1, lets a spec try again (Ginkgo FlakeAttempts),
	// where a fault can be masked by something the spec cannot control;
	// Because says what.
	Attempts int
}

// Slower is the slowest of speeds (Fast for none).
func Slower(speeds ...Speed) Speed {
	rank := map[Speed]int{Fast: 0, Slow: 1, Long: 2}
	slowest := Fast
	for _, s := range speeds {
		if rank[s] > rank[slowest] {
			slowest = s
		}
	}
	return slowest
}

// Group is a run of a scenario's specs in one Context, with what the
// Context needs and its speed (its first spec's, Spec.Context); a spec
// without Context is a group of its own, its Needs and Speed its own.
type Group struct {
	Context string
	Needs   []cluster.Capability
	Speed   Speed
	// Specs are the group's, each without the Needs and Speed the group
	// holds for them.
	Specs []Spec
}

// Groups are sc's specs as the Contexts they are in, in order: the one
// reading of Spec.Context, for the Ginkgo specs and the features alike.
func (sc Scenario) Groups() []Group {
	var groups []Group
	for _, s := range sc.Specs {
		last := len(groups) - 1
		if s.Context == "" || last < 0 || groups[last].Context != s.Context {
			groups = append(groups, Group{Context: s.Context})
			last++
			if s.Context != "" {
				groups[last].Needs, groups[last].Speed = s.Needs, s.Speed
			}
		}
		if s.Context != "" {
			s.Needs, s.Speed = nil, Fast
		}
		groups[last].Specs = append(groups[last].Specs, s)
	}
	return groups
}

// Control says whether the spec is a negative control.
func (s Spec) Control() bool { return len(s.Fails) > 0 || s.SelfChecked }

// Entry is a row of a table: a spec per sync mode it runs in.
type Entry struct {
	// Name comes before the mode in the spec's text ("graceful (SIGTERM)":
	// "graceful (SIGTERM), streaming list"); "" for the mode alone.
	Name string
	// Modes are the sync modes (with their stacks) it runs in; nil for
	// both on the typed stack (BothModes). AllStacks is both on every
	// informer stack. DefaultMode is client-go's default mode, left as it
	// is: the spec's text is Name alone, without a sync mode label (an
	// e2e-framework feature runs it in LIST+WATCH mode).
	Modes []e2e.SyncMode
	// Labels are the entry's own labels ("release-sensitive").
	Labels []string
	// Speed, Sample: as the table's, for this entry.
	Speed  Speed
	Sample bool
	// ClientGo constrains the client-go in use (">= 0.36.0"): an older one
	// skips, saying so.
	ClientGo string
	// KubeAPIServer constrains the cluster's kube-apiserver (">= 1.34.0")
	// likewise.
	KubeAPIServer string
	// Feature is the name of its e2e-framework assessments (before the
	// mode) where it differs from Name: the features of the first release
	// keep theirs. "-" leaves the entry out of the feature.
	Feature string
	// DefaultFlags, when set, says why the entry needs kube-apiserver's
	// default flags where a front end could give it a cluster of any
	// profile (the e2e-framework features: the cluster is the
	// environment's); there it skips on another profile, saying so.
	DefaultFlags string
	// Run is the spec's body.
	Run func(ctx context.Context, s e2e.Setup, in Input)
}

// Input is what a front end may change in a scenario besides its client
// (e2e.Setup): the e2e-framework features' options. The Ginkgo specs give
// the zero Input.
type Input struct {
	// Handler wraps the event handler of the informer under test, in the
	// scenarios whose assertions are about what a handler hears, which
	// then turn the probe's own handler check off.
	Handler func(cache.ResourceEventHandler) cache.ResourceEventHandler
	// ReadIdle and Ping set client-go's HTTP/2 health check where a
	// scenario is about it (S2).
	ReadIdle, Ping *time.Duration
}

// Probe is the probe.Options of in: its Handler, the probe's handler check
// off with it.
func (in Input) Probe() probe.Options {
	return probe.Options{WrapHandler: in.Handler, NoHandlerCheck: in.Handler != nil}
}

// RunWith is a spec's Run that calls body with the spec's context, its
// set-up and p: the scenario's body reused with one parameter, so that a
// negative control is data (its broken Client, the body and parameter it
// reuses, what it must fail, Because) rather than a closure of its own.
// p is made once, with the value: a parameter that holds state of its own
// (a counter, a channel) stays in a closure, so that each spec makes its
// own.
func RunWith[P any](body func(context.Context, e2e.Setup, P), p P) func(context.Context, e2e.Setup, Input) {
	return func(ctx context.Context, s e2e.Setup, _ Input) { body(ctx, s, p) }
}

// RunWith2 is RunWith for a body with two parameters.
func RunWith2[P, Q any](body func(context.Context, e2e.Setup, P, Q), p P, q Q) func(context.Context, e2e.Setup, Input) {
	return func(ctx context.Context, s e2e.Setup, _ Input) { body(ctx, s, p, q) }
}

// RunBody is RunWith for a body without a parameter.
func RunBody(body func(context.Context, e2e.Setup)) func(context.Context, e2e.Setup, Input) {
	return func(ctx context.Context, s e2e.Setup, _ Input) { body(ctx, s) }
}

// ModeAlone, as a single spec's Feature, names its e2e-framework
// assessments after their sync mode alone.
const ModeAlone = "<the mode alone>"

// DefaultMode is an entry's Modes for client-go's default mode, left as
// it is (the zero e2e.SyncMode).
var DefaultMode = []e2e.SyncMode{{}}

// BothModes are the two sync modes on the typed stack.
var BothModes = []e2e.SyncMode{e2e.StreamingList, e2e.ListWatch}

// AllStacks are both sync modes on every informer stack, the typed first.
var AllStacks = func() []e2e.SyncMode {
	var modes []e2e.SyncMode
	for _, stack := range probe.Stacks {
		for _, m := range BothModes {
			modes = append(modes, m.OnStack(stack))
		}
	}
	return modes
}()

// ModesOf are the sync modes e runs in.
func (e Entry) ModesOf() []e2e.SyncMode {
	if e.Modes == nil {
		return BothModes
	}
	return e.Modes
}

var (
	registryMu sync.Mutex
	registry   []Scenario
)

// Register adds s to the scenarios (All) and returns it; each scenario's
// file registers its value, in a package-level variable, so that every
// value is in All before the suites and the features are made from it
// (a value registered later is in neither). It panics on a value without ID or title, or
// on a name registered twice (a programming error).
func Register(s Scenario) Scenario {
	_, s.file, s.line, _ = runtime.Caller(1)
	if err := s.check(); err != nil {
		panic("scenarios.Register: " + err.Error())
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if slices.ContainsFunc(registry, func(r Scenario) bool { return r.Name() == s.Name() }) {
		panic(fmt.Sprintf("scenarios.Register: %s registered twice", s.Name()))
	}
	registry = append(registry, s)
	e2e.DeclareVars(s.Vars...)
	return s
}

// check says what is wrong with s's shape: an ID that is not S<n>, no
// title, no spec, a spec that is neither a table nor a single spec, an
// entry without a body, a negative control without its reason.
func (s Scenario) check() error {
	if idNumber(s.ID) == 0 || s.Title == "" {
		return fmt.Errorf("scenario %q %q: want an ID S<n> and a title", s.ID, s.Title)
	}
	if len(s.Specs) == 0 {
		return fmt.Errorf("%s: no spec", s.Name())
	}
	for _, sp := range s.Specs {
		switch {
		case sp.Text == "":
			return fmt.Errorf("%s: a spec without text", s.Name())
		case (sp.Entries == nil) == (sp.Run == nil):
			return fmt.Errorf("%s: %q: want a table (Entries) or a single spec (Run), not both or neither", s.Name(), sp.Text)
		case sp.Control() && (sp.Run == nil || sp.Because == ""):
			return fmt.Errorf("%s: %q: a negative control is a single spec with the reason it must fail (Because)", s.Name(), sp.Text)
		case sp.Client != nil && !sp.Control():
			return fmt.Errorf("%s: %q: a broken client (Client) belongs to a negative control", s.Name(), sp.Text)
		}
		for _, e := range sp.Entries {
			if e.Run == nil {
				return fmt.Errorf("%s: %q: entry %q without a body", s.Name(), sp.Text, e.Name)
			}
		}
	}
	return nil
}

// All are the registered scenarios in catalogue order (S1, S2, ..., S10,
// ...; a scenario's parts in their files' order).
func All() []Scenario {
	registryMu.Lock()
	defer registryMu.Unlock()
	all := slices.Clone(registry)
	slices.SortStableFunc(all, func(a, b Scenario) int { return cmp.Compare(idNumber(a.ID), idNumber(b.ID)) })
	return all
}

// idNumber is n of "S<n>", 0 for anything else.
func idNumber(id string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "S"))
	if err != nil || !strings.HasPrefix(id, "S") || n <= 0 {
		return 0
	}
	return n
}
