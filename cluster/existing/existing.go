// Package existing is the backend for a cluster somebody else runs: a
// kubeconfig and nothing more. It implements cluster.Cluster and
// cluster.Addressable (a fault proxy in front of its server) but no fault
// capability, so every spec that needs to restart, compact or restore
// something skips on it, naming the capability; the specs that only break
// the client's own connection (through the fault proxy) or its
// configuration run.
//
// Both users are the kubeconfig's identity: a cluster we did not set up has
// no least-privileged test user of ours.
package existing

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/informer-conformance/informer-conformance/cluster"
)

// EnvKubeconfig names the kubeconfig for the existing backend; KUBECONFIG
// is used when it is unset.
const EnvKubeconfig = "INFORMER_CONFORMANCE_KUBECONFIG"

// Cluster is a cluster reached through a kubeconfig.
type Cluster struct {
	path, artifacts string
	cfg             *rest.Config
	version         string
	missing         []string // files of a KUBECONFIG list that were not there
	crdErr          error    // why the suite's CRDs are not installed, nil if they are
}

// Options select the kubeconfig.
type Options struct {
	// Kubeconfig is the file (default: $INFORMER_CONFORMANCE_KUBECONFIG,
	// then KubeconfigList).
	Kubeconfig string
	// KubeconfigList is a list of files merged as kubectl does, in the
	// form of $KUBECONFIG (default: $KUBECONFIG).
	KubeconfigList string
	// Context in the kubeconfig (default: its current context).
	Context string
	// ArtifactsDir is where the backend would write logs (it has none of its
	// own; specs write their records there).
	ArtifactsDir string
}

// Connect loads the kubeconfig and checks that its server answers. There
// is no fallback to ~/.kube/config: specs that create and delete objects
// run only against a cluster somebody named.
func Connect(ctx context.Context, opts Options) (*Cluster, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: opts.Kubeconfig}
	if rules.ExplicitPath == "" {
		rules.ExplicitPath = os.Getenv(EnvKubeconfig)
	}
	path := rules.ExplicitPath
	if path == "" {
		// KUBECONFIG may list several files, merged as kubectl does.
		path = cmp.Or(opts.KubeconfigList, os.Getenv(clientcmd.RecommendedConfigPathEnvVar))
		rules.Precedence = filepath.SplitList(path)
	}
	if path == "" {
		return nil, fmt.Errorf("existing backend: no kubeconfig: set %s or KUBECONFIG", EnvKubeconfig)
	}
	// client-go skips the missing files of a list and, when none is left,
	// says only "no configuration has been provided": name them instead.
	missing, err := someFileExists(path)
	if err != nil {
		return nil, fmt.Errorf("existing backend: %w", err)
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: opts.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("existing backend: kubeconfig %s: %w", path, err)
	}
	if _, _, err := net.SplitHostPort(hostPort(cfg.Host)); err != nil {
		return nil, fmt.Errorf("existing backend: kubeconfig %s: server %q has no host:port: %w", path, cfg.Host, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("existing backend: %w", err)
	}
	// discovery's ServerVersion takes no context: the same GET, bounded by ctx.
	var v version.Info
	body, err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err == nil {
		err = json.Unmarshal(body, &v)
	}
	if err != nil {
		return nil, fmt.Errorf("existing backend: the server of kubeconfig %s (%s) does not answer: %w", path, cfg.Host, err)
	}
	c := &Cluster{path: path, artifacts: opts.ArtifactsDir, cfg: cfg, version: v.GitVersion, missing: missing}
	// Not a reason to refuse the cluster: only the specs on the CRD stacks
	// need them (CRDsInstalled), the others run.
	if err := cluster.InstallCRDs(ctx, cfg); err != nil {
		c.crdErr = fmt.Errorf("existing backend: kubeconfig %s: %w", path, err)
	}
	return c, nil
}

// CRDsInstalled implements cluster.CustomResources: nil when Connect
// installed the suite's CRDs (or found them installed), else its error; a
// Forbidden one (apierrors.IsForbidden) when the kubeconfig's user may not
// create CustomResourceDefinitions.
func (c *Cluster) CRDsInstalled() error { return c.crdErr }

// MissingKubeconfigs names the files of a KUBECONFIG list that were not
// there when connecting. Like kubectl, Connect merges the files that are and
// ignores the others; a caller should say so, since a typo in one entry of
// a list otherwise silently picks another file's cluster or context.
func (c *Cluster) MissingKubeconfigs() []string { return c.missing }

// someFileExists checks that the kubeconfig path, a file or a list of
// files (KUBECONFIG), names at least one file that is there (kubectl, too,
// ignores the missing files of a list), and names every missing one if not.
// It returns the missing files of a list that has some file that exists.
func someFileExists(path string) (missing []string, err error) {
	var errs []string
	found := false
	for _, f := range filepath.SplitList(path) {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
			errs = append(errs, err.Error())
			continue
		}
		found = true
	}
	switch {
	case found:
		return missing, nil
	case len(errs) == 0:
		return nil, fmt.Errorf("kubeconfig %q names no file", path)
	}
	return nil, fmt.Errorf("kubeconfig %s names no file that exists: %s", path, strings.Join(errs, "; "))
}

// Name implements cluster.Cluster.
func (c *Cluster) Name() string { return "existing(" + c.cfg.Host + ")" }

// ServerVersion implements cluster.ServerVersioner: the server's
// gitVersion, read when connecting.
func (c *Cluster) ServerVersion() string { return c.version }

// RESTConfig implements cluster.Cluster: the kubeconfig's identity for both
// users.
func (c *Cluster) RESTConfig(u cluster.User) (*rest.Config, error) {
	if err := knownUser(u); err != nil {
		return nil, err
	}
	return rest.CopyConfig(c.cfg), nil
}

func knownUser(u cluster.User) error {
	if u != cluster.Admin && u != cluster.TestUser {
		return fmt.Errorf("no credentials for user %q", u)
	}
	return nil
}

// RESTConfigFor is RESTConfig for a client that reaches the server at host
// (a fault proxy passing TLS through): the server's certificate is still
// checked against the kubeconfig's server name.
func (c *Cluster) RESTConfigFor(u cluster.User, host string) (*rest.Config, error) {
	cfg, err := c.RESTConfig(u)
	if err != nil {
		return nil, err
	}
	if cfg.TLSClientConfig.ServerName == "" {
		h, _, err := net.SplitHostPort(hostPort(c.cfg.Host))
		if err != nil {
			return nil, err
		}
		cfg.TLSClientConfig.ServerName = h
	}
	cfg.Host = host
	return cfg, nil
}

// APIServerAddr is the server's host:port, a fault proxy's upstream.
func (c *Cluster) APIServerAddr() string { return hostPort(c.cfg.Host) }

// APIServerAddrs implements cluster.Addressable: the one server's host:port.
func (c *Cluster) APIServerAddrs() []string { return []string{c.APIServerAddr()} }

// KubeconfigPath implements cluster.Cluster: the kubeconfig file, if it is
// one file.
func (c *Cluster) KubeconfigPath(u cluster.User) (string, error) {
	if err := knownUser(u); err != nil {
		return "", err
	}
	if len(filepath.SplitList(c.path)) > 1 {
		return "", fmt.Errorf("the kubeconfig is several files (%s), not one path", c.path)
	}
	return c.path, nil
}

// ArtifactsDir implements cluster.Cluster.
func (c *Cluster) ArtifactsDir() string { return c.artifacts }

// Close implements cluster.Cluster: nothing was started.
func (c *Cluster) Close(context.Context) error { return nil }

// hostPort is the host:port of a server URL (port defaulted from the scheme).
func hostPort(server string) string {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return server
	}
	if u.Port() != "" {
		return u.Host
	}
	port := "443"
	if u.Scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

var (
	_ cluster.Cluster         = (*Cluster)(nil)
	_ cluster.Addressable     = (*Cluster)(nil)
	_ cluster.ServerVersioner = (*Cluster)(nil)
	_ cluster.CustomResources = (*Cluster)(nil)
)
