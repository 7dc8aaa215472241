package kind

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
)

// The kubelet runs kube-apiserver as a static pod from this manifest; a
// stopped apiserver's manifest waits outside the directory (the kubelet
// loads every file in it not starting with a dot, so a copy inside would be
// a second pod: kubelet config/file.go extractFromDir).
const (
	manifest        = "/etc/kubernetes/manifests/kube-apiserver.yaml"
	stoppedManifest = "/etc/kubernetes/informer-conformance-stopped-kube-apiserver.yaml"
)

// NumAPIServers implements cluster.APIServerController: one control-plane
// node (more needs kind's load-balancer image).
func (c *Cluster) NumAPIServers() int { return 1 }

// APIServerURL implements cluster.APIServerController.
func (c *Cluster) APIServerURL(int) string { return c.server }

func checkIndex(i int) error {
	if i != 0 {
		return fmt.Errorf("kind cluster has one kube-apiserver, not %d", i+1)
	}
	return nil
}

// runningAPIServers are the IDs of running kube-apiserver containers.
func (c *Cluster) runningAPIServers(ctx context.Context) ([]string, error) {
	out, err := c.nodeExec(ctx, "crictl", "ps", "-q", "--state", "running", "--name", "^kube-apiserver$")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// StopAPIServer implements cluster.APIServerController. Graceful: the
// manifest leaves the kubelet's directory and the kubelet stops the pod
// (SIGTERM, then SIGKILL after the grace period). Hard: the container is
// killed at once (crictl stop --timeout 0: SIGKILL), then the manifest
// leaves so the kubelet does not start it again. Returns when no
// kube-apiserver container runs.
func (c *Cluster) StopAPIServer(ctx context.Context, i int, mode cluster.StopMode) error {
	if err := checkIndex(i); err != nil {
		return err
	}
	if err := mode.Validate(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return fmt.Errorf("kube-apiserver of %s is already stopped", c.name)
	}
	if mode == cluster.Hard {
		ids, err := c.runningAPIServers(ctx)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := c.nodeExec(ctx, "crictl", "stop", "--timeout", "0", id); err != nil {
				return err
			}
		}
	}
	if _, err := c.nodeExec(ctx, "mv", manifest, stoppedManifest); err != nil {
		return err
	}
	c.stopped = true
	if c.down == nil {
		c.down = faultlog.FromContext(ctx).Begin(faultlog.APIServerDown, fmt.Sprintf("kube-apiserver of %s, %s stop", c.name, mode))
	}
	return c.waitAPIServers(ctx, func(ids []string) bool { return len(ids) == 0 }, "no kube-apiserver container running", StopTimeout)
}

// StartAPIServer implements cluster.APIServerController: the manifest goes
// back, the kubelet starts the pod; returns when /readyz is ok.
func (c *Cluster) StartAPIServer(ctx context.Context, i int) error {
	if err := checkIndex(i); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		return fmt.Errorf("kube-apiserver of %s is not stopped", c.name)
	}
	if _, err := c.nodeExec(ctx, "mv", stoppedManifest, manifest); err != nil {
		return err
	}
	c.stopped = false
	defer c.up()
	if err := c.waitAPIServers(ctx, func(ids []string) bool { return len(ids) == 1 }, "a kube-apiserver container running", ReadyTimeout); err != nil {
		return err
	}
	return c.waitReady(ctx)
}

// up closes the faultlog window StopAPIServer opened, if any.
func (c *Cluster) up() {
	if c.down != nil {
		c.down()
		c.down = nil
	}
}

// RestartAPIServer implements cluster.APIServerController. Graceful is
// Stop then Start. Hard kills the container and lets the kubelet start it
// again in place, as after a crash (crash-loop back-off capped at 1 s by the
// cluster's kubelet configuration); returns when a new container is ready.
func (c *Cluster) RestartAPIServer(ctx context.Context, i int, mode cluster.StopMode) error {
	if err := checkIndex(i); err != nil {
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
	if c.stopped {
		return fmt.Errorf("kube-apiserver of %s is stopped", c.name)
	}
	old, err := c.runningAPIServers(ctx)
	if err != nil {
		return err
	}
	if len(old) != 1 {
		return fmt.Errorf("expected one running kube-apiserver container, found %d", len(old))
	}
	c.down = faultlog.FromContext(ctx).Begin(faultlog.APIServerDown, fmt.Sprintf("kube-apiserver of %s, hard restart", c.name))
	defer c.up()
	if _, err := c.nodeExec(ctx, "crictl", "stop", "--timeout", "0", old[0]); err != nil {
		return err
	}
	if err := c.waitAPIServers(ctx, func(ids []string) bool { return len(ids) == 1 && ids[0] != old[0] }, "a new kube-apiserver container running", ReadyTimeout); err != nil {
		return err
	}
	return c.waitReady(ctx)
}

// waitAPIServers polls the running kube-apiserver containers until ok.
func (c *Cluster) waitAPIServers(ctx context.Context, ok func([]string) bool, what string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last []string
	var lastErr error
	for {
		ids, err := c.runningAPIServers(ctx)
		if err == nil && ok(ids) {
			return nil
		}
		last, lastErr = ids, err
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s on %s: not within %s (running: %v, last error: %v)", what, c.name, timeout, last, lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitReady polls kube-apiserver's /readyz through the published port.
func (c *Cluster) waitReady(ctx context.Context) error {
	cfg, err := c.RESTConfig(cluster.Admin)
	if err != nil {
		return err
	}
	cfg.Timeout = 5 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	var lastErr error
	for {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver of %s not ready within %s: %v", c.name, ReadyTimeout, lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Recover implements cluster.Recoverer for a cluster its specs share: a
// spec that failed between StopAPIServer and StartAPIServer leaves
// kube-apiserver stopped, so its manifest goes back; then the node
// container must be running and /readyz ok. The error names what is wrong
// (a node container killed: its state and exit code).
func (c *Cluster) Recover(ctx context.Context) error {
	out, err := c.d.Run(ctx, nil, "inspect", "--format", "{{.State.Status}} exit={{.State.ExitCode}} oom={{.State.OOMKilled}}", c.nodeName())
	if err != nil {
		return fmt.Errorf("kind node container %s is gone: %w", c.nodeName(), err)
	}
	if state := strings.TrimSpace(string(out)); !strings.HasPrefix(state, "running") {
		return fmt.Errorf("kind node container %s is not running (%s): the cluster %s is lost for the rest of this process", c.nodeName(), state, c.name)
	}
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		if err := c.StartAPIServer(ctx, 0); err != nil {
			return fmt.Errorf("restart the kube-apiserver a failed spec left stopped: %w", err)
		}
	}
	return c.waitReady(ctx)
}
