package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
	ipki "github.com/informer-conformance/informer-conformance/cluster/internal/pki"
)

// FileKubeconfig implements cluster.CertRotator: a kubeconfig for u against
// server whose certificate-authority, client-certificate and client-key are
// the paths RotateCertificates rewrites. client-go reloads such files
// (transport/transport.go loadTLSFiles sets ReloadTLSFiles, and with the
// ClientsAllowCARotation feature ReloadCAFiles); inline data it never
// reloads. The file lives in the work directory, removed by Close.
func (c *Cluster) FileKubeconfig(u cluster.User, server string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return "", errors.New("file kubeconfig: cluster is closed")
	}
	kp, ok := c.creds.userCerts[u]
	if !ok {
		return "", fmt.Errorf("file kubeconfig: no credentials for user %q", u)
	}
	c.creds.fileKubeconfigs++
	path := filepath.Join(c.work, fmt.Sprintf("kubeconfig-%s-files-%d", u, c.creds.fileKubeconfigs))
	files := cluster.FileCredentials{CAFile: c.creds.serverCAFile, CertFile: kp.CertFile, KeyFile: kp.KeyFile}
	if err := cluster.WriteFileKubeconfig(path, c.name, u, server, "", files); err != nil {
		return "", fmt.Errorf("file kubeconfig: %w", err)
	}
	return path, nil
}

// RotateCertificates implements cluster.CertRotator. The running apiservers
// are stopped first, so no apiserver trusting the old CA ever sees a new
// certificate and none trusting the new CA is running before every file is
// written: what a client sees is one restart, after which only the new
// certificates work. Each file is replaced atomically (pki.WriteFileAtomic).
func (c *Cluster) RotateCertificates(ctx context.Context, opts cluster.RotateOptions) error {
	if err := opts.Stop.Validate(); err != nil {
		return fmt.Errorf("rotate certificates: %w", err)
	}
	end := faultlog.FromContext(ctx).Begin(faultlog.CertRotation, string(opts.Stop)+" stop of the apiservers")
	defer end()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("rotate certificates: cluster is closed")
	}
	var running []int
	for _, a := range c.apiservers {
		if a.proc != nil && a.proc.Running() {
			if err := c.stop(ctx, a.proc, opts.Stop); err != nil {
				return fmt.Errorf("rotate certificates: %w", err)
			}
			running = append(running, a.index)
		}
	}
	c.creds.rotations++
	ca, err := newCA(c.creds.pki.dir, fmt.Sprintf("ca-rotated-%d", c.creds.rotations))
	if err != nil {
		return fmt.Errorf("rotate certificates: new CA: %w", err)
	}
	for u, spec := range c.creds.userSpecs {
		kp, err := ca.issue(spec)
		if err != nil {
			return fmt.Errorf("rotate certificates: %w", err)
		}
		if kp != c.creds.userCerts[u] {
			return fmt.Errorf("rotate certificates: %s's certificate went to %v, not where it was (%v)", u, kp, c.creds.userCerts[u])
		}
	}
	if opts.ServingCA {
		if c.creds.apiserverCert, err = ca.issue(c.creds.servingSpec); err != nil {
			return fmt.Errorf("rotate certificates: %w", err)
		}
		if err := copyFile(ca.CAFile, c.creds.serverCAFile); err != nil {
			return fmt.Errorf("rotate certificates: %w", err)
		}
	}
	c.creds.clientCAFile = ca.CAFile
	if err := c.writeKubeconfigs(); err != nil {
		return fmt.Errorf("rotate certificates: %w", err)
	}
	if err := c.startAPIServersLocked(ctx, running); err != nil {
		return fmt.Errorf("rotate certificates: %w", err)
	}
	return nil
}

// copyFile replaces dst with src's content atomically.
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return ipki.WriteFileAtomic(dst, data)
}
