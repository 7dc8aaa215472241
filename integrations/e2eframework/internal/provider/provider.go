// Package provider is this module's e2e-framework cluster provider
// (support.E2EClusterProvider, sigs.k8s.io/e2e-framework v0.7.0
// pkg/types/types.go), one implementation over informer-conformance's
// backend registry (cluster.Backend): Create looks its backend up, maps the
// options to a cluster.Spec and to the backend's variables (cluster.Env,
// never the process's environment), and prepares and starts the cluster as
// the suite's harness does. Package provider of this module exports it for
// any registered backend; packages local and kind add what only theirs has
// (Extension). It also keeps the registry through which the scenario
// features find the cluster behind an e2e-framework kubeconfig (Lookup).
package provider

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/e2e-framework/support"
	"sigs.k8s.io/yaml"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/lifetime"
	"github.com/informer-conformance/informer-conformance/cluster/profile"
	"github.com/informer-conformance/informer-conformance/report"
)

// MaxAPIServers bounds the kube-apiservers of a provider's cluster.
const MaxAPIServers = 3

// Config is what a provider's cluster is made of: what the options,
// Create's flags and CreateWithConfig's YAML file (unknown fields are an
// error) set.
//
//	apiServers: 2                      # kube-apiservers (1-3; kind: control-plane nodes behind its load balancer)
//	etcdLinks: true                    # a fault proxy between each kube-apiserver and etcd (S24)
//	profile: fast-graceful-shutdown    # fixtures/profiles name(s) joined by "+", or a file
//	version: v1.36.3                   # kube-apiserver: KUBE_VERSION (default: the environment's, then v1.37.2)
//	etcdVersion: v3.7.3                # etcd: ETCD_VERSION (the local backend)
//	path: /opt/k8s/bin                 # prebuilt kube-apiserver, etcd, etcdutl: INFORMER_CONFORMANCE_ASSETS (the local backend)
//	artifactsDir: /tmp/logs            # the cluster's logs (default: <artifacts root>/<cluster name>)
//	env:                               # any other variable the backend reads (cluster.Backend.Vars)
//	  INFORMER_CONFORMANCE_FRESH_ETCD: "true"
//
// Version, EtcdVersion, Path and Env set the backend's variables for this
// cluster only, over the process's environment; one the backend does not
// read is an error.
type Config struct {
	APIServers   int         `json:"apiServers,omitempty"`
	EtcdLinks    bool        `json:"etcdLinks,omitempty"`
	Profile      string      `json:"profile,omitempty"`
	Version      string      `json:"version,omitempty"`
	EtcdVersion  string      `json:"etcdVersion,omitempty"`
	Path         string      `json:"path,omitempty"`
	ArtifactsDir string      `json:"artifactsDir,omitempty"`
	Env          cluster.Env `json:"env,omitempty"`
}

// Extension is what a backend's own package (local, kind) adds to the
// provider; the zero Extension is the provider of any registered backend.
type Extension struct {
	// Check, when set, says why Create cannot go ahead, before anything
	// else (the local backend's host, before a build).
	Check func(cfg Config) error
	// DefaultName is the name SetDefaults gives a cluster without one.
	DefaultName string
	// NewName, when set, names a cluster the caller did not (unset: the
	// backend does).
	NewName func() string
	// Settings are more of the backend's variables, each set by a flag of
	// Create and a field of CreateWithConfig's file of its own.
	Settings []Setting
	// ConfigHint follows CreateWithConfig's refusal of a file.
	ConfigHint string
}

// A Setting is a variable of the backend (Var) that Create's flag
// --Name=VALUE and CreateWithConfig's field Name set (kind's image).
type Setting struct{ Name, Var, Usage string }

// Provider is a backend of the registry as an e2e-framework cluster
// provider, for one cluster: created at most once, destroyed once.
type Provider struct {
	backend string
	ext     Extension
	// self is what the methods return and the options are given: the
	// provider of package local or kind embedding this one.
	self     support.E2EClusterProvider
	config   Config
	progress io.Writer

	mu         sync.Mutex
	name       string
	c          cluster.Cluster
	kubeconfig string
	destroyed  bool
}

// New is a provider of one cluster of the backend registered as backend
// (its package imported), extended by ext. self is the provider embedding
// it, nil for none.
func New(backend string, ext Extension, self support.E2EClusterProvider) *Provider {
	p := &Provider{backend: backend, ext: ext, self: self}
	if self == nil {
		p.self = p
	}
	return p
}

var _ support.E2EClusterProvider = (*Provider)(nil)

// generic is the Provider of a provider of this module, for the options.
func (p *Provider) generic() *Provider { return p }

// option is a support.ClusterOpts that sets f on a provider of this
// module, and leaves any other alone.
func option(f func(p *Provider)) support.ClusterOpts {
	return func(sp support.E2EClusterProvider) {
		if g, ok := sp.(interface{ generic() *Provider }); ok {
			f(g.generic())
		}
	}
}

// WithAPIServers sets the number of kube-apiservers (1-3, default 1; the
// S1 and S5 fail-over scenarios need 2).
func WithAPIServers(n int) support.ClusterOpts {
	return option(func(p *Provider) { p.config.APIServers = n })
}

// WithEtcdLinks puts a fault proxy between each kube-apiserver and etcd
// (cluster.EtcdLinks): the lagging-apiserver scenario (S24) stalls one
// apiserver's link, and skips on a cluster without them.
func WithEtcdLinks() support.ClusterOpts {
	return option(func(p *Provider) { p.config.EtcdLinks = true })
}

// WithProfile sets the kube-apiserver flag profile: a name of
// fixtures/profiles (several joined by "+") or a YAML file.
func WithProfile(name string) support.ClusterOpts {
	return option(func(p *Provider) { p.config.Profile = name })
}

// WithEtcdVersion sets the etcd version (ETCD_VERSION, 3.5.x to 3.7.x).
func WithEtcdVersion(version string) support.ClusterOpts {
	return option(func(p *Provider) { p.config.EtcdVersion = version })
}

// WithEnv sets a variable the backend reads (cluster.Backend.Vars) for
// this cluster, over the process's environment, which it leaves alone;
// "" drops the setting.
func WithEnv(name, value string) support.ClusterOpts {
	return option(func(p *Provider) { p.config.Env = p.config.Env.With(name, value) })
}

// WithArtifactsDir sets where the cluster writes its logs (default:
// <artifacts root>/<cluster name>, report.ArtifactsRoot:
// $INFORMER_CONFORMANCE_ARTIFACTS, else ./_artifacts).
func WithArtifactsDir(dir string) support.ClusterOpts {
	return option(func(p *Provider) { p.config.ArtifactsDir = dir })
}

// WithProgress sends a line per build and lifecycle step to w (a first
// build takes minutes).
func WithProgress(w io.Writer) support.ClusterOpts {
	return option(func(p *Provider) { p.progress = w })
}

// WithName implements support.E2EClusterProvider: the cluster's name.
func (p *Provider) WithName(name string) support.E2EClusterProvider {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.name = name
	return p.self
}

// Name is the cluster's name ("" until WithName or SetDefaults).
func (p *Provider) Name() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.name
}

// WithVersion implements support.E2EClusterProvider: the kube-apiserver
// version (KUBE_VERSION: 1.31.x to 1.37.x; the local backend fetches its
// release binary or builds it, from source 1.33.x to 1.37.x only, on first
// use; kind picks the node image `make kind-image` built for it).
func (p *Provider) WithVersion(version string) support.E2EClusterProvider {
	p.config.Version = version
	return p.self
}

// WithPath implements support.E2EClusterProvider: a directory holding
// prebuilt kube-apiserver, etcd and etcdutl executables, used instead of
// building them (INFORMER_CONFORMANCE_ASSETS; the local backend).
func (p *Provider) WithPath(path string) support.E2EClusterProvider {
	p.config.Path = path
	return p.self
}

// WithOpts implements support.E2EClusterProvider.
func (p *Provider) WithOpts(opts ...support.ClusterOpts) support.E2EClusterProvider {
	for _, o := range opts {
		o(p.self)
	}
	return p.self
}

// SetDefaults implements support.E2EClusterProvider: a cluster without a
// name gets the extension's default, if any (else the backend names it).
func (p *Provider) SetDefaults() support.E2EClusterProvider {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.name = cmp.Or(p.name, p.ext.DefaultName)
	return p.self
}

// Errorf is an error of the provider, named by backend and cluster name.
func (p *Provider) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s provider %q: "+format, append([]any{p.backend, p.Name()}, args...)...)
}

// ParseArgs parses the arguments of a method (fs's name) into the flags
// defined on fs (known spells them for the error); anything else is an
// error.
func (p *Provider) ParseArgs(fs *flag.FlagSet, args []string, known string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return p.Errorf("%s arguments %q: %v (known: %s)", fs.Name(), args, err, known)
	}
	if fs.NArg() > 0 {
		return p.Errorf("%s arguments %q: unexpected %q (known: %s)", fs.Name(), args, fs.Args(), known)
	}
	return nil
}

// Create implements support.E2EClusterProvider: it prepares the backend
// (the local one builds the binaries it has not cached, kind its node
// image), starts the cluster and returns the admin kubeconfig's path once
// it is ready. Args, as flags: --apiservers=N, --etcd-links,
// --profile=NAME, --version=V and the extension's settings. On error
// nothing is left running.
func (p *Provider) Create(ctx context.Context, args ...string) (string, error) {
	cfg := p.config
	fs := flag.NewFlagSet("Create", flag.ContinueOnError)
	fs.IntVar(&cfg.APIServers, "apiservers", cfg.APIServers, "kube-apiservers")
	fs.BoolVar(&cfg.EtcdLinks, "etcd-links", cfg.EtcdLinks, "a fault proxy between each kube-apiserver and etcd")
	fs.StringVar(&cfg.Profile, "profile", cfg.Profile, "kube-apiserver flag profile")
	fs.StringVar(&cfg.Version, "version", cfg.Version, "kube-apiserver version")
	known := "--apiservers=N, --etcd-links, --profile=NAME, --version=V"
	for _, s := range p.ext.Settings {
		fs.Func(s.Name, s.Usage, func(v string) error { cfg.Env = cfg.Env.With(s.Var, v); return nil })
		known += fmt.Sprintf(", --%s=%s", s.Name, strings.ToUpper(s.Name))
	}
	if err := p.ParseArgs(fs, args, known); err != nil {
		return "", err
	}
	return p.create(ctx, cfg)
}

// CreateWithConfig implements support.E2EClusterProvider: Create with the
// Config read from a YAML file, and the extension's settings.
func (p *Provider) CreateWithConfig(ctx context.Context, configFile string) (string, error) {
	data, err := os.ReadFile(configFile)
	if err != nil {
		return "", p.Errorf("config: %v", err)
	}
	cfg := p.config
	if len(p.ext.Settings) > 0 {
		// The settings' fields out, the rest decoded strictly.
		var fields map[string]any
		if err := yaml.Unmarshal(data, &fields); err != nil {
			return "", p.Errorf("config %s: %v%s", configFile, err, p.ext.ConfigHint)
		}
		for _, s := range p.ext.Settings {
			if v, ok := fields[s.Name]; ok {
				str, ok := v.(string)
				if !ok {
					return "", p.Errorf("config %s: %s: %v is not a string", configFile, s.Name, v)
				}
				cfg.Env = cfg.Env.With(s.Var, str)
				delete(fields, s.Name)
			}
		}
		if data, err = json.Marshal(fields); err != nil {
			return "", p.Errorf("config %s: %v", configFile, err)
		}
	}
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return "", p.Errorf("config %s: %v%s", configFile, err, p.ext.ConfigHint)
	}
	return p.create(ctx, cfg)
}

func (p *Provider) create(ctx context.Context, cfg Config) (string, error) {
	b, ok := cluster.LookupBackend(p.backend)
	if !ok {
		return "", p.Errorf("no backend %q registered (registered: %s): import the package that registers it "+
			"(github.com/informer-conformance/informer-conformance/cluster/local, cluster/kind, cluster/existing; cluster/backends all three)",
			p.backend, cmp.Or(strings.Join(cluster.BackendNames(), ", "), "none"))
	}
	if p.ext.Check != nil {
		if err := p.ext.Check(cfg); err != nil {
			return "", p.Errorf("%w", err)
		}
	}
	if err := p.beforeCreate(); err != nil {
		return "", err
	}
	spec, err := p.spec(b, cfg)
	if err != nil {
		return "", err
	}
	env, err := p.env(b, cfg)
	if err != nil {
		return "", err
	}
	name := p.Name()
	if name == "" && p.ext.NewName != nil {
		name = p.ext.NewName()
	}
	dir := cfg.ArtifactsDir
	if dir == "" {
		dir = filepath.Join(report.ArtifactsRoot(), cmp.Or(name, b.Name+"-"+utilrand.String(6)))
	}
	progress := p.progress
	if progress == nil {
		progress = io.Discard
	}
	h := cluster.Harness{Env: env, Name: name, ArtifactsDir: dir, Progress: progress,
		ProcessDir: func(n string) string { return filepath.Join(dir, n) },
		Warn:       func(msg string) { fmt.Fprintf(os.Stderr, "WARNING: %s provider %q: %s\n", b.Name, name, msg) },
	}
	// Should the test binary's parent (go test) die, a build and the
	// cluster go too.
	lifetime.ExitWithParent()
	if err := prepare(ctx, b, h); err != nil {
		return "", p.Errorf("%w", err)
	}
	startCtx := ctx
	if b.StartTimeout > 0 {
		var cancel context.CancelFunc
		startCtx, cancel = context.WithTimeout(ctx, b.StartTimeout)
		defer cancel()
	}
	c, err := b.Start(startCtx, spec, h)
	if err != nil {
		return "", p.Errorf("%w", err)
	}
	kc, err := p.created(c)
	if err != nil {
		_ = c.Close(context.WithoutCancel(ctx))
		return "", err
	}
	return kc, nil
}

// spec is the cluster.Spec cfg asks for, or why b cannot start it.
func (p *Provider) spec(b cluster.Backend, cfg Config) (cluster.Spec, error) {
	spec := cluster.Spec{APIServers: cmp.Or(cfg.APIServers, 1), EtcdLinks: cfg.EtcdLinks, Profile: cfg.Profile}
	if spec.APIServers < 1 || spec.APIServers > MaxAPIServers {
		return spec, p.Errorf("%d kube-apiservers: choose 1 to %d", cfg.APIServers, MaxAPIServers)
	}
	if spec.Profile != "" {
		// Before a build, which would be minutes for nothing.
		if _, err := profile.Load(spec.Profile); err != nil {
			return spec, p.Errorf("profile %q: %w", spec.Profile, err)
		}
	}
	if why := b.Supports(spec); why != "" {
		return spec, p.Errorf("the %s backend cannot give this cluster %s", b.Name, why)
	}
	return spec, nil
}

// env is the backend's configuration: its variables from the process's
// environment, those cfg sets over them, each value checked
// (cluster.ReadEnv). A variable cfg sets that the backend does not read is
// an error; so, when cfg asks for a kube-apiserver version, is a backend
// that runs another (the binaries of a path).
func (p *Provider) env(b cluster.Backend, cfg Config) (cluster.Env, error) {
	set := cfg.Env
	if cfg.Path != "" {
		abs, err := filepath.Abs(cfg.Path) // the test's directory, not the command's
		if err != nil {
			return nil, p.Errorf("path %s: %w", cfg.Path, err)
		}
		set = set.With(binaries.EnvAssets, abs)
	}
	set = set.With(binaries.EnvKubeVersion, cmp.Or(cfg.Version, set.Get(binaries.EnvKubeVersion)))
	set = set.With(binaries.EnvEtcdVersion, cmp.Or(cfg.EtcdVersion, set.Get(binaries.EnvEtcdVersion)))
	reads := cluster.VarNames(b.Vars...)
	var foreign []string
	for name, v := range set {
		if !slices.Contains(reads, name) {
			foreign = append(foreign, fmt.Sprintf("%s=%q", name, v))
		}
	}
	if len(foreign) > 0 {
		slices.Sort(foreign)
		return nil, p.Errorf("the %s backend does not read %s (it reads %s)", b.Name, strings.Join(foreign, ", "), strings.Join(reads, ", "))
	}
	env, err := cluster.ReadEnv(func(name string) string {
		if v, ok := set[name]; ok {
			return v
		}
		return os.Getenv(name)
	}, b.Vars...)
	if err != nil {
		return nil, p.Errorf("%w", err)
	}
	if asked := set.Get(binaries.EnvKubeVersion); asked != "" && b.KubeAPIServerVersion != nil {
		if runs := b.KubeAPIServerVersion(env); runs != "" && strings.TrimPrefix(runs, "v") != strings.TrimPrefix(asked, "v") {
			where := ""
			if path := env.Get(binaries.EnvAssets); path != "" {
				where = " (the one in " + path + ")"
			}
			return nil, p.Errorf("version %s asked, but the %s backend runs kube-apiserver %s%s", asked, b.Name, runs, where)
		}
	}
	return env, nil
}

var (
	preparedMu sync.Mutex
	// prepared holds a backend and configuration whose Prepare succeeded
	// in this process.
	prepared = map[string]bool{}
)

// prepare runs b's Prepare, once per process and configuration.
func prepare(ctx context.Context, b cluster.Backend, h cluster.Harness) error {
	if b.Prepare == nil {
		return nil
	}
	key := b.Name + fmt.Sprint(h.Env) // fmt sorts a map's keys
	preparedMu.Lock()
	defer preparedMu.Unlock()
	if prepared[key] {
		return nil
	}
	if err := b.Prepare(ctx, h); err != nil {
		return err
	}
	prepared[key] = true
	return nil
}

// beforeCreate says why a Create cannot go ahead: the provider already
// made a cluster or was destroyed.
func (p *Provider) beforeCreate() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.destroyed:
		return fmt.Errorf("%s provider %q: used after Destroy (make a new provider for a new cluster)", p.backend, p.name)
	case p.c != nil:
		return fmt.Errorf("%s provider %q: already created its cluster %s (make a new provider for a second one)", p.backend, p.name, p.c.Name())
	}
	return nil
}

// created records the cluster Create started and registers it for the
// scenario features; it returns the admin kubeconfig's path.
func (p *Provider) created(c cluster.Cluster) (string, error) {
	kc, err := c.KubeconfigPath(cluster.Admin)
	if err != nil {
		return "", p.Errorf("%w", err)
	}
	p.mu.Lock()
	p.c, p.kubeconfig = c, kc
	p.mu.Unlock()
	register(kc, c)
	return kc, nil
}

// Cluster is the created cluster, or an error before Create or after
// Destroy.
func (p *Provider) Cluster() (cluster.Cluster, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.destroyed:
		return nil, fmt.Errorf("%s provider %q: used after Destroy", p.backend, p.name)
	case p.c == nil:
		return nil, fmt.Errorf("%s provider %q: no cluster yet (call Create, or envfuncs.CreateCluster, first)", p.backend, p.name)
	}
	return p.c, nil
}
