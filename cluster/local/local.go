// Package local is the suite's default backend: a real control plane (one
// etcd, one or more kube-apiservers) run as local processes from binaries
// built from pinned upstream source (package binaries). No Docker, no root;
// ready in about a second (template.go: from a bootstrapped etcd kept in
// the cache).
//
// It is plain Go returning errors. Every process dies with the program that
// started it (see internal/process); ports are reserved machine-wide so
// parallel test processes never collide (see internal/ports). A restart keeps
// the data directory, the port and the certificates, so clients see the same
// server come back.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
	clientv3 "go.etcd.io/etcd/client/v3"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/cluster/internal/ports"
	"github.com/informer-conformance/informer-conformance/cluster/internal/process"
	"github.com/informer-conformance/informer-conformance/cluster/lifetime"
)

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
	// Find is how binaries.Ensure builds or finds them (cache, assets
	// directory, release source; Progress is this Options'); unset fields
	// are binaries' defaults, from the environment.
	Find binaries.Options
	// APIServers is the number of kube-apiservers over the one etcd (default 1).
	APIServers int
	// EtcdLinks puts a fault proxy of its own between each kube-apiserver
	// and etcd (cluster.EtcdLinks): a fault on one apiserver's link, e.g. a
	// stalled etcd watch, leaves the others alone.
	EtcdLinks bool
	// Profile adds kube-apiserver flags and feature gates.
	Profile Profile
	// WorkDir holds certificates, kubeconfigs and etcd data (default: a new
	// temporary directory, removed by Close unless KeepWorkDir).
	WorkDir     string
	KeepWorkDir bool
	// ArtifactsDir receives the processes' logs (default: <WorkDir>/logs,
	// removed with the work directory). The package reads no artifacts
	// root of its own: the harness gives each cluster a directory under
	// the run's (cluster.Harness), and a tool that keeps logs gives one,
	// e.g. under report.ArtifactsRoot() named by NewName.
	ArtifactsDir string
	// ExtraSANs are added to the apiserver serving certificate (IPs or DNS names).
	ExtraSANs []string
	// ReadyTimeout bounds waiting for a process to be ready (default 60 s).
	ReadyTimeout time.Duration
	// GracefulTimeout bounds a graceful stop before SIGKILL (default 90 s).
	GracefulTimeout time.Duration
	// Progress receives a line per lifecycle step (default: discarded).
	Progress io.Writer
	// FreshEtcd starts from an empty etcd that kube-apiserver bootstraps,
	// as a new cluster does, instead of a restored snapshot of a
	// bootstrapped one (template.go: kept per binaries and profile in the
	// cache, made by the first cluster that finds none). A fresh etcd
	// takes about a second longer: kube-apiserver's bootstrap writes, the
	// CRDs' establishment, one apiserver at a time.
	FreshEtcd bool
}

// Cluster is a running local control plane. Its methods are safe for
// concurrent use; lifecycle operations are serialised.
type Cluster struct {
	opts Options
	name string
	bins binaries.Paths
	work string
	logs string

	creds credentials
	etcd  etcdMember

	mu         sync.Mutex // lifecycle
	apiservers []*apiserver
	closed     bool
	owner      *flock.Flock // held while the default work dir is in use
	unregister func()       // of the work dir's removal on parent death
}

// credentials are the cluster's PKI and what it issued: certificates,
// the service-account key, a kubeconfig per user.
type credentials struct {
	pki *pki

	apiserverCert, etcdServerCert, etcdClientCert keyPair
	userCerts                                     map[cluster.User]keyPair
	saKey                                         string
	kubeconfigs                                   map[cluster.User]string

	// What the apiservers trust and are trusted with (rotate.go): the CA
	// of --client-ca-file, and the CA file clients verify the apiservers'
	// serving certificate with. Both start as the cluster CA (which etcd
	// keeps); a rotation replaces them. Guarded by Cluster.mu once started.
	clientCAFile, serverCAFile string
	servingSpec                certSpec
	userSpecs                  map[cluster.User]certSpec
	rotations, fileKubeconfigs int
}

// etcdMember is the cluster's one etcd: its ports and data directory, its
// process and client while it runs (guarded by Cluster.mu), the restores
// its data went through.
type etcdMember struct {
	port, peerPort *ports.Reservation
	dataDir        string
	restores       int

	proc *process.Process
	// down ends the faultlog window a stop of etcd opened.
	down   func()
	client *clientv3.Client
}

var (
	_ cluster.Cluster             = (*Cluster)(nil)
	_ cluster.APIServerController = (*Cluster)(nil)
	_ cluster.APIServerUpgrader   = (*Cluster)(nil)
	_ cluster.EtcdController      = (*Cluster)(nil)
	_ cluster.EtcdCompactor       = (*Cluster)(nil)
	_ cluster.EtcdSnapshotter     = (*Cluster)(nil)
	_ cluster.Addressable         = (*Cluster)(nil)
	_ cluster.ProcessInspector    = (*Cluster)(nil)
	_ cluster.CertRotator         = (*Cluster)(nil)
	_ cluster.CustomResources     = (*Cluster)(nil)
)

// NewName is a new cluster's name, as Start gives a cluster whose
// Options.Name is empty: "local-" and six random characters. A caller that
// names the cluster's log directory after it (Options.ArtifactsDir) sets
// both.
func NewName() string { return "local-" + utilrand.String(6) }

// Start creates and starts a cluster and returns when etcd and every
// kube-apiserver are ready. On error nothing it started is left behind.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if err := CheckHost(); err != nil {
		return nil, fmt.Errorf("start local cluster: %w", err)
	}
	if opts.APIServers == 0 {
		opts.APIServers = 1
	}
	if opts.APIServers < 0 {
		return nil, fmt.Errorf("start local cluster: APIServers must be positive, got %d", opts.APIServers)
	}
	if err := validateProfile(opts.Profile); err != nil {
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
		opts.Name = NewName()
	}
	bins := opts.Binaries
	if bins.KubeAPIServer == "" || bins.Etcd == "" || bins.Etcdutl == "" {
		v := opts.Versions
		if v == (binaries.Versions{}) {
			if v, err = binaries.FromEnv(); err != nil {
				return nil, fmt.Errorf("start local cluster: %w", err)
			}
		}
		find := opts.Find
		find.Progress = opts.Progress
		if bins, err = binaries.Ensure(ctx, v, find); err != nil {
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
	step := func(what string) {
		fmt.Fprintf(opts.Progress, "local cluster %s: %s at +%s\n", c.name, what, time.Since(start).Round(time.Millisecond))
	}
	template, fromTemplate, err := c.etcdFromTemplate(ctx, step)
	if err != nil {
		return c, fmt.Errorf("start local cluster %s: %w", c.name, err)
	}
	if err := c.startProcesses(ctx, fromTemplate, step); err != nil {
		return c, err
	}
	if err := c.grantTestUser(ctx); err != nil {
		return c, fmt.Errorf("start local cluster %s: %w", c.name, err)
	}
	step("test user granted")
	if err := c.installCRDs(ctx); err != nil {
		return c, fmt.Errorf("start local cluster %s: %w", c.name, err)
	}
	if !fromTemplate && !opts.FreshEtcd {
		if err := c.saveTemplate(ctx, template); err != nil {
			return c, fmt.Errorf("start local cluster %s: keep its bootstrapped etcd: %w", c.name, err)
		}
		step("bootstrapped etcd kept as " + template)
	}
	fmt.Fprintf(opts.Progress, "local cluster %s ready in %s (kubeconfig %s)\n", c.name, time.Since(start).Round(time.Millisecond), c.creds.kubeconfigs[cluster.Admin])
	return c, nil
}

// startProcesses starts etcd and the apiservers of a new cluster and waits
// until they are ready: on the template's etcd, ready but for
// cluster.BootstrapReconcileChecks (cluster.ReadyzBootstrapped).
func (c *Cluster) startProcesses(ctx context.Context, fromTemplate bool, step func(string)) error {
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
		} else {
			step("etcd ready")
		}
		etcdDone <- err
	}()
	// On an empty etcd the first apiserver bootstraps it alone: two
	// bootstrapping at once race (kube-apiserver 1.33 exits with "cannot
	// create cluster IP allocator: ... another caller has already
	// initialized the resource"). Real HA control planes join one by one,
	// too. On the template's etcd there is nothing left to bootstrap, and
	// all start at once.
	first, readyz := c.allIndexes()[:1], "/readyz"
	if fromTemplate {
		first, readyz = c.allIndexes(), cluster.ReadyzBootstrapped()
	}
	apiErr := c.startAPIServersReady(startCtx, first, readyz)
	if err := <-etcdDone; err != nil {
		return err
	}
	if apiErr != nil {
		return apiErr
	}
	step(fmt.Sprintf("%d kube-apiserver(s) ready", len(first)))
	if rest := c.allIndexes()[len(first):]; len(rest) > 0 {
		if err := c.startAPIServersLocked(ctx, rest); err != nil {
			return err
		}
		step("every kube-apiserver ready")
	}
	return nil
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
		c.logs = filepath.Join(c.work, "logs")
	}
	if err := os.MkdirAll(c.logs, 0o755); err != nil {
		return err
	}
	if c.etcd.port, err = ports.Reserve(); err != nil {
		return err
	}
	if c.etcd.peerPort, err = ports.Reserve(); err != nil {
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
		if c.opts.EtcdLinks {
			if a.etcdLink, err = faultproxy.Start(strings.TrimPrefix(c.EtcdURL(), "https://")); err != nil {
				return fmt.Errorf("etcd link of kube-apiserver-%d: %w", i, err)
			}
		}
	}
	c.etcd.dataDir = filepath.Join(c.work, "etcd-data")
	return c.makeCredentials()
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

// Pids implements cluster.ProcessInspector: the process IDs of the running
// processes by name.
func (c *Cluster) Pids() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := map[string]int{}
	if c.etcd.proc != nil && c.etcd.proc.Running() {
		pids["etcd"] = c.etcd.proc.Pid()
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
		if a.etcdLink != nil {
			errs = append(errs, a.etcdLink.Close())
		}
	}
	if c.etcd.proc != nil {
		c.etcd.proc.Kill()
	}
	if c.etcd.client != nil {
		errs = append(errs, c.etcd.client.Close())
	}
	errs = append(errs, c.etcd.port.Release(), c.etcd.peerPort.Release())
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

// Recover implements cluster.Recoverer, for a cluster that outlives the
// scenario that broke it (the e2e-framework provider's): it starts etcd
// and every kube-apiserver that is not running, an apiserver a failed
// upgrade left at another version (SwitchAPIServer) again at the
// cluster's own, and returns once they are ready. A running control plane
// of its own version is left alone.
func (c *Cluster) Recover(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("recover: cluster is closed")
	}
	if c.etcd.proc == nil || !c.etcd.proc.Running() {
		if err := c.startEtcdLocked(ctx); err != nil {
			return fmt.Errorf("recover: %w", err)
		}
	}
	var stopped []int
	for i, a := range c.apiservers {
		running := a.proc != nil && a.proc.Running()
		if a.version != "" {
			if running {
				if err := c.stopAPIServerLocked(ctx, i, cluster.Hard); err != nil {
					return fmt.Errorf("recover kube-apiserver-%d from %s: %w", i, a.version, err)
				}
			}
			a.bin, a.version, running = "", "", false
		}
		if !running {
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
