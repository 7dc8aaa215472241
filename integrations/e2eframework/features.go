// Package e2eframework runs informer-conformance's scenarios as
// sigs.k8s.io/e2e-framework features (features.Feature), on a cluster an
// e2e-framework provider created: the local or kind provider of this
// module (subpackages local and kind), whose clusters the scenarios can
// break, or any other (its kubeconfig; scenarios that must break the
// control plane then skip, saying why).
//
//	var testenv env.Environment
//
//	func TestMain(m *testing.M) {
//		cfg, _ := envconf.NewFromFlags() // --feature, --labels, --skip-labels, ...
//		testenv = env.NewWithConfig(cfg)
//		testenv.Setup(envfuncs.CreateClusterWithOpts(local.NewProvider(), "c", local.WithAPIServers(2), local.WithProfile("fast-graceful-shutdown")))
//		testenv.Finish(envfuncs.DestroyCluster("c"))
//		os.Exit(e2eframework.Exit(testenv.Run(m)))
//	}
//
//	func TestInformers(t *testing.T) { testenv.Test(t, e2eframework.All()...) }
//
// There is a feature for every scenario (S1-S34; two each for S4 and S6),
// made from the same value as its Ginkgo Describe (scenarios.Scenario) and
// named after it, with an assessment
// for each entry of its tables on the typed stack, in the sync modes the
// entry runs in. Each runs the same function as the Ginkgo spec of the
// same scenario (package scenarios), through the same instruments (the
// informer probe, the fault proxy, the convergence checks), so its
// assertions, failure messages and report are the Ginkgo run's. All is
// every feature, Quick leaves out what the Ginkgo suite labels slow or
// long, and the option Smoke runs each feature's first assessment that
// fits the cluster; the features' labels (LabelScenario, LabelCapability,
// LabelDisruptive, LabelSpeed) serve e2e-framework's --labels and
// --skip-labels. The informer report of
// the features run in a process goes to the artifacts root
// (report.ArtifactsRoot: $INFORMER_CONFORMANCE_ARTIFACTS, default
// ./_artifacts) as informer-report-e2e-framework.json and .md when Exit is
// called; the local provider's process logs go there too, by default.
//
// Features run one at a time per process (they share client-go's feature
// gates and the process environment): do not run them in parallel.
package e2eframework

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/e2e-framework/pkg/types"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/existing"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/integrations/e2eframework/internal/provider"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// Suite names the report of the features run in a process.
const Suite = "e2e-framework"

var run = e2e.NewTestingRun(Suite)

// Feature labels, for e2e-framework's --labels and --skip-labels (features
// only: e2e-framework v0.7.0 filters assessments by name alone,
// pkg/env/env.go requireAssessmentProcessing).
const (
	// LabelScenario is the scenario of docs/scenarios.md, by its ID (S1, S2, ...).
	LabelScenario = "scenario"
	// LabelCapability is what the feature needs of the cluster beyond a
	// kubeconfig (a cluster.Capability name: apiserver-restart, ha, ...), a
	// value each, as the Ginkgo Describe's capability labels.
	LabelCapability = "capability"
	// LabelDisruptive is "true" on the features that break the control
	// plane itself (restarts, compaction, restore), as the Ginkgo suite's
	// disruptive label.
	LabelDisruptive = "disruptive"
	// LabelSpeed is "slow" on a feature whose every assessment the Ginkgo
	// suite labels slow (S12, S25, S34). The slow and long assessments of the other
	// features honour --skip-labels speed=slow (and speed=long) themselves:
	// they skip, saying so (step).
	LabelSpeed = "speed"
	// LabelType is "negative-control" on a feature built with ExpectFailure.
	LabelType = "type"
)

// The values of LabelSpeed: a long assessment (minutes by design) is slow
// too, as in the Ginkgo suite, so --skip-labels speed=slow leaves it out.
const (
	Slow = "slow"
	Long = "long"
)

// Option changes what a feature runs.
type Option func(*options)

type options struct {
	modes         []e2e.SyncMode
	client        func(*rest.Config) *rest.Config
	handler       func(cache.ResourceEventHandler) cache.ResourceEventHandler
	readIdle      *time.Duration
	ping          *time.Duration
	expectFailure string
	withoutSlow   bool
	smoke         bool
	// ran is the feature's own (apply makes one per feature): set once an
	// assessment of it ran, for Smoke.
	ran *atomic.Bool
}

// SyncModes sets the sync modes a feature runs its scenario in, one
// assessment each (default both: streaming list and LIST+WATCH). An
// assessment the Ginkgo suite runs in one mode only (S14 and S21 streaming
// lists, S4's error classes LIST+WATCH) runs in that mode if it is among
// these, else not at all.
func SyncModes(modes ...e2e.SyncMode) Option {
	return func(o *options) { o.modes = modes }
}

// WithClient changes the rest.Config of the informers under test (a
// downstream's transport wrappers, rate limits, content type; or a broken
// client for a negative control): the scenario's e2e.Setup.Client, applied
// to every informer it starts, before any e2e.Hooks.Config.
func WithClient(wrap func(*rest.Config) *rest.Config) Option {
	return func(o *options) { o.client = wrap }
}

// WithHandler wraps the event handler of the informer under test of the
// scenarios whose assertions are about what a handler hears (S5, S6, S7,
// S8, S10, S16-S22: the probe.Options.WrapHandler or Wrap of their input),
// and turns the probe's own handler check off (probe.Options.NoHandlerCheck)
// where there is one. The other features ignore it.
func WithHandler(wrap func(cache.ResourceEventHandler) cache.ResourceEventHandler) Option {
	return func(o *options) { o.handler = wrap }
}

// WithHTTP2HealthCheck sets client-go's HTTP/2 health check for the
// blackhole scenario (S2): HTTP2_READ_IDLE_TIMEOUT_SECONDS and
// HTTP2_PING_TIMEOUT_SECONDS (default 2 s each, so the feature takes
// seconds; 0 read-idle turns the check off). The recovery bound follows
// from them (scenarios.StaleRecoveryBound). The feature's assessment of
// client-go's default check then skips, saying so.
func WithHTTP2HealthCheck(readIdle, ping time.Duration) Option {
	return func(o *options) { o.readIdle, o.ping = &readIdle, &ping }
}

// ExpectFailure makes the feature a negative control: each assessment
// passes only if the scenario's assertions fail with a message containing
// want (an assertion family: scenarios.OldObjectEnded,
// scenarios.StaleRecovered, ...), proving they catch the broken client the
// other options set up. A failure of the set-up itself still fails it.
func ExpectFailure(want string) Option {
	return func(o *options) { o.expectFailure = want }
}

// WithoutSlow leaves out the assessments the Ginkgo suite labels slow or
// long (minutes each: S2's default health check, S5's compactions the
// watch cache must notice, S6's LIST+WATCH relist, S12, S15's serving CA
// rotation). At run time `--skip-labels speed=slow` does the same.
func WithoutSlow() Option {
	return func(o *options) { o.withoutSlow = true }
}

// Smoke makes a feature run one assessment: the first that runs (neither
// skips for want of something nor is filtered out); the others then skip,
// saying so. Every scenario the cluster fits, once, in a fraction of the
// time: what the example module runs in CI.
func Smoke() Option {
	return func(o *options) { o.smoke = true }
}

func apply(opts []Option) options {
	o := options{modes: []e2e.SyncMode{e2e.StreamingList, e2e.ListWatch}, ran: new(atomic.Bool)}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// All is every scenario's feature (scenarios.All: S1-S34, two each for
// S4 and S6, as the Ginkgo suite's Describes) with the given options, in
// scenario order. Each has an assessment per entry of its tables on the
// typed stack, in the sync modes the table uses; those whose cluster lacks
// what they need (kube-apiservers, a flag profile, a capability) skip,
// saying why.
func All(opts ...Option) []features.Feature {
	var all []features.Feature
	for _, sc := range scenarios.All() {
		all = append(all, Feature(sc, opts...))
	}
	return all
}

// Quick is All without the slow and long assessments (WithoutSlow), and
// without the features left with none (S12, S25, S34): the Ginkgo suite's default
// selection, `!slow && !long`.
func Quick(opts ...Option) []features.Feature {
	var quick []features.Feature
	for _, f := range All(append(opts, WithoutSlow())...) {
		if len(features.GetStepsByLevel(f.Steps(), types.LevelAssess)) > 0 {
			quick = append(quick, f)
		}
	}
	return quick
}

// Feature is sc's feature (scenarios.All has every scenario): an
// assessment per entry of its tables and per single spec that is not a
// negative control, on the typed stack, in the sync modes it runs in
// (the options' SyncModes narrow them), named as the entry (its Feature
// name where it has one) followed by the mode. The options' handler and
// health check reach the scenario as its scenarios.Input.
func Feature(sc scenarios.Scenario, opts ...Option) features.Feature {
	o := apply(opts)
	in := scenarios.Input{Handler: o.handler, ReadIdle: o.readIdle, Ping: o.ping}
	type assessment struct {
		e   entry
		run func(context.Context, e2e.Setup, scenarios.Input)
	}
	var all []assessment
	for _, g := range sc.Groups() {
		for _, s := range g.Specs {
			if s.Control() {
				continue
			}
			speed := scenarios.Slower(sc.Speed, g.Speed, s.Speed)
			needs := slices.Concat(sc.Needs, g.Needs, s.Needs)
			if s.Entries == nil {
				e := entry{name: cmp.Or(s.Feature, s.Text), speed: string(speed), clientGo: s.ClientGo, needs: needs}
				if s.Feature == scenarios.ModeAlone {
					e.name = ""
				}
				if s.Mode.Name != "" {
					e.modes = []e2e.SyncMode{s.Mode}
				}
				all = append(all, assessment{e, s.Run})
				continue
			}
			for _, se := range s.Entries {
				if se.Feature == "-" {
					continue
				}
				var modes []e2e.SyncMode
				for _, m := range se.ModesOf() {
					if m.Stack.OrTyped() == probe.StackTyped {
						modes = append(modes, m)
					}
				}
				if len(modes) == 0 {
					continue
				}
				all = append(all, assessment{entry{
					name: cmp.Or(se.Feature, se.Name), modes: modes, speed: string(scenarios.Slower(speed, se.Speed)),
					clientGo: cmp.Or(se.ClientGo, s.ClientGo), defaultFlags: se.DefaultFlags, needs: needs,
				}, se.Run})
			}
		}
	}
	slow := len(all) > 0
	for _, a := range all {
		slow = slow && a.e.speed != ""
	}
	b := o.builder(scenario{id: sc.ID, name: sc.Name(), needs: sc.Needs, disruptive: sc.Disruptive, slow: slow})
	for _, a := range all {
		b = o.perMode(b, sc.Name(), a.e, func(ctx context.Context, s e2e.Setup) { a.run(ctx, s, in) })
	}
	return b.Feature()
}

// scenario is what a feature is named and labelled after: a Describe of
// the Ginkgo suite.
type scenario struct {
	id         string // LabelScenario: "S1"
	name       string // the Describe's text
	needs      []cluster.Capability
	disruptive bool
	slow       bool // every assessment is slow (LabelSpeed)
}

// entry is a row of a Ginkgo table: an assessment per sync mode it runs in.
type entry struct {
	// name comes before the mode in the assessments' names ("" for the
	// mode alone).
	name string
	// modes are the sync modes the Ginkgo entry runs in; nil for both.
	// The options' SyncModes narrow them.
	modes []e2e.SyncMode
	// speed is "", Slow or Long, as the Ginkgo suite labels the entry.
	speed string
	// clientGo constrains the client-go in use (">= 0.36.0"), as the
	// Ginkgo spec's e2e.ClientGo: an older one skips, saying so.
	clientGo string
	// needs is what the entry needs of the cluster (the scenario's, its
	// Context's or its own): a cluster that lacks one skips it, saying so
	// (cluster.Lacks, the check the Ginkgo suite makes).
	needs []cluster.Capability
	// defaultFlags, when set, says why the entry needs kube-apiserver's
	// default flags: the scenario asks for no profile, which the testing
	// front end takes for any (e2e.testingFrontEnd.Cluster), while the
	// Ginkgo suite gives it a cluster of the defaults. On a cluster that
	// runs a profile it skips, saying so.
	defaultFlags string
}

// speeds are the LabelSpeed values of an entry's speed.
func speeds(speed string) []string {
	switch speed {
	case Slow:
		return []string{Slow}
	case Long:
		return []string{Slow, Long}
	}
	return nil
}

func (o options) builder(sc scenario) *features.FeatureBuilder {
	name := sc.name
	if o.expectFailure != "" {
		name += " (negative control)"
	}
	b := features.New(name).WithLabel(LabelScenario, sc.id)
	for _, c := range sc.needs {
		b = b.WithLabel(LabelCapability, c.Name)
	}
	if sc.disruptive {
		b = b.WithLabel(LabelDisruptive, "true")
	}
	if sc.slow {
		b = b.WithLabel(LabelSpeed, Slow)
	}
	if o.expectFailure != "" {
		b = b.WithLabel(LabelType, "negative-control")
	}
	return b
}

// perMode adds an assessment per sync mode of e, named e.name + ", " + the
// mode (the mode alone when e.name is "").
func (o options) perMode(b *features.FeatureBuilder, feature string, e entry, body func(ctx context.Context, s e2e.Setup)) *features.FeatureBuilder {
	if o.withoutSlow && e.speed != "" {
		return b
	}
	for _, m := range o.modesOf(e) {
		name := m.Name
		if e.name != "" {
			name = e.name + ", " + m.Name
		}
		b = b.Assess(name, o.step(feature, name, m, e, body))
	}
	return b
}

// modesOf are the options' sync modes e runs in: all of them, or, for an
// entry of one mode, that one if it is among them (a mode of the options,
// with its stack).
func (o options) modesOf(e entry) []e2e.SyncMode {
	if e.modes == nil {
		return o.modes
	}
	var modes []e2e.SyncMode
	for _, m := range o.modes {
		if slices.ContainsFunc(e.modes, func(want e2e.SyncMode) bool { return want.Streaming == m.Streaming }) {
			modes = append(modes, m)
		}
	}
	return modes
}

// step is one assessment: the scenario body as a spec of the run, on the
// environment's cluster, in sync mode m with the options' client. It skips
// when --skip-labels names its speed, and, in a smoke run (Smoke), once an
// assessment of its feature ran.
func (o options) step(feature, step string, m e2e.SyncMode, e entry, body func(ctx context.Context, s e2e.Setup)) features.Func {
	return func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		t.Helper()
		for _, v := range speeds(e.speed) {
			if slices.Contains(cfg.SkipLabels()[LabelSpeed], v) {
				t.Skipf("--skip-labels %s=%s: the Ginkgo suite labels this assessment %s", LabelSpeed, v, v)
			}
		}
		if o.smoke && o.ran.Load() {
			t.Skip("smoke run (e2eframework.Smoke): an earlier assessment of this feature ran")
		}
		c, err := ClusterOf(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		name := feature + ": " + step
		if o.expectFailure != "" {
			name = feature + " (negative control): " + step
		}
		if o.smoke {
			// After run.Spec's clean-ups (registered before them).
			t.Cleanup(func() {
				if !t.Skipped() {
					o.ran.Store(true)
				}
			})
		}
		run.Spec(ctx, t, c, name, func(ctx context.Context) {
			if missing := cluster.Lacks(c, cluster.Spec{}, e.needs...); len(missing) > 0 {
				e2e.Skip(ctx, fmt.Sprintf("cluster %s lacks %s: create it with them to run this assessment", c.Name(), strings.Join(missing, ", ")))
			}
			if e.clientGo != "" {
				e2e.RequireClientGo(ctx, e.clientGo)
			}
			if p, ok := c.(cluster.Profiled); ok && e.defaultFlags != "" && p.ProfileName() != "" && p.ProfileName() != "default" {
				e2e.Skip(ctx, fmt.Sprintf("cluster %s runs kube-apiserver flag profile %s: this assessment needs the default flags (%s)", c.Name(), p.ProfileName(), e.defaultFlags))
			}
			s := e2e.Setup{Mode: m, Client: o.client}
			if o.expectFailure == "" {
				body(ctx, s)
				return
			}
			err := gomega.InterceptGomegaFailure(func() { body(ctx, s) })
			gomega.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(o.expectFailure)),
				"negative control: the scenario's assertion %q catches the broken client", o.expectFailure)
			e2e.AddReportEntry(ctx, "negative control", "the scenario failed as it must: "+err.Error())
		})
		return ctx
	}
}

var (
	existingMu sync.Mutex
	connected  = map[string]cluster.Cluster{}
)

// ConnectTimeout bounds connecting to a cluster no provider of this module
// created.
const ConnectTimeout = 30 * time.Second

// ClusterOf is the cluster behind cfg's kubeconfig: the one a provider of
// this module created, with every capability its backend has, or, for a
// kubeconfig of any other provider, a connection through the existing
// backend (a fault proxy goes in front of it; scenarios that must restart
// or compact the control plane skip).
func ClusterOf(ctx context.Context, cfg *envconf.Config) (cluster.Cluster, error) {
	kc := cfg.KubeconfigFile()
	if kc == "" {
		return nil, fmt.Errorf("e2eframework: the environment has no kubeconfig: create a cluster first (envfuncs.CreateCluster with local.NewProvider()), or give --kubeconfig")
	}
	if c, ok := provider.Lookup(kc); ok {
		return c, nil
	}
	existingMu.Lock()
	defer existingMu.Unlock()
	if c, ok := connected[kc]; ok {
		return c, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	c, err := existing.Connect(ctx, existing.Options{Kubeconfig: kc})
	if err != nil {
		return nil, fmt.Errorf("e2eframework: %w", err)
	}
	connected[kc] = c
	return c, nil
}

// WriteReports writes the informer report of the features run in this
// process (report.FilesIn under the artifacts directory) and
// returns an error when none of them passed: a run that tested nothing.
func WriteReports() error { return run.WriteReports() }

// Exit is for TestMain: os.Exit(e2eframework.Exit(testenv.Run(m))). It
// writes the report (WriteReports) and turns a run that tested nothing,
// or whose report could not be written, into exit code 1; e2e-framework
// itself only logs what its Finish functions return.
func Exit(code int) int {
	if err := WriteReports(); err != nil {
		fmt.Fprintln(os.Stderr, "informer-conformance:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
