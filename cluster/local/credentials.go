package local

// Certificates, kubeconfigs and client configurations of the cluster's users, and the TLS health checks built from them.

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/informer-conformance/informer-conformance/cluster"
	ipki "github.com/informer-conformance/informer-conformance/cluster/internal/pki"
)

func (c *Cluster) makeCredentials() error {
	var err error
	if c.creds.pki, err = newPKI(filepath.Join(c.work, "pki")); err != nil {
		return fmt.Errorf("create CA: %w", err)
	}
	loopback := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	sans := certSpec{name: "apiserver", Spec: ipki.Spec{CN: "kube-apiserver", Server: true,
		IPs: append(loopback, net.ParseIP("10.0.0.1")),
		DNS: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}}}
	for _, s := range c.opts.ExtraSANs {
		if ip := net.ParseIP(s); ip != nil {
			sans.IPs = append(sans.IPs, ip)
		} else {
			sans.DNS = append(sans.DNS, s)
		}
	}
	c.creds.servingSpec = sans
	c.creds.userSpecs = map[cluster.User]certSpec{
		cluster.Admin:    {name: "admin", Spec: ipki.Spec{CN: "informer-conformance-admin", Orgs: []string{"system:masters"}, Client: true}},
		cluster.TestUser: {name: "test-user", Spec: ipki.Spec{CN: string(cluster.TestUser), Client: true}},
	}
	var admin, user keyPair
	for _, x := range []struct {
		dst  *keyPair
		spec certSpec
	}{
		{&c.creds.apiserverCert, sans},
		{&c.creds.etcdServerCert, certSpec{name: "etcd-server", Spec: ipki.Spec{CN: "etcd", Server: true, Client: true, IPs: loopback, DNS: []string{"localhost"}}}},
		{&c.creds.etcdClientCert, certSpec{name: "apiserver-etcd-client", Spec: ipki.Spec{CN: "kube-apiserver-etcd-client", Client: true}}},
		{&admin, c.creds.userSpecs[cluster.Admin]},
		{&user, c.creds.userSpecs[cluster.TestUser]},
	} {
		if *x.dst, err = c.creds.pki.issue(x.spec); err != nil {
			return err
		}
	}
	c.creds.userCerts = map[cluster.User]keyPair{cluster.Admin: admin, cluster.TestUser: user}
	c.creds.clientCAFile = c.creds.pki.CAFile
	c.creds.serverCAFile = filepath.Join(c.creds.pki.dir, "apiserver-ca.crt")
	if err := copyFile(c.creds.pki.CAFile, c.creds.serverCAFile); err != nil {
		return err
	}
	if c.creds.saKey, err = c.creds.pki.newServiceAccountKey(); err != nil {
		return err
	}
	c.creds.kubeconfigs = map[cluster.User]string{}
	for u := range c.creds.userCerts {
		c.creds.kubeconfigs[u] = filepath.Join(c.work, "kubeconfig-"+string(u))
	}
	return c.writeKubeconfigs()
}

// writeKubeconfigs (re)writes the users' self-contained kubeconfigs.
func (c *Cluster) writeKubeconfigs() error {
	for u, path := range c.creds.kubeconfigs {
		if err := clientcmd.WriteToFile(*c.kubeconfig(u, c.APIServerURL(0)), path); err != nil {
			return fmt.Errorf("write kubeconfig: %w", err)
		}
	}
	return nil
}

// kubeconfig for user against server; certificates are embedded so the file
// stands alone.
func (c *Cluster) kubeconfig(u cluster.User, server string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.name] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: c.creds.serverCAFile}
	kp := c.creds.userCerts[u]
	cfg.AuthInfos[string(u)] = &clientcmdapi.AuthInfo{ClientCertificate: kp.CertFile, ClientKey: kp.KeyFile}
	cfg.Contexts[c.name] = &clientcmdapi.Context{Cluster: c.name, AuthInfo: string(u)}
	cfg.CurrentContext = c.name
	_ = clientcmdapi.FlattenConfig(cfg)
	return cfg
}

// KubeconfigPath implements cluster.Cluster.
func (c *Cluster) KubeconfigPath(u cluster.User) (string, error) {
	p, ok := c.creds.kubeconfigs[u]
	if !ok {
		return "", fmt.Errorf("no kubeconfig for user %q (have %q and %q)", u, cluster.Admin, cluster.TestUser)
	}
	return p, nil
}

// RESTConfig implements cluster.Cluster, against apiserver 0.
func (c *Cluster) RESTConfig(u cluster.User) (*rest.Config, error) {
	return c.RESTConfigFor(u, c.APIServerURL(0))
}

// RESTConfigFor returns a config for user against host, e.g. another
// apiserver or a fault proxy in front of one (its address must be covered by
// the serving certificate: 127.0.0.1 is, or add it to ExtraSANs).
func (c *Cluster) RESTConfigFor(u cluster.User, host string) (*rest.Config, error) {
	if _, ok := c.creds.userCerts[u]; !ok {
		return nil, fmt.Errorf("no credentials for user %q", u)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*c.kubeconfig(u, host), nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("rest config for %s: %w", u, err)
	}
	return cfg, nil
}

// tlsConfig for a client presenting kp and trusting the CA in caFile.
func (c *Cluster) tlsConfig(kp keyPair, caFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(kp.CertFile, kp.KeyFile)
	if err != nil {
		return nil, err
	}
	pool, err := certPool(caFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// healthCheck returns a check that GETs url (its server verified with
// caFile) and wants 200 with want in the body.
func (c *Cluster) healthCheck(kp keyPair, caFile, url, want string) (func(context.Context) error, error) {
	tc, err := c.tlsConfig(kp, caFile)
	if err != nil {
		return nil, err
	}
	// A new connection per probe: a restarted server must be probed afresh.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK || !containsFold(string(body), want) {
			return fmt.Errorf("%s: %s: %s", url, resp.Status, body)
		}
		return nil
	}, nil
}
