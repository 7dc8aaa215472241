package kind

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
	"github.com/informer-conformance/informer-conformance/cluster/kind/nodeimage"
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

// controlPlaneProcs counts the node's processes named etcd or
// kube-apiserver (the kernel's comm, not a container runtime's view: a
// container being created or still dying is a process too).
const controlPlaneProcs = `cat /proc/[0-9]*/comm 2>/dev/null | grep -c -x -e etcd -e kube-apiserver || true`

var (
	etcdImageRE = regexp.MustCompile(`image:\s*(\S+/etcd:\S+)`)
	etcdFlagRE  = regexp.MustCompile(`--(name|initial-cluster|initial-advertise-peer-urls|data-dir)=(\S+)`)
)

// etcdutl is a host etcdutl of the node's etcd version (built once by
// cluster/binaries; building the node image has made it already).
func (c *Cluster) etcdutl(ctx context.Context, manifest string) (string, error) {
	m := etcdImageRE.FindStringSubmatch(manifest)
	if m == nil {
		return "", fmt.Errorf("no etcd image in %s of %s", etcdManifest, c.name)
	}
	version, err := nodeimage.EtcdVersionOf(m[1])
	if err != nil {
		return "", err
	}
	_, etcdutl, err := binaries.EnsureEtcd(ctx, version, binaries.Options{Progress: c.progress})
	return etcdutl, err
}

// snapshotRevision reads the revision a snapshot file holds (etcdutl
// snapshot status), so it is exact.
func snapshotRevision(ctx context.Context, etcdutl, path string) (int64, error) {
	out, err := exec.CommandContext(ctx, etcdutl, "snapshot", "status", path, "--write-out=json").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return 0, fmt.Errorf("etcdutl snapshot status %s: %w", path, err)
	}
	var status struct {
		Revision int64 `json:"revision"`
	}
	if err := json.Unmarshal(out, &status); err != nil {
		return 0, fmt.Errorf("parse etcdutl snapshot status %q: %w", out, err)
	}
	return status.Revision, nil
}

// singleMember refuses what this backend does not restore: a stacked etcd
// of several members (an HA cluster) needs every member restored from the
// same snapshot with a new cluster token, which no scenario asks for.
func (c *Cluster) singleMember() error {
	if c.apiservers != 1 {
		return fmt.Errorf("etcd snapshot and restore on kind: %s has %d etcd members, only a single-member etcd (one control-plane node) is supported", c.name, c.apiservers)
	}
	return nil
}

// SnapshotEtcd implements cluster.EtcdSnapshotter: a snapshot taken from
// the host through etcd's client API; its revision is read back with etcdutl.
func (c *Cluster) SnapshotEtcd(ctx context.Context, path string) (int64, error) {
	if err := c.singleMember(); err != nil {
		return 0, err
	}
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
	c.mu.Lock()
	tc := c.etcdTLS.Clone()
	c.mu.Unlock()
	cfg := clientv3.Config{Endpoints: cli.Endpoints(), TLS: tc, DialTimeout: 10 * time.Second, Logger: zap.NewNop()}
	if _, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, path); err != nil {
		return 0, fmt.Errorf("snapshot etcd of %s: %w", c.name, err)
	}
	return snapshotRevision(ctx, etcdutl, path)
}

// RestoreEtcd implements cluster.EtcdSnapshotter. kube-apiserver is killed
// and its manifest taken out (its watch cache would serve the discarded
// history), etcd's manifest is taken out; once no etcd or kube-apiserver
// process is left on the node, etcdutl (copied onto the node) restores the
// snapshot with the manifest's member name and peer URL into a new data
// directory that replaces the old one. etcd comes back first and must
// answer at the snapshot's revision (plus the bump) before kube-apiserver
// starts: an etcd that came back on its old data, or a kube-apiserver that
// outlived the swap, is an error here rather than a stale spec later. It
// returns when /readyz is ok.
func (c *Cluster) RestoreEtcd(ctx context.Context, path string, opts cluster.RestoreOptions) (err error) {
	end := faultlog.FromContext(ctx).Begin(faultlog.Restore, fmt.Sprintf("%s, bump revision %d", filepath.Base(path), opts.BumpRevision))
	defer end()
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	if err := c.singleMember(); err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("restore etcd: snapshot: %w", err)
	}
	manifest, err := c.readNodeFile(ctx, etcdManifest)
	if err != nil {
		return err
	}
	flags, err := etcdFlags(string(manifest))
	if err != nil {
		return err
	}
	etcdutl, err := c.etcdutl(ctx, string(manifest))
	if err != nil {
		return err
	}
	want, err := snapshotRevision(ctx, etcdutl, path)
	if err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	want += int64(opts.BumpRevision)
	node := c.nodeName()
	for src, dst := range map[string]string{etcdutl: nodeEtcdutl, path: nodeSnapshot} {
		if _, err := c.d.Run(ctx, nil, "cp", src, node+":"+dst); err != nil {
			return fmt.Errorf("restore etcd: copy onto %s: %w", node, err)
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
			_, _ = c.nodeExec(context.WithoutCancel(ctx), "bash", "-c", restoreEtcdManifest)
		}
	}()
	if err := c.waitNoControlPlaneProcs(ctx); err != nil {
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
	script := fmt.Sprintf("set -e; rm -rf %[1]s; %[2]s %[3]s; rm -rf %[4]s; mv %[1]s %[4]s; rm -f %[5]s",
		restored, nodeEtcdutl, strings.Join(args, " "), etcdDataDir, nodeSnapshot)
	if _, err := c.nodeExec(ctx, "bash", "-c", script); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	if _, err := c.nodeExec(ctx, "mv", stoppedEtcdManifest, etcdManifest); err != nil {
		return err
	}
	if err := c.waitEtcdAt(ctx, want); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	if err := c.StartAPIServer(ctx, 0); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	return nil
}

// etcdFlags reads the flags a restore needs from etcd's static pod manifest.
func etcdFlags(manifest string) (map[string]string, error) {
	flags := map[string]string{}
	for _, m := range etcdFlagRE.FindAllStringSubmatch(manifest, -1) {
		flags[m[1]] = m[2]
	}
	for _, f := range []string{"name", "initial-cluster", "initial-advertise-peer-urls", "data-dir"} {
		if flags[f] == "" {
			return nil, fmt.Errorf("restore etcd: %s has no --%s", etcdManifest, f)
		}
	}
	if flags["data-dir"] != etcdDataDir {
		return nil, fmt.Errorf("restore etcd: data dir %s in %s, expected %s", flags["data-dir"], etcdManifest, etcdDataDir)
	}
	return flags, nil
}

// waitNoControlPlaneProcs waits until no etcd or kube-apiserver process is
// left on the node (the kubelet stops the pods whose manifests left).
func (c *Cluster) waitNoControlPlaneProcs(ctx context.Context) error {
	return poll(ctx, StopTimeout, "no etcd or kube-apiserver process on "+c.nodeName(), func(ctx context.Context) (bool, string, error) {
		out, err := c.nodeExec(ctx, "bash", "-c", controlPlaneProcs)
		return err == nil && strings.TrimSpace(out) == "0", fmt.Sprintf("processes: %s, last error: %v", strings.TrimSpace(out), err), nil
	})
}

// waitEtcdAt waits until the restarted etcd answers, and requires its
// revision to be the restored one: the restart came from the new data.
func (c *Cluster) waitEtcdAt(ctx context.Context, want int64) error {
	cli, err := c.etcdClient(ctx)
	if err != nil {
		return err
	}
	return poll(ctx, ReadyTimeout, "etcd of "+c.name+" to answer after the restore", func(ctx context.Context) (bool, string, error) {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		resp, err := cli.Get(rctx, "compact_rev_key")
		if err != nil {
			return false, fmt.Sprintf("last error: %v", err), nil
		}
		if got := resp.Header.Revision; got != want {
			return false, "", fmt.Errorf("etcd of %s came back at revision %d, the restored snapshot holds %d: not the restored data", c.name, got, want)
		}
		return true, "", nil
	})
}
