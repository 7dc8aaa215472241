package kind

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
	"github.com/informer-conformance/informer-conformance/cluster/internal/etcdcompact"
)

// etcdClient connects (once) to the nodes' etcd from the host: kubeadm's
// etcd listens on the node's IP too (https://<node IP>:2379, client
// certificates required; with several control-plane nodes each runs a
// member, all are endpoints); the client pair is the one kube-apiserver
// uses, copied from the first node with its CA.
func (c *Cluster) etcdClient(ctx context.Context) (*clientv3.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.etcd != nil {
		return c.etcd, nil
	}
	cps, err := c.controlPlanes()
	if err != nil {
		return nil, err
	}
	var endpoints []string
	for _, n := range cps {
		ip, _, err := n.IP()
		if err != nil {
			return nil, fmt.Errorf("node %s IP: %w", n, err)
		}
		endpoints = append(endpoints, "https://"+net.JoinHostPort(ip, "2379"))
	}
	files := map[string][]byte{}
	for _, f := range []string{"etcd/ca.crt", "apiserver-etcd-client.crt", "apiserver-etcd-client.key"} {
		if files[f], err = c.readNodeFile(ctx, "/etc/kubernetes/pki/"+f); err != nil {
			return nil, err
		}
	}
	pair, err := tls.X509KeyPair(files["apiserver-etcd-client.crt"], files["apiserver-etcd-client.key"])
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(files["etcd/ca.crt"]) {
		return nil, fmt.Errorf("etcd CA of %s is not PEM", c.name)
	}
	c.etcdTLS = &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS12}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 10 * time.Second,
		TLS:         c.etcdTLS.Clone(),
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %s: %w", c.name, err)
	}
	c.etcd = cli
	return cli, nil
}

// EtcdRevision implements cluster.EtcdCompactor.
func (c *Cluster) EtcdRevision(ctx context.Context) (int64, error) {
	cli, err := c.etcdClient(ctx)
	if err != nil {
		return 0, err
	}
	// Any key: the header carries the store's revision.
	resp, err := cli.Get(ctx, "compact_rev_key")
	if err != nil {
		return 0, fmt.Errorf("etcd revision of %s: %w", c.name, err)
	}
	return resp.Header.Revision, nil
}

// CompactEtcd implements cluster.EtcdCompactor as kube-apiserver's own
// compactor does (etcdcompact.Compact: compact_rev_key first, so the watch
// cache learns of it).
func (c *Cluster) CompactEtcd(ctx context.Context, rev int64) (int64, error) {
	cli, err := c.etcdClient(ctx)
	if err != nil {
		return 0, err
	}
	end := faultlog.FromContext(ctx).Begin(faultlog.Compaction, "")
	defer end()
	rev, err = etcdcompact.Compact(ctx, cli, rev)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", c.name, err)
	}
	return rev, nil
}
