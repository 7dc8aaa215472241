package kind

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
)

// crictlTimeout bounds each crictl call into the node's containerd
// (crictl's global --timeout). Its default, 2 s, is also the whole budget of
// a StopContainer with --timeout 0 (k8s.io/cri-client v0.36.0, which
// crictl v1.36.0 calls: pkg/remote_runtime.go StopContainer, the client's
// timeout plus the stop's), and
// a loaded host (measured: load average 8 on 2 cores, several kind
// clusters) answered "context deadline exceeded" after it: a hard stop that
// failed to stop.
const crictlTimeout = "30s"

// The kubelet runs kube-apiserver as a static pod from this manifest; a
// stopped apiserver's manifest waits outside the directory (the kubelet
// loads every file in it not starting with a dot, so a copy inside would be
// a second pod: kubelet config/file.go extractFromDir).
const (
	manifest        = "/etc/kubernetes/manifests/kube-apiserver.yaml"
	stoppedManifest = "/etc/kubernetes/informer-conformance-stopped-kube-apiserver.yaml"
)

// NumAPIServers implements cluster.APIServerController: one on each
// control-plane node.
func (c *Cluster) NumAPIServers() int { return c.apiservers }

// APIServerURL implements cluster.APIServerController: the address of
// APIServerAddrs (with one control-plane node, its published port).
func (c *Cluster) APIServerURL(i int) string {
	addrs := c.APIServerAddrs()
	if i < 0 || i >= len(addrs) {
		return ""
	}
	return "https://" + addrs[i]
}

func (c *Cluster) checkIndex(i int) error {
	if i < 0 || i >= c.apiservers {
		return fmt.Errorf("kind cluster %s has %d kube-apiserver(s), no index %d", c.name, c.apiservers, i)
	}
	return nil
}

// apiserverName names apiserver i in errors and the fault log.
func (c *Cluster) apiserverName(i int) string {
	if c.apiservers == 1 {
		return "kube-apiserver of " + c.name
	}
	return fmt.Sprintf("kube-apiserver %d of %s", i, c.name)
}

// runningAPIServers are the IDs of running kube-apiserver containers on
// control-plane node i.
func (c *Cluster) runningAPIServers(ctx context.Context, i int) ([]string, error) {
	return c.runningContainers(ctx, i, "kube-apiserver")
}

// runningContainers are the IDs of the running containers named name on
// control-plane node i.
func (c *Cluster) runningContainers(ctx context.Context, i int, name string) ([]string, error) {
	out, err := c.nodeExecOn(ctx, i, "crictl", "--timeout", crictlTimeout, "ps", "-q", "--state", "running", "--name", "^"+name+"$")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// StopAPIServer implements cluster.APIServerController for the
// kube-apiserver of control-plane node i. Graceful: the manifest leaves the kubelet's directory and the kubelet stops the pod
// (SIGTERM, then SIGKILL after the grace period); should ctx end first, the
// container is killed (as cluster.Graceful says) and the error wraps ctx's.
// Hard: the container is killed at once (crictl stop --timeout 0:
// SIGKILL), then the manifest leaves so the kubelet does not start it
// again. Returns when no kube-apiserver container runs on the node.
func (c *Cluster) StopAPIServer(ctx context.Context, i int, mode cluster.StopMode) error {
	if err := c.checkIndex(i); err != nil {
		return err
	}
	if err := mode.Validate(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped[i] {
		return fmt.Errorf("%s is already stopped", c.apiserverName(i))
	}
	if mode == cluster.Hard {
		if err := c.killAPIServers(ctx, i); err != nil {
			return err
		}
	}
	if _, err := c.nodeExecOn(ctx, i, "mv", manifest, stoppedManifest); err != nil {
		return err
	}
	c.stopped[i] = true
	if c.down[i] == nil {
		c.down[i] = faultlog.FromContext(ctx).Begin(faultlog.APIServerDown, fmt.Sprintf("%s, %s stop", c.apiserverName(i), mode))
	}
	none := func(ids []string) bool { return len(ids) == 0 }
	err := c.waitAPIServers(ctx, i, none, "no kube-apiserver container running", StopTimeout)
	if err == nil || mode != cluster.Graceful || ctx.Err() == nil {
		return err
	}
	// The caller ended the drain: kill it, as a supervisor does when the
	// termination grace runs out.
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StopTimeout)
	defer cancel()
	if err := c.killAPIServers(kctx, i); err != nil {
		return fmt.Errorf("kill the draining %s: %w", c.apiserverName(i), err)
	}
	if err := c.waitAPIServers(kctx, i, none, "no kube-apiserver container running after the kill", StopTimeout); err != nil {
		return err
	}
	return fmt.Errorf("%s killed mid-drain: %w", c.apiserverName(i), ctx.Err())
}

// killAPIServers kills the running kube-apiserver containers of node i
// (crictl stop --timeout 0: SIGKILL).
func (c *Cluster) killAPIServers(ctx context.Context, i int) error {
	ids, err := c.runningAPIServers(ctx, i)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := c.killContainer(ctx, i, id); err != nil {
			return err
		}
	}
	return nil
}

// killContainer kills container id on node i (crictl stop --timeout 0:
// SIGKILL).
func (c *Cluster) killContainer(ctx context.Context, i int, id string) error {
	_, err := c.nodeExecOn(ctx, i, "crictl", "--timeout", crictlTimeout, "stop", "--timeout", "0", id)
	return err
}

// StartAPIServer implements cluster.APIServerController: the manifest goes
// back, the kubelet starts the pod; returns when apiserver i's own /readyz
// is ok.
func (c *Cluster) StartAPIServer(ctx context.Context, i int) error {
	if err := c.checkIndex(i); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped[i] {
		return fmt.Errorf("%s is not stopped", c.apiserverName(i))
	}
	if _, err := c.nodeExecOn(ctx, i, "mv", stoppedManifest, manifest); err != nil {
		return err
	}
	delete(c.stopped, i)
	defer c.up(i)
	if err := c.waitAPIServers(ctx, i, func(ids []string) bool { return len(ids) == 1 }, "a kube-apiserver container running", ReadyTimeout); err != nil {
		return err
	}
	return c.waitReadyAt(ctx, i)
}

// up closes the faultlog window StopAPIServer opened for apiserver i, if any.
func (c *Cluster) up(i int) {
	if end := c.down[i]; end != nil {
		end()
		delete(c.down, i)
	}
}

// RestartAPIServer implements cluster.APIServerController. Graceful is
// Stop then Start. Hard kills the container and lets the kubelet start it
// again in place, as after a crash (crash-loop back-off capped at 1 s by the
// cluster's kubelet configuration); returns when a new container is ready.
func (c *Cluster) RestartAPIServer(ctx context.Context, i int, mode cluster.StopMode) error {
	if err := c.checkIndex(i); err != nil {
		return err
	}
	if err := mode.Validate(); err != nil {
		return err
	}
	if mode == cluster.Graceful {
		if err := c.StopAPIServer(ctx, i, mode); err != nil {
			return err
		}
		return c.StartAPIServer(ctx, i)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped[i] {
		return fmt.Errorf("%s is stopped", c.apiserverName(i))
	}
	old, err := c.runningAPIServers(ctx, i)
	if err != nil {
		return err
	}
	if len(old) != 1 {
		return fmt.Errorf("expected one running kube-apiserver container on node %d, found %d", i, len(old))
	}
	c.down[i] = faultlog.FromContext(ctx).Begin(faultlog.APIServerDown, fmt.Sprintf("%s, hard restart", c.apiserverName(i)))
	defer c.up(i)
	if err := c.killContainer(ctx, i, old[0]); err != nil {
		return err
	}
	if err := c.waitAPIServers(ctx, i, func(ids []string) bool { return len(ids) == 1 && ids[0] != old[0] }, "a new kube-apiserver container running", ReadyTimeout); err != nil {
		return err
	}
	return c.waitReadyAt(ctx, i)
}

// waitAPIServers polls the running kube-apiserver containers of node i until ok.
func (c *Cluster) waitAPIServers(ctx context.Context, i int, ok func([]string) bool, what string, timeout time.Duration) error {
	return poll(ctx, timeout, fmt.Sprintf("%s on node %d of %s", what, i, c.name), func(ctx context.Context) (bool, string, error) {
		ids, err := c.runningAPIServers(ctx, i)
		return err == nil && ok(ids), fmt.Sprintf("running: %v, last error: %v", ids, err), nil
	})
}

// poll calls check every 100 ms until it reports done or fails (its error
// ends the wait), or timeout passes: then the error names what was awaited
// and the state check last reported.
func poll(ctx context.Context, timeout time.Duration, what string, check func(context.Context) (done bool, state string, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		done, state, err := check(ctx)
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: not within %s (%s)", what, timeout, state)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitReady polls /readyz through the kubeconfig's server (the published
// port of the node, or of the load balancer).
func (c *Cluster) waitReady(ctx context.Context) error { return c.waitReadyOn(ctx, c.server) }

// waitReadyAt polls apiserver i's own /readyz.
func (c *Cluster) waitReadyAt(ctx context.Context, i int) error {
	return c.waitReadyOn(ctx, c.APIServerURL(i))
}

func (c *Cluster) waitReadyOn(ctx context.Context, server string) error {
	cfg, err := c.RESTConfig(cluster.Admin)
	if err != nil {
		return err
	}
	cfg.Host = server
	cfg.Timeout = 5 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return poll(ctx, ReadyTimeout, fmt.Sprintf("kube-apiserver %s of %s to be ready", server, c.name), func(ctx context.Context) (bool, string, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && strings.TrimSpace(string(body)) == "ok", fmt.Sprintf("last error: %v", err), nil
	})
}

// Recover implements cluster.Recoverer for a cluster its specs share: a
// spec that failed between StopAPIServer and StartAPIServer (or one that
// ends on a stopped apiserver) leaves a kube-apiserver stopped, so its
// manifest goes back; one a failed upgrade left at another version
// (SwitchAPIServer) runs the node image's again; then every node container
// (the load balancer's too) must be running and /readyz ok. The error names what is wrong (a node
// container killed: its state and exit code).
func (c *Cluster) Recover(ctx context.Context) error {
	out, err := c.d.Run(ctx, nil, "ps", "-a", "--filter", "label=io.x-k8s.kind.cluster="+c.name, "--format", "{{.Names}}")
	if err != nil {
		return err
	}
	names := strings.Fields(string(out))
	if len(names) == 0 {
		return fmt.Errorf("kind node container %s is gone", c.nodeName())
	}
	for _, name := range names {
		out, err := c.d.Run(ctx, nil, "inspect", "--format", "{{.State.Status}} exit={{.State.ExitCode}} oom={{.State.OOMKilled}}", name)
		if err != nil {
			return fmt.Errorf("kind node container %s is gone: %w", name, err)
		}
		if state := strings.TrimSpace(string(out)); !strings.HasPrefix(state, "running") {
			return fmt.Errorf("kind node container %s is not running (%s): the cluster %s is lost for the rest of this process", name, state, c.name)
		}
	}
	// A restore that failed half way may have left etcd out too.
	if _, err := c.nodeExec(ctx, "bash", "-c", restoreEtcdManifest); err != nil {
		return err
	}
	c.mu.Lock()
	var stopped []int
	for i := range c.stopped {
		stopped = append(stopped, i)
	}
	c.mu.Unlock()
	slices.Sort(stopped)
	for _, i := range stopped {
		if err := c.StartAPIServer(ctx, i); err != nil {
			return fmt.Errorf("restart the %s a failed spec left stopped: %w", c.apiserverName(i), err)
		}
	}
	c.mu.Lock()
	switched := slices.Sorted(maps.Keys(c.switched))
	c.mu.Unlock()
	for _, i := range switched {
		if err := c.SwitchAPIServer(ctx, i, c.version, cluster.Hard); err != nil {
			return fmt.Errorf("switch the %s a failed spec left at another version back to %s: %w", c.apiserverName(i), c.version, err)
		}
	}
	return c.waitReady(ctx)
}
