package kind

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
)

// etcd runs as a kubeadm static pod; a restore takes it (and kube-apiserver)
// out of the kubelet's manifest directory, replaces its data directory on
// the node with etcdutl's restore, and puts both back.
const (
	etcdManifest        = "/etc/kubernetes/manifests/etcd.yaml"
	stoppedEtcdManifest = "/etc/kubernetes/informer-conformance-stopped-etcd.yaml"
	etcdDataDir         = "/var/lib/etcd"
	nodeEtcdutl         = "/usr/local/bin/informer-conformance-etcdutl"
	// The snapshot goes to /var (a volume): docker cp writes beneath the
	// node's /tmp tmpfs, where the node's processes cannot see it.
	nodeSnapshot = "/var/lib/informer-conformance-etcd.snapshot"
)

// restoreEtcdManifest puts a stopped etcd's manifest back, if it is out.
var restoreEtcdManifest = fmt.Sprintf("if test -e %[1]s; then mv %[1]s %[2]s; fi", stoppedEtcdManifest, etcdManifest)

var (
	etcdImageRE = regexp.MustCompile(`image:\s*\S+/etcd:(\d+\.\d+\.\d+)`)
	etcdFlagRE  = regexp.MustCompile(`--(name|initial-cluster|initial-advertise-peer-urls|data-dir)=(\S+)`)
)

// etcdutl is a host etcdutl of the node's etcd version (built once by
// cluster/binaries; the node image build has made it already).
func (c *Cluster) etcdutl(ctx context.Context, manifest string) (string, error) {
	m := etcdImageRE.FindStringSubmatch(manifest)
	if m == nil {
		return "", fmt.Errorf("no etcd image version in %s", etcdManifest)
	}
	_, etcdutl, err := binaries.EnsureEtcd(ctx, "v"+m[1], binaries.Options{Progress: c.progress})
	return etcdutl, err
}

// SnapshotEtcd implements cluster.EtcdSnapshotter: a snapshot taken from
// the host through etcd's client API; its revision is read back with etcdutl.
func (c *Cluster) SnapshotEtcd(ctx context.Context, path string) (int64, error) {
	cli, err := c.etcdClient(ctx)
	if err != nil {
		return 0, err
	}
	manifest, err := c.readNodeFile(ctx, etcdManifest)
	if err != nil {
		return 0, err
	}
	etcdutl, err := c.etcdutl(ctx, string(manifest))
	if err != nil {
		return 0, err
	}
	cfg := clientv3.Config{Endpoints: cli.Endpoints(), TLS: c.etcdTLS.Clone(), DialTimeout: 10 * time.Second, Logger: zap.NewNop()}
	if _, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, path); err != nil {
		return 0, fmt.Errorf("snapshot etcd of %s: %w", c.name, err)
	}
	out, err := exec.CommandContext(ctx, etcdutl, "snapshot", "status", path, "--write-out=json").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return 0, fmt.Errorf("etcdutl snapshot status: %w", err)
	}
	var status struct {
		Revision int64 `json:"revision"`
	}
	if err := json.Unmarshal(out, &status); err != nil {
		return 0, fmt.Errorf("parse etcdutl snapshot status %q: %w", out, err)
	}
	return status.Revision, nil
}

// RestoreEtcd implements cluster.EtcdSnapshotter: kube-apiserver is killed
// and its manifest taken out (its watch cache would serve the discarded
// history), etcd's manifest is taken out and the pod stops, etcdutl (copied
// onto the node) restores the snapshot with the member name and peer URL of
// the manifest into a new data directory that replaces the old one, then
// etcd and kube-apiserver come back; it returns when /readyz is ok.
func (c *Cluster) RestoreEtcd(ctx context.Context, path string, opts cluster.RestoreOptions) (err error) {
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("restore etcd: snapshot: %w", err)
	}
	manifest, err := c.readNodeFile(ctx, etcdManifest)
	if err != nil {
		return err
	}
	flags := map[string]string{}
	for _, m := range etcdFlagRE.FindAllStringSubmatch(string(manifest), -1) {
		flags[m[1]] = m[2]
	}
	for _, f := range []string{"name", "initial-cluster", "initial-advertise-peer-urls", "data-dir"} {
		if flags[f] == "" {
			return fmt.Errorf("restore etcd: %s has no --%s", etcdManifest, f)
		}
	}
	if flags["data-dir"] != etcdDataDir {
		return fmt.Errorf("restore etcd: data dir %s, expected %s", flags["data-dir"], etcdDataDir)
	}
	etcdutl, err := c.etcdutl(ctx, string(manifest))
	if err != nil {
		return err
	}
	node := c.nodeName()
	for src, dst := range map[string]string{etcdutl: nodeEtcdutl, path: nodeSnapshot} {
		if _, err := c.d.Run(ctx, nil, "cp", src, node+":"+dst); err != nil {
			return fmt.Errorf("restore etcd: %w", err)
		}
	}
	if err := c.StopAPIServer(ctx, 0, cluster.Hard); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	if _, err := c.nodeExec(ctx, "mv", etcdManifest, stoppedEtcdManifest); err != nil {
		return err
	}
	defer func() {
		if err != nil { // etcd comes back with whatever data it has; Recover restarts the apiserver
			_, _ = c.nodeExec(context.Background(), "bash", "-c", restoreEtcdManifest)
		}
	}()
	if err := c.waitContainers(ctx, "etcd", func(ids []string) bool { return len(ids) == 0 }, "no etcd container running", StopTimeout); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	restored := etcdDataDir + "-restored"
	args := []string{"snapshot", "restore", nodeSnapshot,
		"--data-dir=" + restored,
		"--name=" + flags["name"],
		"--initial-cluster=" + flags["initial-cluster"],
		"--initial-advertise-peer-urls=" + flags["initial-advertise-peer-urls"],
	}
	if opts.BumpRevision > 0 {
		args = append(args, "--bump-revision="+strconv.FormatUint(opts.BumpRevision, 10), "--mark-compacted")
	}
	script := fmt.Sprintf("set -e; rm -rf %[1]s; %[2]s %[3]s; rm -rf %[4]s; mv %[1]s %[4]s; rm -f /var/lib/informer-conformance-etcd.snapshot",
		restored, nodeEtcdutl, strings.Join(args, " "), etcdDataDir)
	if _, err := c.nodeExec(ctx, "bash", "-c", script); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	if _, err := c.nodeExec(ctx, "mv", stoppedEtcdManifest, etcdManifest); err != nil {
		return err
	}
	if err := c.waitContainers(ctx, "etcd", func(ids []string) bool { return len(ids) == 1 }, "an etcd container running", ReadyTimeout); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	if err := c.StartAPIServer(ctx, 0); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	return nil
}
