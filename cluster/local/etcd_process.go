package local

// The etcd process: its start, stop and restart (cluster.EtcdController), its addresses and the cluster's etcd client. Compaction, snapshots and restores are in etcd.go.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
	"github.com/informer-conformance/informer-conformance/cluster/internal/process"
)

// EtcdURL is the client URL of etcd (TLS with client certificates).
func (c *Cluster) EtcdURL() string {
	return "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.etcd.port.Port))
}

func (c *Cluster) etcdPeerURL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.etcd.peerPort.Port))
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
	if c.etcd.proc != nil && c.etcd.proc.Running() {
		return errors.New("start etcd: already running")
	}
	args := []string{
		"--name=default",
		"--data-dir=" + c.etcd.dataDir,
		"--listen-client-urls=" + c.EtcdURL(),
		"--advertise-client-urls=" + c.EtcdURL(),
		"--listen-peer-urls=" + c.etcdPeerURL(),
		"--initial-advertise-peer-urls=" + c.etcdPeerURL(),
		"--initial-cluster=default=" + c.etcdPeerURL(),
		"--cert-file=" + c.creds.etcdServerCert.CertFile,
		"--key-file=" + c.creds.etcdServerCert.KeyFile,
		"--trusted-ca-file=" + c.creds.pki.CAFile,
		"--client-cert-auth=true",
		// The data is thrown away with the test; fsync only costs time. A
		// SIGKILL of etcd loses nothing: the page cache survives the process.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
		"--heartbeat-interval=10",
		"--election-timeout=100",
	}
	p := &process.Process{Name: "etcd", Path: c.bins.Etcd, Args: args, LogPath: filepath.Join(c.logs, "etcd.log")}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	check, err := c.healthCheck(c.creds.etcdClientCert, c.creds.pki.CAFile, c.EtcdURL()+"/health", `"health":"true"`)
	if err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	if err := p.Start(); err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	c.etcd.proc = p
	err = p.WaitReady(ctx, readyPollInterval, check)
	if c.etcd.down != nil {
		c.etcd.down()
		c.etcd.down = nil
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
	if c.etcd.proc == nil || !c.etcd.proc.Running() {
		return errors.New("stop etcd: not running")
	}
	if c.etcd.down == nil {
		c.etcd.down = faultlog.FromContext(ctx).Begin(faultlog.EtcdDown, string(mode)+" stop")
	}
	return c.stop(ctx, c.etcd.proc, mode)
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

// etcdClientLocked returns the cluster's etcd client, made on first use; it
// reconnects by itself across etcd restarts.
func (c *Cluster) etcdClientLocked() (*clientv3.Client, error) {
	if c.etcd.client != nil {
		return c.etcd.client, nil
	}
	tc, err := c.tlsConfig(c.creds.etcdClientCert, c.creds.pki.CAFile)
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
	c.etcd.client = cli
	return cli, nil
}

// EtcdClient returns a client of the cluster's etcd (owned by the cluster).
func (c *Cluster) EtcdClient() (*clientv3.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.etcdClientLocked()
}
