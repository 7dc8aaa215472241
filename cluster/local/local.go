// Package local is the suite's default backend: a real control plane (one
// etcd, one or more kube-apiservers) run as local processes from binaries
// built from pinned upstream source (package binaries). No Docker, no root;
// ready in about three seconds.
//
// It is plain Go returning errors. Every process dies with the program that
// started it (see internal/process); ports are reserved machine-wide so
// parallel test processes never collide (see internal/ports). A restart keeps
// the data directory, the port and the certificates, so clients see the same
// server come back.
package local

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
	"github.com/informer-conformance/informer-conformance/cluster/internal/ports"
	"github.com/informer-conformance/informer-conformance/cluster/internal/process"
	"github.com/informer-conformance/informer-conformance/cluster/lifetime"
)

// EnvArtifacts, when set, is the default parent of every cluster's logs.
const EnvArtifacts = "INFORMER_CONFORMANCE_ARTIFACTS"

// Default timeouts; Options override them.
const (
	DefaultReadyTimeout = 60 * time.Second
	// DefaultGracefulTimeout bounds a graceful stop. kube-apiserver with
	// default flags keeps open watches for its 60 s shutdown timeout.
	DefaultGracefulTimeout = 90 * time.Second
	readyPollInterval      = 25 * time.Millisecond
)

// Options configure a cluster. The zero value is a single apiserver with the
// default versions, in a fresh temporary directory.
type Options struct {
	// Name labels the cluster's directories and logs (default "local-<random>").
	Name string
	// Versions to run when Binaries is empty (default: binaries.FromEnv()).
	Versions binaries.Versions
	// Binaries to run; when empty they are built or found by binaries.Ensure.
	Binaries binaries.Paths
	// APIServers is the number of kube-apiservers over the one etcd (default 1).
	APIServers int
	// Profile adds kube-apiserver flags and feature gates.
	Profile Profile
	// WorkDir holds certificates, kubeconfigs and etcd data (default: a new
	// temporary directory, removed by Close unless KeepWorkDir).
	WorkDir     string
	KeepWorkDir bool
	// ArtifactsDir receives the processes' logs (default:
	// $INFORMER_CONFORMANCE_ARTIFACTS/<name>, else <WorkDir>/logs).
	ArtifactsDir string
	// ExtraSANs are added to the apiserver serving certificate (IPs or DNS names).
	ExtraSANs []string
	// ReadyTimeout bounds waiting for a process to be ready (default 60 s).
	ReadyTimeout time.Duration
	// GracefulTimeout bounds a graceful stop before SIGKILL (default 90 s).
	GracefulTimeout time.Duration
	// Progress receives a line per lifecycle step (default: discarded).
	Progress io.Writer
}

// Cluster is a running local control plane. Its methods are safe for
// concurrent use; lifecycle operations are serialised.
type Cluster struct {
	opts Options
	name string
	bins binaries.Paths
	work string
	logs string
	pki  *pki

	apiserverCert, etcdServerCert, etcdClientCert keyPair
	userCerts                                     map[cluster.User]keyPair
	saKey                                         string
	kubeconfigs                                   map[cluster.User]string

	// What the apiservers trust and are trusted with (rotate.go): the CA
	// of --client-ca-file, and the CA file clients verify the apiservers'
	// serving certificate with. Both start as the cluster CA (which etcd
	// keeps); a rotation replaces them. Guarded by mu once started.
	clientCAFile, serverCAFile string
	servingSpec                certSpec
	userSpecs                  map[cluster.User]certSpec
	rotations, fileKubeconfigs int

	etcdPort, etcdPeerPort *ports.Reservation
	etcdDataDir            string
	restores               int

	mu   sync.Mutex // lifecycle
	etcd *process.Process
	// etcdDown ends the faultlog window a stop of etcd opened.
	etcdDown   func()
	apiservers []*apiserver
	etcdClient *clientv3.Client
	closed     bool
	owner      *flock.Flock // held while the default work dir is in use
	unregister func()       // of the work dir's removal on parent death
}

type apiserver struct {
	index   int
	port    *ports.Reservation
	certDir string
	proc    *process.Process
	// down ends the faultlog window a stop opened (nil when none is open).
	down func()
}

// up closes a's faultlog window, if a stop opened one.
func (a *apiserver) up() {
	if a.down != nil {
		a.down()
		a.down = nil
	}
}

var (
	_ cluster.Cluster             = (*Cluster)(nil)
	_ cluster.APIServerController = (*Cluster)(nil)
	_ cluster.EtcdController      = (*Cluster)(nil)
	_ cluster.EtcdCompactor       = (*Cluster)(nil)
	_ cluster.EtcdSnapshotter     = (*Cluster)(nil)
	_ cluster.Addressable         = (*Cluster)(nil)
	_ cluster.ProcessInspector    = (*Cluster)(nil)
	_ cluster.CertRotator         = (*Cluster)(nil)
	_ cluster.CustomResources     = (*Cluster)(nil)
)

// Start creates and starts a cluster and returns when etcd and every
// kube-apiserver are ready. On error nothing it started is left behind.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.APIServers == 0 {
		opts.APIServers = 1
	}
	if opts.APIServers < 0 {
		return nil, fmt.Errorf("start local cluster: APIServers must be positive, got %d", opts.APIServers)
	}
	if err := opts.Profile.Validate(); err != nil {
		return nil, fmt.Errorf("start local cluster: %w", err)
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.GracefulTimeout == 0 {
		opts.GracefulTimeout = DefaultGracefulTimeout
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Name == "" {
		opts.Name = "local-" + utilrand.String(6)
	}
	bins := opts.Binaries
	if bins.KubeAPIServer == "" || bins.Etcd == "" || bins.Etcdutl == "" {
		v := opts.Versions
		if v == (binaries.Versions{}) {
			if v, err = binaries.FromEnv(); err != nil {
				return nil, fmt.Errorf("start local cluster: %w", err)
			}
		}
		if bins, err = binaries.Ensure(ctx, v, binaries.Options{Progress: opts.Progress}); err != nil {
			return nil, fmt.Errorf("start local cluster: %w", err)
		}
	}

	c = &Cluster{opts: opts, name: opts.Name, bins: bins}
	defer func() {
		if err != nil {
			_ = c.Close(context.WithoutCancel(ctx))
			c = nil
		}
	}()
	if err := c.prepare(); err != nil {
		return c, fmt.Errorf("start local cluster %s: %w", c.name, err)
	}
	start := time.Now()
	// etcd and the apiservers start at once: kube-apiserver spends its first
	// second on CPU-bound set-up before it needs etcd, and its etcd client
	// retries. c is not shared yet, so the two need no lock between them.
	startCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	etcdDone := make(chan error, 1)
	go func() {
		err := c.startEtcdLocked(startCtx)
		if err != nil {
			cancel(err)
		}
		etcdDone <- err
	}()
	// The first apiserver bootstraps the empty etcd alone: two bootstrapping
	// at once race (kube-apiserver 1.33 exits with "cannot create cluster IP
	// allocator: ... another caller has already initialized the resource").
	// Real HA control planes join one by one, too.
	apiErr := c.startAPIServersLocked(startCtx, []int{0})
	if err := <-etcdDone; err != nil {
		return c, err
	}
	if apiErr != nil {
		return c, apiErr
	}
	if rest := c.allIndexes()[1:]; len(rest) > 0 {
		if err := c.startAPIServersLocked(ctx, rest); err != nil {
			return c, err
		}
	}
	if err := c.grantTestUser(ctx); err != nil {
		return c, fmt.Errorf("start local cluster %s: %w", c.name, err)
	}
	if err := c.installCRDs(ctx); err != nil {
		return c, fmt.Errorf("start local cluster %s: %w", c.name, err)
	}
	fmt.Fprintf(opts.Progress, "local cluster %s ready in %s (kubeconfig %s)\n", c.name, time.Since(start).Round(time.Millisecond), c.kubeconfigs[cluster.Admin])
	return c, nil
}

// prepare makes directories, certificates, kubeconfigs and port reservations.
func (c *Cluster) prepare() error {
	var err error
	if c.work = c.opts.WorkDir; c.work == "" {
		ReapStale()
		if c.work, c.owner, err = newWorkDir(c.name); err != nil {
			return err
		}
		if !c.opts.KeepWorkDir {
			// Should the test process's parent die, its processes are
			// killed first (registered later), then this goes.
			work := c.work
			c.unregister = lifetime.OnParentDeath("local cluster "+c.name+" work directory", func(context.Context) error { return os.RemoveAll(work) })
		}
	} else if err := os.MkdirAll(c.work, 0o755); err != nil {
		return err
	}
	if c.logs = c.opts.ArtifactsDir; c.logs == "" {
		if a := os.Getenv(EnvArtifacts); a != "" {
			c.logs = filepath.Join(a, c.name)
		} else {
			c.logs = filepath.Join(c.work, "logs")
		}
	}
	if err := os.MkdirAll(c.logs, 0o755); err != nil {
		return err
	}
	if c.etcdPort, err = ports.Reserve(); err != nil {
		return err
	}
	if c.etcdPeerPort, err = ports.Reserve(); err != nil {
		return err
	}
	for i := range c.opts.APIServers {
		a := &apiserver{index: i, certDir: filepath.Join(c.work, fmt.Sprintf("kube-apiserver-%d", i))}
		c.apiservers = append(c.apiservers, a)
		if a.port, err = ports.Reserve(); err != nil {
			return err
		}
		if err := os.MkdirAll(a.certDir, 0o700); err != nil {
			return err
		}
	}
	c.etcdDataDir = filepath.Join(c.work, "etcd-data")
	return c.makeCredentials()
}

func (c *Cluster) makeCredentials() error {
	var err error
	if c.pki, err = newPKI(filepath.Join(c.work, "pki")); err != nil {
		return fmt.Errorf("create CA: %w", err)
	}
	loopback := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	sans := certSpec{name: "apiserver", cn: "kube-apiserver", server: true,
		ips: append(loopback, net.ParseIP("10.0.0.1")),
		dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}}
	for _, s := range c.opts.ExtraSANs {
		if ip := net.ParseIP(s); ip != nil {
			sans.ips = append(sans.ips, ip)
		} else {
			sans.dns = append(sans.dns, s)
		}
	}
	c.servingSpec = sans
	c.userSpecs = map[cluster.User]certSpec{
		cluster.Admin:    {name: "admin", cn: "informer-conformance-admin", orgs: []string{"system:masters"}, client: true},
		cluster.TestUser: {name: "test-user", cn: string(cluster.TestUser), client: true},
	}
	var admin, user keyPair
	for _, x := range []struct {
		dst  *keyPair
		spec certSpec
	}{
		{&c.apiserverCert, sans},
		{&c.etcdServerCert, certSpec{name: "etcd-server", cn: "etcd", server: true, client: true, ips: loopback, dns: []string{"localhost"}}},
		{&c.etcdClientCert, certSpec{name: "apiserver-etcd-client", cn: "kube-apiserver-etcd-client", client: true}},
		{&admin, c.userSpecs[cluster.Admin]},
		{&user, c.userSpecs[cluster.TestUser]},
	} {
		if *x.dst, err = c.pki.issue(x.spec); err != nil {
			return err
		}
	}
	c.userCerts = map[cluster.User]keyPair{cluster.Admin: admin, cluster.TestUser: user}
	c.clientCAFile = c.pki.CAFile
	c.serverCAFile = filepath.Join(c.pki.dir, "apiserver-ca.crt")
	if err := copyFile(c.pki.CAFile, c.serverCAFile); err != nil {
		return err
	}
	if c.saKey, err = c.pki.newServiceAccountKey(); err != nil {
		return err
	}
	c.kubeconfigs = map[cluster.User]string{}
	for u := range c.userCerts {
		c.kubeconfigs[u] = filepath.Join(c.work, "kubeconfig-"+string(u))
	}
	return c.writeKubeconfigs()
}

// writeKubeconfigs (re)writes the users' self-contained kubeconfigs.
func (c *Cluster) writeKubeconfigs() error {
	for u, path := range c.kubeconfigs {
		if err := clientcmd.WriteToFile(*c.kubeconfig(u, c.APIServerURL(0)), path); err != nil {
			return fmt.Errorf("write kubeconfig: %w", err)
		}
	}
	return nil
}

// kubeconfig for user against server; certificates are embedded so the file
// stands alone.
func (c *Cluster) kubeconfig(u cluster.User, server string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.name] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: c.serverCAFile}
	kp := c.userCerts[u]
	cfg.AuthInfos[string(u)] = &clientcmdapi.AuthInfo{ClientCertificate: kp.CertFile, ClientKey: kp.KeyFile}
	cfg.Contexts[c.name] = &clientcmdapi.Context{Cluster: c.name, AuthInfo: string(u)}
	cfg.CurrentContext = c.name
	_ = clientcmdapi.FlattenConfig(cfg)
	return cfg
}

// Name implements cluster.Cluster.
func (c *Cluster) Name() string { return c.name }

// ServerVersion implements cluster.ServerVersioner: the kube-apiserver
// version of its binaries (what binaries.Ensure built, or what the binary
// said of itself), "" when the caller gave binaries without versions.
func (c *Cluster) ServerVersion() string { return c.bins.Versions.KubeAPIServer }

// ProfileName implements cluster.Profiled: the name of the flag profile its
// kube-apiservers run with ("" for none).
func (c *Cluster) ProfileName() string { return c.opts.Profile.Name }

// ArtifactsDir implements cluster.Cluster.
func (c *Cluster) ArtifactsDir() string { return c.logs }

// WorkDir holds certificates, kubeconfigs and etcd data.
func (c *Cluster) WorkDir() string { return c.work }

// Binaries the cluster runs.
func (c *Cluster) Binaries() binaries.Paths { return c.bins }

// KubeconfigPath implements cluster.Cluster.
func (c *Cluster) KubeconfigPath(u cluster.User) (string, error) {
	p, ok := c.kubeconfigs[u]
	if !ok {
		return "", fmt.Errorf("no kubeconfig for user %q (have %q and %q)", u, cluster.Admin, cluster.TestUser)
	}
	return p, nil
}

// RESTConfig implements cluster.Cluster, against apiserver 0.
func (c *Cluster) RESTConfig(u cluster.User) (*rest.Config, error) {
	return c.RESTConfigFor(u, c.APIServerURL(0))
}

// RESTConfigFor returns a config for user against host, e.g. another
// apiserver or a fault proxy in front of one (its address must be covered by
// the serving certificate: 127.0.0.1 is, or add it to ExtraSANs).
func (c *Cluster) RESTConfigFor(u cluster.User, host string) (*rest.Config, error) {
	if _, ok := c.userCerts[u]; !ok {
		return nil, fmt.Errorf("no credentials for user %q", u)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*c.kubeconfig(u, host), nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("rest config for %s: %w", u, err)
	}
	return cfg, nil
}

// NumAPIServers implements cluster.APIServerController.
func (c *Cluster) NumAPIServers() int { return len(c.apiservers) }

// APIServerURL implements cluster.APIServerController.
func (c *Cluster) APIServerURL(i int) string {
	if i < 0 || i >= len(c.apiservers) {
		return ""
	}
	return "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.apiservers[i].port.Port))
}

// APIServerAddr is apiserver i's host:port, e.g. for a fault proxy's upstream.
func (c *Cluster) APIServerAddr(i int) string {
	return strings.TrimPrefix(c.APIServerURL(i), "https://")
}

// APIServerAddrs implements cluster.Addressable: every apiserver's
// host:port, in index order.
func (c *Cluster) APIServerAddrs() []string {
	addrs := make([]string, len(c.apiservers))
	for i := range addrs {
		addrs[i] = c.APIServerAddr(i)
	}
	return addrs
}

// EtcdURL is the client URL of etcd (TLS with client certificates).
func (c *Cluster) EtcdURL() string {
	return "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.etcdPort.Port))
}

func (c *Cluster) etcdPeerURL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.etcdPeerPort.Port))
}

// Pids implements cluster.ProcessInspector: the process IDs of the running
// processes by name.
func (c *Cluster) Pids() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := map[string]int{}
	if c.etcd != nil && c.etcd.Running() {
		pids["etcd"] = c.etcd.Pid()
	}
	for _, a := range c.apiservers {
		if a.proc != nil && a.proc.Running() {
			pids[a.proc.Name] = a.proc.Pid()
		}
	}
	return pids
}

func (c *Cluster) allIndexes() []int {
	idx := make([]int, len(c.apiservers))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// tlsConfig for a client presenting kp and trusting the CA in caFile.
func (c *Cluster) tlsConfig(kp keyPair, caFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(kp.CertFile, kp.KeyFile)
	if err != nil {
		return nil, err
	}
	pool, err := certPool(caFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// healthCheck returns a check that GETs url (its server verified with
// caFile) and wants 200 with want in the body.
func (c *Cluster) healthCheck(kp keyPair, caFile, url, want string) (func(context.Context) error, error) {
	tc, err := c.tlsConfig(kp, caFile)
	if err != nil {
		return nil, err
	}
	// A new connection per probe: a restarted server must be probed afresh.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK || !containsFold(string(body), want) {
			return fmt.Errorf("%s: %s: %s", url, resp.Status, body)
		}
		return nil
	}, nil
}

// StartEtcd implements cluster.EtcdController: it starts etcd on its data
// directory and returns when /health is ok.
func (c *Cluster) StartEtcd(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startEtcdLocked(ctx)
}

func (c *Cluster) startEtcdLocked(ctx context.Context) error {
	if c.closed {
		return errors.New("start etcd: cluster is closed")
	}
	if c.etcd != nil && c.etcd.Running() {
		return errors.New("start etcd: already running")
	}
	args := []string{
		"--name=default",
		"--data-dir=" + c.etcdDataDir,
		"--listen-client-urls=" + c.EtcdURL(),
		"--advertise-client-urls=" + c.EtcdURL(),
		"--listen-peer-urls=" + c.etcdPeerURL(),
		"--initial-advertise-peer-urls=" + c.etcdPeerURL(),
		"--initial-cluster=default=" + c.etcdPeerURL(),
		"--cert-file=" + c.etcdServerCert.CertFile,
		"--key-file=" + c.etcdServerCert.KeyFile,
		"--trusted-ca-file=" + c.pki.CAFile,
		"--client-cert-auth=true",
		// The data is thrown away with the test; fsync only costs time. A
		// SIGKILL of etcd loses nothing: the page cache survives the process.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}
	p := &process.Process{Name: "etcd", Path: c.bins.Etcd, Args: args, LogPath: filepath.Join(c.logs, "etcd.log")}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	check, err := c.healthCheck(c.etcdClientCert, c.pki.CAFile, c.EtcdURL()+"/health", `"health":"true"`)
	if err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	if err := p.Start(); err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	c.etcd = p
	err = p.WaitReady(ctx, readyPollInterval, check)
	if c.etcdDown != nil {
		c.etcdDown()
		c.etcdDown = nil
	}
	if err != nil {
		p.Kill()
		return fmt.Errorf("start etcd: %w", err)
	}
	return nil
}

// StopEtcd implements cluster.EtcdController.
func (c *Cluster) StopEtcd(ctx context.Context, mode cluster.StopMode) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopEtcdLocked(ctx, mode)
}

func (c *Cluster) stopEtcdLocked(ctx context.Context, mode cluster.StopMode) error {
	if err := mode.Validate(); err != nil {
		return fmt.Errorf("stop etcd: %w", err)
	}
	if c.etcd == nil || !c.etcd.Running() {
		return errors.New("stop etcd: not running")
	}
	if c.etcdDown == nil {
		c.etcdDown = faultlog.Begin(faultlog.EtcdDown, string(mode)+" stop")
	}
	return c.stop(ctx, c.etcd, mode)
}

func (c *Cluster) stop(ctx context.Context, p *process.Process, mode cluster.StopMode) error {
	if mode == cluster.Hard {
		p.Kill()
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.GracefulTimeout)
	defer cancel()
	if err := p.Terminate(ctx); err != nil {
		return fmt.Errorf("stop %s gracefully: %w", p.Name, err)
	}
	return nil
}

// RestartEtcd implements cluster.EtcdController.
func (c *Cluster) RestartEtcd(ctx context.Context, mode cluster.StopMode) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.stopEtcdLocked(ctx, mode); err != nil {
		return fmt.Errorf("restart etcd: %w", err)
	}
	return c.startEtcdLocked(ctx)
}

func (c *Cluster) apiserverArgs(a *apiserver) []string {
	defaults := map[string]string{
		"etcd-servers":                     c.EtcdURL(),
		"etcd-cafile":                      c.pki.CAFile,
		"etcd-certfile":                    c.etcdClientCert.CertFile,
		"etcd-keyfile":                     c.etcdClientCert.KeyFile,
		"bind-address":                     "127.0.0.1",
		"advertise-address":                "127.0.0.1",
		"secure-port":                      strconv.Itoa(a.port.Port),
		"cert-dir":                         a.certDir,
		"tls-cert-file":                    c.apiserverCert.CertFile,
		"tls-private-key-file":             c.apiserverCert.KeyFile,
		"client-ca-file":                   c.clientCAFile,
		"service-account-key-file":         c.saKey,
		"service-account-signing-key-file": c.saKey,
		"service-account-issuer":           "https://kubernetes.default.svc.cluster.local",
		"service-cluster-ip-range":         "10.0.0.0/24",
		"authorization-mode":               "RBAC",
		// No controller-manager creates the default service account.
		"disable-admission-plugins": "ServiceAccount",
		// Specs compact etcd when they mean to (production's periodic
		// compaction is the auto-compaction profile). Not 0: with 0 the
		// apiserver starts no compactor at all (apiserver
		// storagebackend/factory/etcd3.go, startCompactorOnce), so it never
		// watches compact_rev_key and its watch cache keeps serving lists at
		// compacted resourceVersions forever. A year never elapses in a test,
		// and the compactor's watch loop runs.
		"etcd-compaction-interval": "8760h",
		// All apiservers advertise 127.0.0.1, which the endpoints of the
		// kubernetes service may not hold.
		"endpoint-reconciler-type": "none",
	}
	return c.opts.Profile.apply(defaults)
}

// StartAPIServer implements cluster.APIServerController.
func (c *Cluster) StartAPIServer(ctx context.Context, i int) error {
	return c.startAPIServers(ctx, []int{i})
}

func (c *Cluster) startAPIServers(ctx context.Context, idx []int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startAPIServersLocked(ctx, idx)
}

// startAPIServersLocked starts the given apiservers at once and waits for all.
func (c *Cluster) startAPIServersLocked(ctx context.Context, idx []int) error {
	if c.closed {
		return errors.New("start kube-apiserver: cluster is closed")
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	errs := make([]error, len(idx))
	var wg sync.WaitGroup
	for n, i := range idx {
		if i < 0 || i >= len(c.apiservers) {
			return fmt.Errorf("start kube-apiserver: no apiserver %d (have %d)", i, len(c.apiservers))
		}
		a := c.apiservers[i]
		if a.proc != nil && a.proc.Running() {
			return fmt.Errorf("start kube-apiserver-%d: already running", i)
		}
		check, err := c.healthCheck(c.userCerts[cluster.Admin], c.serverCAFile, c.APIServerURL(i)+"/readyz", "ok")
		if err != nil {
			return fmt.Errorf("start kube-apiserver-%d: %w", i, err)
		}
		p := &process.Process{
			Name:    fmt.Sprintf("kube-apiserver-%d", i),
			Path:    c.bins.KubeAPIServer,
			Args:    c.apiserverArgs(a),
			LogPath: filepath.Join(c.logs, fmt.Sprintf("kube-apiserver-%d.log", i)),
		}
		if err := p.Start(); err != nil {
			return err
		}
		a.proc = p
		wg.Go(func() {
			if err := p.WaitReady(ctx, readyPollInterval, check); err != nil {
				p.Kill()
				errs[n] = fmt.Errorf("start kube-apiserver: %w", err)
			}
		})
	}
	wg.Wait()
	for _, i := range idx {
		c.apiservers[i].up()
	}
	return errors.Join(errs...)
}

// StopAPIServer implements cluster.APIServerController. It returns when the
// process is gone.
func (c *Cluster) StopAPIServer(ctx context.Context, i int, mode cluster.StopMode) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopAPIServerLocked(ctx, i, mode)
}

func (c *Cluster) stopAPIServerLocked(ctx context.Context, i int, mode cluster.StopMode) error {
	if err := mode.Validate(); err != nil {
		return fmt.Errorf("stop kube-apiserver: %w", err)
	}
	if i < 0 || i >= len(c.apiservers) {
		return fmt.Errorf("stop kube-apiserver: no apiserver %d (have %d)", i, len(c.apiservers))
	}
	a := c.apiservers[i]
	if a.proc == nil || !a.proc.Running() {
		return fmt.Errorf("stop kube-apiserver-%d: not running", i)
	}
	if a.down == nil {
		a.down = faultlog.Begin(faultlog.APIServerDown, fmt.Sprintf("%s, %s stop", a.proc.Name, mode))
	}
	return c.stop(ctx, a.proc, mode)
}

// RestartAPIServer implements cluster.APIServerController.
func (c *Cluster) RestartAPIServer(ctx context.Context, i int, mode cluster.StopMode) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.stopAPIServerLocked(ctx, i, mode); err != nil {
		return fmt.Errorf("restart kube-apiserver-%d: %w", i, err)
	}
	return c.startAPIServersLocked(ctx, []int{i})
}

// grantTestUser gives the test user what informers under test need, and no more.
func (c *Cluster) grantTestUser(ctx context.Context) error {
	cfg, err := c.RESTConfig(cluster.Admin)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return cluster.GrantTestUser(ctx, cs)
}

// installCRDs installs the suite's CRDs and waits until every apiserver
// serves them. They live in etcd, so they survive apiserver restarts and
// the restores of snapshots taken after this (every spec's).
func (c *Cluster) installCRDs(ctx context.Context) error {
	var cfgs []*rest.Config
	for i := range c.apiservers {
		cfg, err := c.RESTConfigFor(cluster.Admin, c.APIServerURL(i))
		if err != nil {
			return err
		}
		cfgs = append(cfgs, cfg)
	}
	return cluster.InstallCRDs(ctx, cfgs...)
}

// CRDsInstalled implements cluster.CustomResources: Start installed them or
// failed.
func (c *Cluster) CRDsInstalled() error { return nil }

// Close implements cluster.Cluster: it kills every process, releases the
// ports and removes the work directory (unless KeepWorkDir). Logs in an
// ArtifactsDir outside the work directory are kept.
func (c *Cluster) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for _, a := range c.apiservers {
		if a.proc != nil {
			a.proc.Kill()
		}
		errs = append(errs, a.port.Release())
	}
	if c.etcd != nil {
		c.etcd.Kill()
	}
	if c.etcdClient != nil {
		errs = append(errs, c.etcdClient.Close())
	}
	errs = append(errs, c.etcdPort.Release(), c.etcdPeerPort.Release())
	if c.opts.WorkDir == "" && !c.opts.KeepWorkDir && c.work != "" {
		errs = append(errs, os.RemoveAll(c.work))
	}
	if c.owner != nil {
		errs = append(errs, c.owner.Unlock())
	}
	if c.unregister != nil {
		c.unregister()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close local cluster %s: %w", c.name, err)
	}
	return nil
}

// etcdClientLocked returns the cluster's etcd client, made on first use; it
// reconnects by itself across etcd restarts.
func (c *Cluster) etcdClientLocked() (*clientv3.Client, error) {
	if c.etcdClient != nil {
		return c.etcdClient, nil
	}
	tc, err := c.tlsConfig(c.etcdClientCert, c.pki.CAFile)
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{c.EtcdURL()},
		TLS:         tc,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	c.etcdClient = cli
	return cli, nil
}

// EtcdClient returns a client of the cluster's etcd (owned by the cluster).
func (c *Cluster) EtcdClient() (*clientv3.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.etcdClientLocked()
}

// Recover implements cluster.Recoverer, for a cluster that outlives the
// scenario that broke it (the e2e-framework provider's): it starts etcd
// and every kube-apiserver that is not running, and returns once they are
// ready. A running control plane is left alone.
func (c *Cluster) Recover(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("recover: cluster is closed")
	}
	if c.etcd == nil || !c.etcd.Running() {
		if err := c.startEtcdLocked(ctx); err != nil {
			return fmt.Errorf("recover: %w", err)
		}
	}
	var stopped []int
	for i, a := range c.apiservers {
		if a.proc == nil || !a.proc.Running() {
			stopped = append(stopped, i)
		}
	}
	if len(stopped) == 0 {
		return nil
	}
	if err := c.startAPIServersLocked(ctx, stopped); err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	return nil
}

// ExportLogs implements cluster.LogExporter: it copies the processes' logs
// (ArtifactsDir) into dir, which it creates.
func (c *Cluster) ExportLogs(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("export logs of %s: %w", c.name, err)
	}
	return filepath.WalkDir(c.logs, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("export logs of %s: %w", c.name, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("export logs of %s: %w", c.name, ctx.Err())
		}
		rel, err := filepath.Rel(c.logs, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if err := copyFile(path, dst); err != nil {
			return fmt.Errorf("export logs of %s: %w", c.name, err)
		}
		return nil
	})
}
