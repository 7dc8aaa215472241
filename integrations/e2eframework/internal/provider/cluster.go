package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/klient"

	"github.com/informer-conformance/informer-conformance/cluster"
)

// ReadyTimeout bounds WaitForControlPlane when its context has no deadline.
const ReadyTimeout = 2 * time.Minute

// GetKubeconfig implements support.E2EClusterProvider: the admin kubeconfig's path, "" before
// Create and after Destroy (the interface has no error to return).
func (p *Provider) GetKubeconfig() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed {
		return ""
	}
	return p.kubeconfig
}

// GenerateKubeconfig implements support.E2EClusterProvider. It writes nothing new: the backends keep a kubeconfig
// per user. Args: none (the admin user) or "--user=admin" /
// "--user=test-user" (the least-privileged user the scenarios' informers
// run as).
func (p *Provider) GenerateKubeconfig(args ...string) (string, error) {
	c, err := p.Cluster()
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
			return "", fmt.Errorf("%s provider %q: GenerateKubeconfig: unknown argument %q (known: --user=%s, --user=%s)", p.backend, p.name, a, cluster.Admin, cluster.TestUser)
		}
	}
	return c.KubeconfigPath(u)
}

// GetKubectlContext implements support.E2EClusterProvider: the admin kubeconfig's current context, "" if none.
func (p *Provider) GetKubectlContext() string {
	kc := p.GetKubeconfig()
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
func (p *Provider) KubernetesRestConfig() *rest.Config {
	c, err := p.Cluster()
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
func (p *Provider) ExportLogs(ctx context.Context, dest string) error {
	c, err := p.Cluster()
	if err != nil {
		return err
	}
	x, ok := c.(cluster.LogExporter)
	if !ok {
		return fmt.Errorf("%s provider %q: cluster %s cannot export logs", p.backend, p.name, c.Name())
	}
	return x.ExportLogs(ctx, dest)
}

// Destroy implements support.E2EClusterProvider: it stops the cluster and removes what it wrote (its logs stay where
// they were exported); later calls of the provider fail saying so.
func (p *Provider) Destroy(ctx context.Context) error {
	p.mu.Lock()
	c, kc, destroyed := p.c, p.kubeconfig, p.destroyed
	p.destroyed = true
	p.mu.Unlock()
	switch {
	case destroyed:
		return fmt.Errorf("%s provider %q: used after Destroy (destroyed already)", p.backend, p.name)
	case c == nil:
		return fmt.Errorf("%s provider %q: nothing to destroy (Create never succeeded)", p.backend, p.name)
	}
	unregister(kc)
	return c.Close(ctx)
}

// WaitForControlPlane implements support.E2EClusterProvider: it waits until every kube-apiserver of the cluster
// answers GET /readyz with 200 (the interface's client reaches only the
// first), within ctx's deadline or ReadyTimeout. Nothing waits for pods:
// the local backend has no nodes, and the scenarios need only the API.
func (p *Provider) WaitForControlPlane(ctx context.Context, client klient.Client) error {
	c, err := p.Cluster()
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
			return fmt.Errorf("%s provider %q: WaitForControlPlane: no client", p.backend, p.name)
		}
		cfgs = []*rest.Config{client.RESTConfig()}
	}
	for _, cfg := range cfgs {
		if err := waitReadyz(ctx, cfg); err != nil {
			return fmt.Errorf("%s provider %q: control plane of %s not ready: %w", p.backend, p.name, c.Name(), err)
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
