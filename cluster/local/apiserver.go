package local

// kube-apiserver processes: their flags, start, stop and restart, and their addresses (cluster.APIServerController).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/cluster/internal/ports"
	"github.com/informer-conformance/informer-conformance/cluster/internal/process"
)

type apiserver struct {
	index   int
	port    *ports.Reservation
	certDir string
	proc    *process.Process
	// down ends the faultlog window a stop opened (nil when none is open).
	down func()
	// etcdLink is the fault proxy between it and etcd (Options.EtcdLinks).
	etcdLink *faultproxy.Proxy
	// bin and version, when set, are the kube-apiserver it runs instead of
	// the cluster's (SwitchAPIServer).
	bin, version string
}

// up closes a's faultlog window, if a stop opened one.
func (a *apiserver) up() {
	if a.down != nil {
		a.down()
		a.down = nil
	}
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

// EtcdLink implements cluster.EtcdLinks.
func (c *Cluster) EtcdLink(i int) (*faultproxy.Proxy, error) {
	switch {
	case i < 0 || i >= len(c.apiservers):
		return nil, fmt.Errorf("etcd link: no apiserver %d (have %d)", i, len(c.apiservers))
	case c.apiservers[i].etcdLink == nil:
		return nil, errors.New("etcd link: the cluster was started without Options.EtcdLinks")
	}
	return c.apiservers[i].etcdLink, nil
}

func (c *Cluster) apiserverArgs(a *apiserver) []string {
	etcd := c.EtcdURL()
	if a.etcdLink != nil {
		etcd = "https://" + a.etcdLink.Addr()
	}
	defaults := map[string]string{
		"etcd-servers":                     etcd,
		"etcd-cafile":                      c.creds.pki.CAFile,
		"etcd-certfile":                    c.creds.etcdClientCert.CertFile,
		"etcd-keyfile":                     c.creds.etcdClientCert.KeyFile,
		"bind-address":                     "127.0.0.1",
		"advertise-address":                "127.0.0.1",
		"secure-port":                      strconv.Itoa(a.port.Port),
		"cert-dir":                         a.certDir,
		"tls-cert-file":                    c.creds.apiserverCert.CertFile,
		"tls-private-key-file":             c.creds.apiserverCert.KeyFile,
		"client-ca-file":                   c.creds.clientCAFile,
		"service-account-key-file":         c.creds.saKey,
		"service-account-signing-key-file": c.creds.saKey,
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
	return c.opts.Profile.Args(defaults)
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

// startAPIServersLocked starts the given apiservers at once and waits for
// each to answer /readyz with ok.
func (c *Cluster) startAPIServersLocked(ctx context.Context, idx []int) error {
	return c.startAPIServersReady(ctx, idx, "/readyz")
}

// startAPIServersReady starts the given apiservers at once and waits for
// each to answer readyz (a path, with its query) with ok.
func (c *Cluster) startAPIServersReady(ctx context.Context, idx []int, readyz string) error {
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
		check, err := c.healthCheck(c.creds.userCerts[cluster.Admin], c.creds.serverCAFile, c.APIServerURL(i)+readyz, "ok")
		if err != nil {
			return fmt.Errorf("start kube-apiserver-%d: %w", i, err)
		}
		p := &process.Process{
			Name:    fmt.Sprintf("kube-apiserver-%d", i),
			Path:    cmp.Or(a.bin, c.bins.KubeAPIServer),
			Args:    c.apiserverArgs(a),
			LogPath: filepath.Join(c.logs, fmt.Sprintf("kube-apiserver-%d.log", i)),
			// Its start allocates much and keeps little: with the Go
			// runtime's default GOGC=100 it spends a tenth of its start
			// collecting (a start from the template: 1.13 s at p50, 0.98 s
			// with GOGC=400; make bench-start). GC tuning changes no API
			// behaviour. GOGC in the environment wins.
			DefaultEnv: []string{"GOGC=400"},
		}
		if err := p.Start(); err != nil {
			return err
		}
		a.proc = p
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.WaitReady(ctx, readyPollInterval, check); err != nil {
				p.Kill()
				errs[n] = fmt.Errorf("start kube-apiserver: %w", err)
			}
		}()
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
		a.down = faultlog.FromContext(ctx).Begin(faultlog.APIServerDown, fmt.Sprintf("%s, %s stop", a.proc.Name, mode))
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

// SwitchAPIServer implements cluster.APIServerUpgrader: apiserver i stops
// (mode; one already stopped stays so) and starts again from the kube-apiserver binary of version, built
// in the binaries cache (binaries.Built; the cluster's own version needs
// nothing built), with the same port, certificates, flags and etcd.
func (c *Cluster) SwitchAPIServer(ctx context.Context, i int, version string, mode cluster.StopMode) error {
	bin, v := "", c.bins.Versions.KubeAPIServer
	if version != v {
		var err error
		if bin, v, err = binaries.Built(version, binaries.Options{}); err != nil {
			return fmt.Errorf("switch kube-apiserver-%d to %s: %w", i, version, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.apiservers) {
		return fmt.Errorf("switch kube-apiserver: no apiserver %d (have %d)", i, len(c.apiservers))
	}
	a := c.apiservers[i]
	if a.proc != nil && a.proc.Running() {
		if err := c.stopAPIServerLocked(ctx, i, mode); err != nil {
			return fmt.Errorf("switch kube-apiserver-%d to %s: %w", i, version, err)
		}
	}
	a.bin, a.version = bin, v
	if v == c.bins.Versions.KubeAPIServer {
		a.bin, a.version = "", ""
	}
	return c.startAPIServersLocked(ctx, []int{i})
}

// APIServerVersion implements cluster.APIServerUpgrader.
func (c *Cluster) APIServerVersion(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.apiservers) {
		return ""
	}
	return cmp.Or(c.apiservers[i].version, c.bins.Versions.KubeAPIServer)
}
