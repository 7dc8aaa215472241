package local

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"

	ipki "github.com/informer-conformance/informer-conformance/cluster/internal/pki"
)

// pki is the cluster's own certificate authority and everything it signed.
// It is made once per cluster and kept across restarts, so clients keep
// trusting a restarted apiserver.
type pki struct {
	dir    string
	ca     *ipki.CA
	CAFile string
}

// keyPair names the PEM files of a certificate and its key.
type keyPair struct {
	CertFile, KeyFile string
}

func newPKI(dir string) (*pki, error) { return newCA(dir, "ca") }

// newCA makes a new certificate authority whose certificate is
// <dir>/<name>.crt; what it issues goes to dir too (a rotation's new CA
// issues certificates at the paths of the old one's).
func newCA(dir, name string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := ipki.NewCA("informer-conformance-" + name)
	if err != nil {
		return nil, err
	}
	p := &pki{dir: dir, ca: ca, CAFile: filepath.Join(dir, name+".crt")}
	if err := ipki.WriteFileAtomic(p.CAFile, ca.CertPEM); err != nil {
		return nil, err
	}
	return p, nil
}

// certSpec says what a leaf certificate is for, and its files' stem.
type certSpec struct {
	name string // file name stem
	ipki.Spec
}

// issue signs a new leaf certificate and writes it with its key.
func (p *pki) issue(s certSpec) (keyPair, error) {
	cert, key, err := p.ca.Issue(s.Spec)
	if err != nil {
		return keyPair{}, fmt.Errorf("issue certificate %s: %w", s.name, err)
	}
	kp := keyPair{CertFile: filepath.Join(p.dir, s.name+".crt"), KeyFile: filepath.Join(p.dir, s.name+".key")}
	if err := ipki.WriteFileAtomic(kp.CertFile, cert); err != nil {
		return keyPair{}, err
	}
	if err := ipki.WriteFileAtomic(kp.KeyFile, key); err != nil {
		return keyPair{}, err
	}
	return kp, nil
}

// newServiceAccountKey writes the key kube-apiserver signs and verifies
// service-account tokens with.
func (p *pki) newServiceAccountKey() (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	path := filepath.Join(p.dir, "sa.key")
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", err
	}
	return path, ipki.WriteFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
}
