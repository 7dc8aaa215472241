package local

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultlog"

	"github.com/informer-conformance/informer-conformance/cluster/internal/etcdcompact"
)

// EtcdRevision implements cluster.EtcdCompactor.
func (c *Cluster) EtcdRevision(ctx context.Context) (int64, error) {
	cli, err := c.EtcdClient()
	if err != nil {
		return 0, err
	}
	// Any read returns the store's current revision in its header; a key
	// that never exists keeps it cheap.
	resp, err := cli.Get(ctx, "/informer-conformance/revision-probe", clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("etcd revision: %w", err)
	}
	return resp.Header.Revision, nil
}

// CompactEtcd implements cluster.EtcdCompactor the way kube-apiserver's own
// compactor does (etcdcompact.Compact: compact_rev_key first, so the
// apiservers' watch caches learn of it). The compaction is physical.
func (c *Cluster) CompactEtcd(ctx context.Context, rev int64) (int64, error) {
	cli, err := c.EtcdClient()
	if err != nil {
		return 0, err
	}
	end := faultlog.FromContext(ctx).Begin(faultlog.Compaction, "")
	defer end()
	return etcdcompact.Compact(ctx, cli, rev)
}

// SnapshotEtcd implements cluster.EtcdSnapshotter. The revision is read
// back from the snapshot file with etcdutl, so it is exact.
func (c *Cluster) SnapshotEtcd(ctx context.Context, path string) (int64, error) {
	tc, err := c.tlsConfig(c.creds.etcdClientCert, c.creds.pki.CAFile)
	if err != nil {
		return 0, err
	}
	cfg := clientv3.Config{Endpoints: []string{c.EtcdURL()}, TLS: tc, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if _, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, path); err != nil {
		return 0, fmt.Errorf("snapshot etcd: %w", err)
	}
	out, err := runLogged(ctx, c.bins.Etcdutl, []string{"snapshot", "status", path, "--write-out=json"}, filepath.Join(c.logs, "etcdutl.log"))
	if err != nil {
		return 0, fmt.Errorf("snapshot etcd: %w", err)
	}
	var status struct {
		Revision int64 `json:"revision"`
	}
	if err := json.Unmarshal(out, &status); err != nil {
		return 0, fmt.Errorf("snapshot etcd: parse etcdutl snapshot status %q: %w", out, err)
	}
	return status.Revision, nil
}

// RestoreEtcd implements cluster.EtcdSnapshotter: it stops the apiservers
// (hard) and etcd, restores the snapshot into a new data directory with
// etcdutl, and starts etcd and the apiservers that were running again.
func (c *Cluster) RestoreEtcd(ctx context.Context, path string, opts cluster.RestoreOptions) error {
	end := faultlog.FromContext(ctx).Begin(faultlog.Restore, fmt.Sprintf("%s, bump revision %d", filepath.Base(path), opts.BumpRevision))
	defer end()
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("restore etcd: snapshot: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var running []int
	for _, a := range c.apiservers {
		if a.proc != nil && a.proc.Running() {
			running = append(running, a.index)
			a.proc.Kill()
		}
	}
	if c.etcd.proc != nil && c.etcd.proc.Running() {
		if err := c.stop(ctx, c.etcd.proc, cluster.Graceful); err != nil {
			return fmt.Errorf("restore etcd: %w", err)
		}
	}
	c.etcd.restores++
	dir := filepath.Join(c.work, fmt.Sprintf("etcd-data-restore-%d", c.etcd.restores))
	args := []string{"snapshot", "restore", path,
		"--data-dir=" + dir,
		"--name=default",
		"--initial-cluster=default=" + c.etcdPeerURL(),
		"--initial-advertise-peer-urls=" + c.etcdPeerURL(),
	}
	if opts.BumpRevision > 0 {
		args = append(args, "--bump-revision="+strconv.FormatUint(opts.BumpRevision, 10), "--mark-compacted")
	}
	logPath := filepath.Join(c.logs, "etcdutl.log")
	if _, err := runLogged(ctx, c.bins.Etcdutl, args, logPath); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	old := c.etcd.dataDir
	c.etcd.dataDir = dir
	if err := os.RemoveAll(old); err != nil {
		return fmt.Errorf("restore etcd: remove old data: %w", err)
	}
	if err := c.startEtcdLocked(ctx); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	if err := c.startAPIServersLocked(ctx, running); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	return nil
}

// runLogged runs a short-lived command, appending its stderr to logPath, and
// returns its stdout; the error carries the argv and the stderr.
func runLogged(ctx context.Context, bin string, args []string, logPath string) ([]byte, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	fmt.Fprintf(log, "=== %s %s\n", bin, strings.Join(args, " "))
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	log.Write(stderr.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func certPool(caFile string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("no certificate in " + caFile)
	}
	return pool, nil
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
