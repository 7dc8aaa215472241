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
//		testenv = env.NewWithConfig(envconf.New())
//		testenv.Setup(envfuncs.CreateClusterWithOpts(local.NewProvider(), "c", local.WithAPIServers(2), local.WithProfile("fast-graceful-shutdown")))
//		testenv.Finish(envfuncs.DestroyCluster("c"))
//		os.Exit(e2eframework.Exit(testenv.Run(m)))
//	}
//
//	func TestInformers(t *testing.T) { testenv.Test(t, e2eframework.All()...) }
//
// Each feature runs the same function as the Ginkgo spec of the same
// scenario (package scenarios), through the same instruments (the informer
// probe, the fault proxy, the convergence checks), so its assertions,
// failure messages and report are the Ginkgo run's. The informer report of
// the features run in a process goes to the artifacts root
// (report.ArtifactsRoot: $INFORMER_CONFORMANCE_ARTIFACTS, default
// ./_artifacts) as informer-report-e2e-framework.json and .md when Exit is
// called; the local provider's process logs go there too, by default.
//
// Features run one at a time per process (they share client-go's feature
// gates and the process environment): do not run them in parallel.
package e2eframework

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

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

// Option changes what a feature runs.
type Option func(*options)

type options struct {
	modes         []e2e.SyncMode
	client        func(*rest.Config) *rest.Config
	handler       func(cache.ResourceEventHandler) cache.ResourceEventHandler
	readIdle      *time.Duration
	ping          *time.Duration
	expectFailure string
}

// SyncModes sets the sync modes a feature runs its scenario in, one
// assessment each (default both: streaming list and LIST+WATCH).
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
// same-name recreate scenario (S7), whose assertion is about what the
// handler hears.
func WithHandler(wrap func(cache.ResourceEventHandler) cache.ResourceEventHandler) Option {
	return func(o *options) { o.handler = wrap }
}

// WithHTTP2HealthCheck sets client-go's HTTP/2 health check for the
// blackhole scenario (S2): HTTP2_READ_IDLE_TIMEOUT_SECONDS and
// HTTP2_PING_TIMEOUT_SECONDS (default 2 s each, so the feature takes
// seconds; 0 read-idle turns the check off). The recovery bound follows
// from them (scenarios.StaleRecoveryBound).
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

func apply(opts []Option) options {
	o := options{modes: []e2e.SyncMode{e2e.StreamingList, e2e.ListWatch}}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// All is every scenario feature with the given options.
func All(opts ...Option) []features.Feature {
	return []features.Feature{APIServerRestart(opts...), Blackhole(opts...), SameNameRecreate(opts...), Compaction(opts...)}
}

// APIServerRestart is S1: kube-apiserver 0 of two stops (gracefully, then
// hard) and starts again on the same address; the informer must resume,
// converge, deliver every delete, get a 2xx within its bound and relist
// only where the server told it to. It needs a cluster of two
// kube-apiservers with the fast-graceful-shutdown profile
// (local.WithAPIServers(2), local.WithProfile("fast-graceful-shutdown")),
// and skips on others.
func APIServerRestart(opts ...Option) features.Feature {
	o := apply(opts)
	const name = "S1 kube-apiserver restart"
	b := o.builder(name, "S1")
	for _, stop := range []cluster.StopMode{cluster.Graceful, cluster.Hard} {
		b = o.perMode(b, name, fmt.Sprintf("%s stop, ", stop), func(ctx context.Context, s e2e.Setup) {
			scenarios.APIServerRestart(ctx, s, scenarios.RestartInput{Stop: stop})
		})
	}
	return b.Feature()
}

// Blackhole is S2: the informers' HTTP/2 connection goes silent (the fault
// proxy drops its bytes both ways); client-go's health check must notice
// and every informer recover on a new connection within the bound.
func Blackhole(opts ...Option) features.Feature {
	o := apply(opts)
	const name = "S2 stale HTTP/2 connection (network blackhole)"
	sc := scenarios.StaleConnection{ReadIdle: new(scenarios.ShortReadIdle), Ping: new(scenarios.ShortPingTimeout)}
	if o.readIdle != nil {
		sc.ReadIdle, sc.Ping = o.readIdle, o.ping
	}
	sc.Bound = scenarios.StaleRecoveryBound(*sc.ReadIdle, *sc.Ping)
	if *sc.ReadIdle == 0 { // the check off: the bound of the default short check
		sc.Bound = scenarios.StaleRecoveryBound(scenarios.ShortReadIdle, scenarios.ShortPingTimeout)
	}
	b := o.perMode(o.builder(name, "S2"), name, "", func(ctx context.Context, s e2e.Setup) { scenarios.RecoversFromStaleConnection(ctx, s, sc) })
	return b.Feature()
}

// SameNameRecreate is S7: a pod is deleted and recreated under the same
// name while the informer is cut off and etcd is compacted; the informer
// must converge and its handler hear that the old object ended.
func SameNameRecreate(opts ...Option) features.Feature {
	o := apply(opts)
	const name = "S7 same-name pod recreated while disconnected"
	b := o.perMode(o.builder(name, "S7"), name, "", func(ctx context.Context, s e2e.Setup) {
		scenarios.RecreatedWhileDisconnected(ctx, s, probe.Options{WrapHandler: o.handler, NoHandlerCheck: o.handler != nil})
	})
	return b.Feature()
}

// Compaction is S5 on one kube-apiserver with the watch cache: deletes each
// followed at once by a compaction (etcd#10681) must not survive in the
// store, and a compaction the watch cache notices must not touch an open
// watch (this one waits for the watch cache's 15 s compaction poll).
func Compaction(opts ...Option) features.Feature {
	o := apply(opts)
	const name = "S5 etcd compaction"
	b := o.perMode(o.builder(name, "S5"), name, "delete then compact, ", func(ctx context.Context, s e2e.Setup) { scenarios.DeleteThenCompact(ctx, s, true) })
	b = o.perMode(b, name, "compacted while watching, ", func(ctx context.Context, s e2e.Setup) { scenarios.CompactedWhileWatching(ctx, s) })
	return b.Feature()
}

func (o options) builder(name, scenario string) *features.FeatureBuilder {
	b := features.New(name).WithLabel("scenario", scenario)
	if o.expectFailure != "" {
		b = features.New(name+" (negative control)").WithLabel("scenario", scenario).WithLabel("type", "negative-control")
	}
	return b
}

// perMode adds an assessment per sync mode, named prefix + the mode.
func (o options) perMode(b *features.FeatureBuilder, feature, prefix string, body func(ctx context.Context, s e2e.Setup)) *features.FeatureBuilder {
	for _, m := range o.modes {
		b = b.Assess(prefix+m.Name, o.step(feature, prefix+m.Name, m, body))
	}
	return b
}

// step is one assessment: the scenario body as a spec of the run, on the
// environment's cluster, in sync mode m with the options' client.
func (o options) step(feature, step string, m e2e.SyncMode, body func(ctx context.Context, s e2e.Setup)) features.Func {
	return func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		t.Helper()
		c, err := ClusterOf(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		name := feature + ": " + step
		if o.expectFailure != "" {
			name = feature + " (negative control): " + step
		}
		run.Spec(ctx, t, c, name, func(ctx context.Context) {
			s := e2e.Setup{Mode: m, Client: o.client}
			if o.expectFailure == "" {
				body(ctx, s)
				return
			}
			err := gomega.InterceptGomegaFailure(func() { body(ctx, s) })
			gomega.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(o.expectFailure)),
				"negative control: the scenario's assertion %q catches the broken client", o.expectFailure)
			e2e.AddReportEntry("negative control", "the scenario failed as it must: "+err.Error())
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
