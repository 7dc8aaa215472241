package e2e

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/lifetime"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
)

// Hooks let a module that runs the suites (library mode) build the
// informers under test its own way, so the specs judge the client stack it
// ships rather than a plain one.
type Hooks struct {
	// Config, when set, gets a copy of each informer's rest.Config and
	// returns the one to use: add transport wrappers (cfg.Wrap), a Dial,
	// rate limits, content types, a user agent. The probe instruments what
	// it returns: its request recorder wraps outside the hook's wrappers
	// and its dial recorder calls the hook's Dial.
	Config func(*rest.Config) *rest.Config
	// FactoryOptions are added to every informer factory the specs build
	// (a transform, list tweaks), after the spec's own.
	FactoryOptions []informers.SharedInformerOption
	// Informers, when set, builds the informers of every probe on the
	// default stack (typed) instead of client-go's SharedInformerFactory:
	// a downstream's own factory wrapper, a controller-runtime cache
	// (integrations/controllerruntime). It gets the instrumented config,
	// so the specs see its requests, dials and handler calls like any
	// informer's. A spec that builds its informer with client-go's typed
	// factory in a way a Source cannot take (an informer of its own,
	// factory options such as a list tweak) is skipped, saying so; the
	// specs on the other stacks keep client-go's factories.
	Informers probe.Builder
	// InformersName names Informers in the reports (default "hook").
	InformersName string
}

// SetHooks installs h for every spec of the process that follows (its
// harness's); call it before RunSpecs.
func SetHooks(h Hooks) { theHarness.SetHooks(h) }

// installedHooks are the hooks in use (none: the zero Hooks).
func installedHooks() Hooks { return theHarness.Hooks() }

// InformerSource names the informer source that builds the typed stack's
// informers (Hooks.Informers), "" where client-go's factory does: a spec
// whose client-side fault or judgement needs client-go's own informer skips
// under another source, saying why.
func InformerSource() string { return installedHooks().informerSource() }

// InformerSource is the package's InformerSource for the spec's harness
// (its front end's, when it brings one: HarnessCarrier).
func (e *Env) InformerSource() string { return e.h.Hooks().informerSource() }

func (h Hooks) informerSource() string {
	if h.Informers == nil {
		return ""
	}
	return cmp.Or(h.InformersName, "hook")
}

// applyHooks is what StartProbe does with the hooks.
func applyHooks(fe FrontEnd, hooks Hooks, cfg *rest.Config, opts probe.Options) (*rest.Config, probe.Options) {
	if hooks.Informers != nil && opts.Stack.OrTyped() == probe.StackTyped {
		// A spec that configures client-go's factory itself is refused by
		// probe.New (ErrNotSupported), which StartProbeUnsynced turns into
		// a skip naming the source.
		name := hooks.informerSource()
		opts.Source, opts.Stack = hooks.Informers, probe.Stack(name)
		fe.AddReportEntry("client hook", fmt.Sprintf("the downstream's informer source %s built this informer", name))
		if len(hooks.FactoryOptions) > 0 {
			fe.AddReportEntry("client hook", "the downstream's informer factory options configure client-go's factory, not its informer source: not used")
		}
	}
	if hooks.Config != nil {
		cfg = hooks.Config(rest.CopyConfig(cfg))
		fe.AddReportEntry("client hook", "the downstream's rest.Config hook built this informer's client")
	}
	if len(hooks.FactoryOptions) > 0 && opts.Source == nil {
		if !opts.Stack.Typed() {
			// informers.SharedInformerOption configures the typed factory only.
			fe.AddReportEntry("client hook", fmt.Sprintf("the downstream's informer factory options do not apply to the %s stack", opts.Stack))
		} else {
			opts.FactoryOptions = append(slices.Clone(opts.FactoryOptions), hooks.FactoryOptions...)
		}
	}
	return cfg, opts
}

// ClientSettingsInForce are the client settings the informers run with:
// what the hooks' Config returns for an informer's config (the suite's own
// when no hook is set), and what the other hooks add.
func ClientSettingsInForce() report.ClientSettings {
	cfg := &rest.Config{Host: "https://informer.invalid"}
	hooks := installedHooks()
	hooked := hooks.Config != nil || len(hooks.FactoryOptions) > 0 || hooks.Informers != nil
	if hooks.Config != nil {
		cfg = hooks.Config(rest.CopyConfig(cfg))
	}
	return report.ClientSettings{
		Hooked:             hooked,
		QPS:                cfg.QPS,
		Burst:              cfg.Burst,
		RateLimiter:        cfg.RateLimiter != nil,
		UserAgent:          cfg.UserAgent,
		ContentType:        cfg.ContentType,
		AcceptContentTypes: cfg.AcceptContentTypes,
		TimeoutSeconds:     cfg.Timeout.Seconds(),
		WrapsTransport:     cfg.WrapTransport != nil,
		Dial:               cfg.Dial != nil,
		FactoryOptions:     len(hooks.FactoryOptions),
		Informers:          InformerSource(),
	}
}

// EnsureBinaries prepares the selected backend before any spec starts a
// cluster (cluster.Backend's Prepare): the local backend builds (or finds in
// the cache) the kube-apiserver, etcd and etcdutl it runs, for KUBE_VERSION
// and ETCD_VERSION. Suites call it once, on process 1, before their specs,
// so the first spec's cluster start is not also a five-minute build.
func EnsureBinaries(ctx context.Context) error {
	lifetime.ExitWithParent() // a build outliving the ginkgo CLI is not waited for either
	d, err := Backend()
	if err != nil || d.Prepare == nil {
		return err
	}
	return d.Prepare(ctx, cluster.Harness{Progress: buildProgress(), ProcessDir: processArtifactsDir, Warn: warnOnce})
}
