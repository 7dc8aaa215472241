package kind

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/cluster/internal/pki"
)

// Options.EtcdLinks: each kube-apiserver reaches its etcd member through a
// fault proxy of the test process (cluster.EtcdLinks), as on the local
// backend. kubeadm's stacked control plane has every kube-apiserver talk to
// the etcd member of its own node (--etcd-servers=https://127.0.0.1:2379);
// the link takes its place:
//
//  1. a faultproxy listens on the kind network's gateway (the node's
//     default route, an address of this host's Docker bridge), forwarding
//     to the node's etcd at <node IP>:2379;
//  2. TLS passes through the proxy, and kube-apiserver verifies etcd's
//     serving certificate against the address it dials: each member's
//     serving certificate is reissued from kubeadm's etcd CA with the
//     gateway's IP added to its names. etcd reads its certificate files at
//     each TLS handshake (go.etcd.io/etcd/client/pkg/v3 v3.6
//     transport/listener.go TLSInfo.baseConfig: "this only reloads certs
//     when there's a client request"), so it keeps running;
//  3. kube-apiserver's --etcd-servers names the link (its static pod's
//     manifest rewritten: the kubelet replaces the pod), and once it is
//     ready again the link must have carried its connections.
//
// The links close with the cluster.
const (
	nodeEtcdCACert     = "/etc/kubernetes/pki/etcd/ca.crt"
	nodeEtcdCAKey      = "/etc/kubernetes/pki/etcd/ca.key"
	nodeEtcdServerCert = "/etc/kubernetes/pki/etcd/server.crt"
	nodeEtcdServerKey  = "/etc/kubernetes/pki/etcd/server.key"
	etcdServersFlag    = "--etcd-servers="
)

// EtcdLink implements cluster.EtcdLinks: the fault proxy between
// kube-apiserver i and its etcd member.
func (c *Cluster) EtcdLink(i int) (*faultproxy.Proxy, error) {
	if err := c.checkIndex(i); err != nil {
		return nil, fmt.Errorf("etcd link: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.etcdLinked {
		return nil, errors.New("etcd link: the cluster was started without Options.EtcdLinks (and LinkEtcd was not called)")
	}
	return c.etcdLinks[i], nil
}

// LinkEtcd implements cluster.EtcdLinker: the links of Options.EtcdLinks
// on the running cluster (each kube-apiserver restarted on its link), once.
func (c *Cluster) LinkEtcd(ctx context.Context) error {
	c.linkMu.Lock()
	defer c.linkMu.Unlock()
	c.mu.Lock()
	linked, started := c.etcdLinked, c.etcdLinks != nil
	c.mu.Unlock()
	switch {
	case linked:
		return nil
	case started:
		return fmt.Errorf("etcd links of %s: an earlier LinkEtcd failed half way", c.name)
	}
	start := time.Now()
	if err := c.linkEtcd(ctx); err != nil {
		return c.withNodeLogs(ctx, fmt.Errorf("etcd links of %s: %w", c.name, err))
	}
	fmt.Fprintf(c.progress, "kind: %s: etcd links in place in %s\n", c.name, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// linkEtcd puts a link between each kube-apiserver and its etcd member.
func (c *Cluster) linkEtcd(ctx context.Context) error {
	gw, err := c.gateway(ctx)
	if err != nil {
		return err
	}
	caCert, err := c.readNodeFile(ctx, nodeEtcdCACert)
	if err != nil {
		return err
	}
	caKey, err := c.readNodeFile(ctx, nodeEtcdCAKey)
	if err != nil {
		return err
	}
	ca, err := pki.ParseCA(caCert, caKey)
	if err != nil {
		return fmt.Errorf("etcd CA of %s: %w", c.name, err)
	}
	if _, err := c.controlPlanes(); err != nil {
		return err
	}
	links := make([]*faultproxy.Proxy, c.apiservers)
	c.mu.Lock()
	c.etcdLinks = links // closed by Close, even when a later step fails
	c.mu.Unlock()
	for i := range links {
		host, _, err := net.SplitHostPort(c.cpAddrs[i])
		if err != nil {
			return err
		}
		l, err := faultproxy.StartOn(gw.String(), net.JoinHostPort(host, "2379"))
		if err != nil {
			return fmt.Errorf("etcd link of %s: %w", c.apiserverName(i), err)
		}
		c.mu.Lock()
		links[i] = l
		c.mu.Unlock()
		if err := c.addEtcdServingIP(ctx, i, ca, gw); err != nil {
			return err
		}
	}
	// Every kube-apiserver at once: before the spec that asked (or any) uses
	// the cluster.
	urls := make([]string, len(links))
	for i, l := range links {
		urls[i] = "https://" + l.Addr()
	}
	if err := c.pointAPIServersAt(ctx, urls); err != nil {
		return err
	}
	for i, l := range links {
		if len(l.Stats().Connections) == 0 {
			return fmt.Errorf("%s is ready but never dialed its etcd link %s", c.apiserverName(i), l.Addr())
		}
	}
	c.mu.Lock()
	c.etcdLinked = true
	c.mu.Unlock()
	fmt.Fprintf(c.progress, "kind: %s: each kube-apiserver reaches etcd through a fault proxy on %s\n", c.name, gw)
	return nil
}

// gateway is the kind network's gateway as the first node sees it: its
// default route, an address of this host.
func (c *Cluster) gateway(ctx context.Context) (net.IP, error) {
	out, err := c.nodeExec(ctx, "ip", "-4", "route", "show", "default")
	if err != nil {
		return nil, err
	}
	// default via 172.18.0.1 dev eth0
	f := strings.Fields(out)
	if i := slices.Index(f, "via"); i >= 0 && i+1 < len(f) {
		if ip := net.ParseIP(f[i+1]); ip != nil {
			return ip, nil
		}
	}
	return nil, fmt.Errorf("the default route of %s's node names no gateway: %q", c.name, strings.TrimSpace(out))
}

// addEtcdServingIP reissues node i's etcd serving certificate with ip
// among its names (the rest as they were), from kubeadm's etcd CA.
func (c *Cluster) addEtcdServingIP(ctx context.Context, i int, ca *pki.CA, ip net.IP) error {
	raw, err := c.readNodeFileOn(ctx, i, nodeEtcdServerCert)
	if err != nil {
		return err
	}
	old, err := pki.ParseCert(raw)
	if err != nil {
		return fmt.Errorf("%s on node %d: %w", nodeEtcdServerCert, i, err)
	}
	spec := pki.SpecOf(old)
	if slices.ContainsFunc(spec.IPs, ip.Equal) {
		return nil
	}
	spec.IPs = append(slices.Clone(spec.IPs), ip)
	cert, key, err := ca.Issue(spec)
	if err != nil {
		return err
	}
	// The key first: until the certificate follows, a handshake fails (the
	// pair does not match) rather than etcd serving the old names.
	if err := c.writeNodeFileOn(ctx, i, nodeEtcdServerKey, key); err != nil {
		return err
	}
	return c.writeNodeFileOn(ctx, i, nodeEtcdServerCert, cert)
}

// pointAPIServersAt rewrites each kube-apiserver's --etcd-servers (the
// i-th to urls[i]) and waits until every node runs a new one, ready, and
// the cluster's address answers. The
// old container is killed once its manifest is replaced (crictl stop
// --timeout 0, as a hard restart): the kubelet would otherwise drain it
// for its termination grace period before starting the new pod (measured:
// 40 s a node instead of 5).
func (c *Cluster) pointAPIServersAt(ctx context.Context, urls []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := make([][]string, len(urls))
	for i, url := range urls {
		raw, err := c.readNodeFileOn(ctx, i, manifest)
		if err != nil {
			return err
		}
		edited, err := setFlag(string(raw), etcdServersFlag, url)
		if err != nil {
			return fmt.Errorf("%s on node %d: %w", manifest, i, err)
		}
		if old[i], err = c.runningAPIServers(ctx, i); err != nil {
			return err
		}
		if err := c.writeNodeFileOn(ctx, i, manifest, []byte(edited)); err != nil {
			return err
		}
		for _, id := range old[i] {
			// The kubelet may have stopped it already: not an error.
			_ = c.killContainer(ctx, i, id)
		}
	}
	for i, url := range urls {
		// A new container, of the new pod: the kubelet could restart the
		// killed one before it has the new manifest.
		what := fmt.Sprintf("a new kube-apiserver container with %s%s on node %d of %s", etcdServersFlag, url, i, c.name)
		err := poll(ctx, ReadyTimeout, what, func(ctx context.Context) (bool, string, error) {
			ids, err := c.runningAPIServers(ctx, i)
			if err != nil || len(ids) != 1 || slices.Contains(old[i], ids[0]) {
				return false, fmt.Sprintf("running: %v (old: %v), last error: %v", ids, old[i], err), nil
			}
			spec, err := c.nodeExecOn(ctx, i, "crictl", "--timeout", crictlTimeout, "inspect", ids[0])
			return err == nil && strings.Contains(spec, etcdServersFlag+url), fmt.Sprintf("running: %s, its flags not yet the new ones (error: %v)", ids[0], err), nil
		})
		if err != nil {
			return err
		}
		if err := c.waitReadyAt(ctx, i); err != nil {
			return err
		}
	}
	// And through the cluster's address: with every apiserver restarted at
	// once, kind's load balancer took them all out (its health check: fall
	// 2 at inter 2s) and closes new connections at once (EOF) until a check
	// passes again (measured: a namespace create through it failed so, the
	// apiservers ready on their own addresses).
	return c.waitReady(ctx)
}

// setFlag gives the one container argument starting with flag (a list
// item, "- --flag=value") the value v.
func setFlag(manifest, flag, v string) (string, error) {
	lines := strings.Split(manifest, "\n")
	found := 0
	for n, l := range lines {
		arg := strings.TrimSpace(l)
		if !strings.HasPrefix(arg, "- "+flag) {
			continue
		}
		found++
		lines[n] = l[:strings.Index(l, flag)] + flag + v
	}
	if found != 1 {
		return "", fmt.Errorf("want one %s argument, found %d", flag, found)
	}
	return strings.Join(lines, "\n"), nil
}
