// Package provider is what the local and kind providers share: the state
// of a created cluster, the methods of support.E2EClusterProvider that do
// not depend on the backend, and the registry through which the scenario
// features find the cluster behind an e2e-framework kubeconfig.
package provider

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/support"
	"sigs.k8s.io/yaml"

	"github.com/informer-conformance/informer-conformance/cluster"
)

// ReadyTimeout bounds WaitForControlPlane when its context has no deadline.
const ReadyTimeout = 2 * time.Minute

// State is one provider's cluster, created at most once and destroyed
// once. A provider embeds it for the methods of support.E2EClusterProvider
// that do not depend on its backend.
type State struct {
	// Backend names the provider in messages ("local", "kind").
	Backend string

	// ArtifactsDir and Progress are what the options common to the
	// providers set (WithArtifactsDir, WithProgress).
	ArtifactsDir string
	Progress     io.Writer

	mu         sync.Mutex
	name       string
	c          cluster.Cluster
	kubeconfig string
	destroyed  bool
}

// Base is the State a provider embeds, for the options common to them.
func (s *State) Base() *State { return s }

// WithArtifactsDir is a support.ClusterOpts of both providers: where the
// cluster's logs go.
func WithArtifactsDir(dir string) support.ClusterOpts {
	return func(p support.E2EClusterProvider) {
		if b, ok := p.(interface{ Base() *State }); ok {
			b.Base().ArtifactsDir = dir
		}
	}
}

// WithProgress is a support.ClusterOpts of both providers: a line per
// build and lifecycle step goes to w (a first build takes minutes).
func WithProgress(w io.Writer) support.ClusterOpts {
	return func(p support.E2EClusterProvider) {
		if b, ok := p.(interface{ Base() *State }); ok {
			b.Base().Progress = w
		}
	}
}

// Errorf is an error of the provider, named by backend and cluster name.
func (s *State) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s provider %q: "+format, append([]any{s.Backend, s.Name()}, args...)...)
}

// ParseArgs parses Create's arguments, flags defined on fs (known spells
// them for the error); anything else is an error.
func (s *State) ParseArgs(fs *flag.FlagSet, args []string, known string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return s.Errorf("Create arguments %q: %v (known: %s)", args, err, known)
	}
	if fs.NArg() > 0 {
		return s.Errorf("Create arguments %q: unexpected %q (known: %s)", args, fs.Args(), known)
	}
	return nil
}

// ReadConfig reads CreateWithConfig's YAML file into cfg, refusing
// unknown fields; hint follows a refusal.
func (s *State) ReadConfig(file string, cfg any, hint string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return s.Errorf("config: %v", err)
	}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return s.Errorf("config %s: %v%s", file, err, hint)
	}
	return nil
}

// SetName records the cluster's name (WithName).
func (s *State) SetName(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.name = name
}

// Name is the cluster's name ("" until WithName or SetDefaults).
func (s *State) Name() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.name
}

// BeforeCreate says why a Create cannot go ahead: the provider already
// made a cluster or was destroyed.
func (s *State) BeforeCreate() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.destroyed:
		return fmt.Errorf("%s provider %q: used after Destroy (make a new provider for a new cluster)", s.Backend, s.name)
	case s.c != nil:
		return fmt.Errorf("%s provider %q: already created its cluster %s (make a new provider for a second one)", s.Backend, s.name, s.c.Name())
	}
	return nil
}

// Created records the cluster Create started and registers it for the
// scenario features; it returns the admin kubeconfig's path.
func (s *State) Created(c cluster.Cluster) (string, error) {
	kc, err := c.KubeconfigPath(cluster.Admin)
	if err != nil {
		return "", fmt.Errorf("%s provider %q: %w", s.Backend, s.name, err)
	}
	s.mu.Lock()
	s.c, s.kubeconfig = c, kc
	s.mu.Unlock()
	register(kc, c)
	return kc, nil
}

// Cluster is the created cluster, or an error before Create or after
// Destroy.
func (s *State) Cluster() (cluster.Cluster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.destroyed:
		return nil, fmt.Errorf("%s provider %q: used after Destroy", s.Backend, s.name)
	case s.c == nil:
		return nil, fmt.Errorf("%s provider %q: no cluster yet (call Create, or envfuncs.CreateCluster, first)", s.Backend, s.name)
	}
	return s.c, nil
}

// GetKubeconfig implements support.E2EClusterProvider: the admin kubeconfig's path, "" before
// Create and after Destroy (the interface has no error to return).
func (s *State) GetKubeconfig() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.destroyed {
		return ""
	}
	return s.kubeconfig
}

// GenerateKubeconfig implements support.E2EClusterProvider. It writes nothing new: the backends keep a kubeconfig
// per user. Args: none (the admin user) or "--user=admin" /
// "--user=test-user" (the least-privileged user the scenarios' informers
// run as).
func (s *State) GenerateKubeconfig(args ...string) (string, error) {
	c, err := s.Cluster()
	if err != nil {
		return "", err
	}
	u := cluster.Admin
	for _, a := range args {
		switch a {
		case "--user=" + string(cluster.Admin):
			u = cluster.Admin
		case "--user=" + string(cluster.TestUser):
			u = cluster.TestUser
		default:
			return "", fmt.Errorf("%s provider %q: GenerateKubeconfig: unknown argument %q (known: --user=%s, --user=%s)", s.Backend, s.name, a, cluster.Admin, cluster.TestUser)
		}
	}
	return c.KubeconfigPath(u)
}

// GetKubectlContext implements support.E2EClusterProvider: the admin kubeconfig's current context, "" if none.
func (s *State) GetKubectlContext() string {
	kc := s.GetKubeconfig()
	if kc == "" {
		return ""
	}
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		return ""
	}
	return cfg.CurrentContext
}

// KubernetesRestConfig implements support.E2EClusterProvider: the admin user's, nil before Create
// and after Destroy (the interface has no error to return).
func (s *State) KubernetesRestConfig() *rest.Config {
	c, err := s.Cluster()
	if err != nil {
		return nil
	}
	cfg, err := c.RESTConfig(cluster.Admin)
	if err != nil {
		return nil
	}
	return cfg
}

// ExportLogs implements support.E2EClusterProvider: it writes the cluster's logs into dest.
func (s *State) ExportLogs(ctx context.Context, dest string) error {
	c, err := s.Cluster()
	if err != nil {
		return err
	}
	x, ok := c.(cluster.LogExporter)
	if !ok {
		return fmt.Errorf("%s provider %q: cluster %s cannot export logs", s.Backend, s.name, c.Name())
	}
	return x.ExportLogs(ctx, dest)
}

// Destroy implements support.E2EClusterProvider: it stops the cluster and removes what it wrote (its logs stay where
// they were exported); later calls of the provider fail saying so.
func (s *State) Destroy(ctx context.Context) error {
	s.mu.Lock()
	c, kc, destroyed := s.c, s.kubeconfig, s.destroyed
	s.destroyed = true
	s.mu.Unlock()
	switch {
	case destroyed:
		return fmt.Errorf("%s provider %q: used after Destroy (destroyed already)", s.Backend, s.name)
	case c == nil:
		return fmt.Errorf("%s provider %q: nothing to destroy (Create never succeeded)", s.Backend, s.name)
	}
	unregister(kc)
	return c.Close(ctx)
}

// WaitForControlPlane implements support.E2EClusterProvider: it waits until every kube-apiserver of the cluster
// answers GET /readyz with 200 (the interface's client reaches only the
// first), within ctx's deadline or ReadyTimeout. Nothing waits for pods:
// the local backend has no nodes, and the scenarios need only the API.
func (s *State) WaitForControlPlane(ctx context.Context, client klient.Client) error {
	c, err := s.Cluster()
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ReadyTimeout)
		defer cancel()
	}
	var cfgs []*rest.Config
	if a, ok := c.(cluster.APIServerController); ok {
		for i := range a.NumAPIServers() {
			cfg, err := c.RESTConfigFor(cluster.Admin, a.APIServerURL(i))
			if err != nil {
				return err
			}
			cfgs = append(cfgs, cfg)
		}
	}
	if len(cfgs) == 0 {
		if client == nil {
			return fmt.Errorf("%s provider %q: WaitForControlPlane: no client", s.Backend, s.name)
		}
		cfgs = []*rest.Config{client.RESTConfig()}
	}
	for _, cfg := range cfgs {
		if err := waitReadyz(ctx, cfg); err != nil {
			return fmt.Errorf("%s provider %q: control plane of %s not ready: %w", s.Backend, s.name, c.Name(), err)
		}
	}
	return nil
}

func waitReadyz(ctx context.Context, cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 5 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	rc := cs.Discovery().RESTClient()
	var last error
	for {
		var code int
		body, err := rc.Get().AbsPath("/readyz").Do(ctx).StatusCode(&code).Raw()
		switch {
		case err == nil && code == http.StatusOK:
			return nil
		case err != nil:
			last = err
		default:
			last = fmt.Errorf("%s /readyz answered %d: %s", cfg.Host, code, body)
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

var (
	registryMu sync.Mutex
	registry   = map[string]cluster.Cluster{}
)

func register(kubeconfig string, c cluster.Cluster) {
	registryMu.Lock()
	defer registryMu.Unlock()
	registry[kubeconfig] = c
}

func unregister(kubeconfig string) {
	registryMu.Lock()
	defer registryMu.Unlock()
	delete(registry, kubeconfig)
}

// Lookup is the cluster a provider of this module created with the given
// admin kubeconfig, if it is not destroyed.
func Lookup(kubeconfig string) (cluster.Cluster, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	c, ok := registry[kubeconfig]
	return c, ok
}
