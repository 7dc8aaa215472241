package kind

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
	"github.com/informer-conformance/informer-conformance/cluster/internal/pki"
)

// kubeadm's certificate layout on a control-plane node (kubeadm v1.36
// cmd/kubeadm/app/constants): the cluster CA at pki/ca.{crt,key}, which
// kube-apiserver's --client-ca-file, kube-controller-manager's
// --client-ca-file, --root-ca-file and signing flags, and the kubelet's
// clientCAFile all name; the components' kubeconfigs carry client
// certificates of that CA inline (the kubelet's by path, its rotated
// kubelet-client-current.pem) and the CA as certificate-authority-data.
const (
	nodeCACert       = "/etc/kubernetes/pki/ca.crt"
	nodeCAKey        = "/etc/kubernetes/pki/ca.key"
	nodeServingCert  = "/etc/kubernetes/pki/apiserver.crt"
	nodeServingKey   = "/etc/kubernetes/pki/apiserver.key"
	nodeKubeletCert  = "/etc/kubernetes/pki/apiserver-kubelet-client.crt"
	nodeKubeletKey   = "/etc/kubernetes/pki/apiserver-kubelet-client.key"
	nodeKubeconfigs  = "/etc/kubernetes"
	kubeletConfFile  = "/etc/kubernetes/kubelet.conf"
	certRotationNote = "kubeadm's CA rotated in place"
)

// The components' kubeconfigs a rotation reissues (super-admin.conf is
// kubeadm v1.29+); missing ones are skipped.
var componentKubeconfigs = []string{"admin.conf", "super-admin.conf", "controller-manager.conf", "scheduler.conf", "kubelet.conf"}

// userFiles are the host files FileKubeconfig names for u: written from the
// cluster's credentials on first use, rewritten by RotateCertificates.
func (c *Cluster) userFiles(u cluster.User) (cert, key string) {
	return filepath.Join(c.dir, "pki", string(u)+".crt"), filepath.Join(c.dir, "pki", string(u)+".key")
}

// serverCAFile is the host file FileKubeconfigs verify the apiserver with.
func (c *Cluster) serverCAFile() string { return filepath.Join(c.dir, "pki", "server-ca.crt") }

// writeCredentialFiles writes the users' certificates, keys and the
// server CA of the current credentials to the host files (c.credMu held).
func (c *Cluster) writeCredentialFiles() error {
	if err := os.MkdirAll(filepath.Join(c.dir, "pki"), 0o700); err != nil {
		return err
	}
	if err := pki.WriteFileAtomic(c.serverCAFile(), c.admin.TLSClientConfig.CAData); err != nil {
		return err
	}
	for u, cfg := range map[cluster.User]*rest.Config{cluster.Admin: c.admin, cluster.TestUser: c.testUser} {
		cert, key := c.userFiles(u)
		if err := pki.WriteFileAtomic(cert, cfg.TLSClientConfig.CertData); err != nil {
			return err
		}
		if err := pki.WriteFileAtomic(key, cfg.TLSClientConfig.KeyData); err != nil {
			return err
		}
	}
	for u, p := range c.kubeconfig {
		cfg := c.admin
		if u == cluster.TestUser {
			cfg = c.testUser
		}
		if err := cluster.WriteKubeconfig(p, cfg, c.name); err != nil {
			return err
		}
	}
	return nil
}

// FileKubeconfig implements cluster.CertRotator: a kubeconfig for u against
// server naming its CA, certificate and key by path (host files that
// RotateCertificates rewrites; client-go reloads them: transport/transport.go
// loadTLSFiles). It lives in the cluster's directory, removed by Close.
func (c *Cluster) FileKubeconfig(u cluster.User, server string) (string, error) {
	c.credMu.Lock()
	defer c.credMu.Unlock()
	if u != cluster.Admin && u != cluster.TestUser {
		return "", fmt.Errorf("file kubeconfig: no credentials for user %q", u)
	}
	cert, key := c.userFiles(u)
	if _, err := os.Stat(cert); err != nil {
		if err := c.writeCredentialFiles(); err != nil {
			return "", fmt.Errorf("file kubeconfig: %w", err)
		}
	}
	c.fileKubeconfigs++
	path := filepath.Join(c.dir, fmt.Sprintf("kubeconfig-%s-files-%d", u, c.fileKubeconfigs))
	files := cluster.FileCredentials{CAFile: c.serverCAFile(), CertFile: cert, KeyFile: key}
	if err := cluster.WriteFileKubeconfig(path, c.name, u, server, c.admin.TLSClientConfig.ServerName, files); err != nil {
		return "", fmt.Errorf("file kubeconfig: %w", err)
	}
	return path, nil
}

// RotateCertificates implements cluster.CertRotator with kubeadm's layout,
// as an operator replaces a cluster CA by hand: kube-apiserver is stopped
// (opts.Stop), a new CA replaces pki/ca.{crt,key} on the node, every client
// certificate of the old CA is reissued from the new one with its subject
// (the components' kubeconfigs, the kubelet's client certificate,
// kube-apiserver's kubelet client; with opts.ServingCA the serving
// certificate, with its names, and every kubeconfig's CA too), the kubelet
// restarts, the controller manager and scheduler restart onto their new
// kubeconfigs, and kube-apiserver starts trusting only the new CA. The
// suite's users get certificates of the new CA at the same host paths. One
// control-plane node only.
func (c *Cluster) RotateCertificates(ctx context.Context, opts cluster.RotateOptions) error {
	if err := opts.Stop.Validate(); err != nil {
		return fmt.Errorf("rotate certificates: %w", err)
	}
	if c.apiservers != 1 {
		return fmt.Errorf("rotate certificates on kind: %s has %d control-plane nodes, only one is supported", c.name, c.apiservers)
	}
	end := faultlog.FromContext(ctx).Begin(faultlog.CertRotation, fmt.Sprintf("%s, %s stop of the apiserver", certRotationNote, opts.Stop))
	defer end()
	ca, err := pki.NewCA(c.name + "-rotated-ca")
	if err != nil {
		return fmt.Errorf("rotate certificates: new CA: %w", err)
	}
	files, err := c.reissuedNodeFiles(ctx, ca, opts.ServingCA)
	if err != nil {
		return fmt.Errorf("rotate certificates: %w", err)
	}
	if err := c.StopAPIServer(ctx, 0, opts.Stop); err != nil {
		return fmt.Errorf("rotate certificates: %w", err)
	}
	for path, data := range files {
		if err := c.writeNodeFile(ctx, path, data); err != nil {
			return fmt.Errorf("rotate certificates: %w", err)
		}
	}
	if _, err := c.nodeExec(ctx, "systemctl", "restart", "kubelet"); err != nil {
		return fmt.Errorf("rotate certificates: %w", err)
	}
	for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
		ids, err := c.runningContainers(ctx, 0, name)
		if err != nil {
			return fmt.Errorf("rotate certificates: %w", err)
		}
		for _, id := range ids {
			if _, err := c.nodeExec(ctx, "crictl", "--timeout", crictlTimeout, "stop", id); err != nil {
				return fmt.Errorf("rotate certificates: restart %s: %w", name, err)
			}
		}
	}
	if err := c.rotateUsers(ca, opts.ServingCA); err != nil {
		return fmt.Errorf("rotate certificates: %w", err)
	}
	if err := c.StartAPIServer(ctx, 0); err != nil {
		return fmt.Errorf("rotate certificates: %w", err)
	}
	return nil
}

// reissuedNodeFiles are the node's files after the rotation, by path: the
// new CA, and every certificate of the old one reissued from it.
func (c *Cluster) reissuedNodeFiles(ctx context.Context, ca *pki.CA, servingCA bool) (map[string][]byte, error) {
	files := map[string][]byte{nodeCACert: ca.CertPEM, nodeCAKey: ca.KeyPEM}
	pairs := [][2]string{{nodeKubeletCert, nodeKubeletKey}}
	if servingCA {
		pairs = append(pairs, [2]string{nodeServingCert, nodeServingKey})
	}
	for _, p := range pairs {
		cert, key, err := c.reissueNodeCert(ctx, ca, p[0])
		if err != nil {
			return nil, err
		}
		files[p[0]], files[p[1]] = cert, key
	}
	for _, name := range componentKubeconfigs {
		path := nodeKubeconfigs + "/" + name
		raw, err := c.readNodeFile(ctx, path)
		if err != nil {
			if name == "super-admin.conf" {
				continue
			}
			return nil, err
		}
		kc, err := clientcmd.Load(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if servingCA {
			for _, cl := range kc.Clusters {
				cl.CertificateAuthorityData, cl.CertificateAuthority = ca.CertPEM, ""
			}
		}
		for user, ai := range kc.AuthInfos {
			switch {
			case len(ai.ClientCertificateData) > 0:
				old, err := pki.ParseCert(ai.ClientCertificateData)
				if err != nil {
					return nil, fmt.Errorf("%s user %s: %w", path, user, err)
				}
				if ai.ClientCertificateData, ai.ClientKeyData, err = ca.Issue(pki.SpecOf(old)); err != nil {
					return nil, err
				}
			case ai.ClientCertificate != "" && ai.ClientCertificate == ai.ClientKey:
				// The kubelet's: certificate and key in one file.
				cert, key, err := c.reissueNodeCert(ctx, ca, ai.ClientCertificate)
				if err != nil {
					return nil, err
				}
				files[ai.ClientCertificate] = append(cert, key...)
			default:
				return nil, fmt.Errorf("%s user %s: a client certificate this rotation cannot reissue (%q, key %q)", path, user, ai.ClientCertificate, ai.ClientKey)
			}
		}
		if files[path], err = clientcmd.Write(*kc); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// reissueNodeCert issues from ca a certificate with the subject, usages
// and names of the node's certificate at path.
func (c *Cluster) reissueNodeCert(ctx context.Context, ca *pki.CA, path string) (cert, key []byte, err error) {
	raw, err := c.readNodeFile(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	old, err := pki.ParseCert(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return ca.Issue(pki.SpecOf(old))
}

// rotateUsers gives the suite's users certificates of ca (the admin keeps
// its subject: kubeadm's kubernetes-admin in kubeadm:cluster-admins), and
// with servingCA trust in ca; the host files and kubeconfigs follow.
func (c *Cluster) rotateUsers(ca *pki.CA, servingCA bool) error {
	c.credMu.Lock()
	defer c.credMu.Unlock()
	admin, testUser := rest.CopyConfig(c.admin), rest.CopyConfig(c.testUser)
	for _, cfg := range []*rest.Config{admin, testUser} {
		old, err := pki.ParseCert(cfg.TLSClientConfig.CertData)
		if err != nil {
			return err
		}
		if cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData, err = ca.Issue(pki.SpecOf(old)); err != nil {
			return err
		}
		if servingCA {
			cfg.TLSClientConfig.CAData = ca.CertPEM
		}
	}
	c.admin, c.testUser = admin, testUser
	if _, err := os.Stat(c.serverCAFile()); errors.Is(err, os.ErrNotExist) && len(c.kubeconfig) == 0 {
		return nil // nothing on the host names them yet
	}
	return c.writeCredentialFiles()
}

// writeNodeFile replaces a file on the first control-plane node
// (writeNodeFileOn).
func (c *Cluster) writeNodeFile(ctx context.Context, path string, data []byte) error {
	return c.writeNodeFileOn(ctx, 0, path, data)
}

// writeNodeFileOn replaces a file on control-plane node i (written beside
// it, then renamed over it), keeping its mode when it exists. The file
// written beside it is hidden (a dot first): in the kubelet's manifest
// directory, any other name would be a static pod of its own (kubelet
// config/file.go extractFromDir).
func (c *Cluster) writeNodeFileOn(ctx context.Context, i int, path string, data []byte) error {
	script := fmt.Sprintf(`set -e; t=$(mktemp "$(dirname %[1]s)/.$(basename %[1]s).XXXXXX"); cat > "$t"; if test -e %[1]s; then chmod --reference=%[1]s "$t"; fi; mv -f "$t" %[1]s`, path)
	if _, err := c.nodeRun(ctx, i, bytes.NewReader(data), "bash", "-c", script); err != nil {
		return fmt.Errorf("write %s on node %d: %w", path, i, err)
	}
	return nil
}
