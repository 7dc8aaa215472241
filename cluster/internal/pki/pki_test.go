package pki

import (
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestIssueVerifiesAgainstItsCAOnly(t *testing.T) {
	ca, err := NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("other-ca")
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{CN: "kube-apiserver", Orgs: []string{"g"}, Server: true, Client: true, IPs: []net.IP{net.ParseIP("127.0.0.1").To4()}, DNS: []string{"localhost"}}
	certPEM, keyPEM, err := ca.Issue(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(keyPEM) == 0 {
		t.Fatal("no key")
	}
	cert, err := ParseCert(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ca   *CA
		want bool
	}{{ca, true}, {other, false}} {
		pool := x509.NewCertPool()
		pool.AddCert(c.ca.Cert)
		_, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
		if (err == nil) != c.want {
			t.Errorf("verify against %s: %v, want ok=%v", c.ca.Cert.Subject.CommonName, err, c.want)
		}
	}
	got := SpecOf(cert)
	if got.CN != spec.CN || !slices.Equal(got.Orgs, spec.Orgs) || !got.Server || !got.Client || !slices.Equal(got.DNS, spec.DNS) || len(got.IPs) != 1 || !got.IPs[0].Equal(spec.IPs[0]) {
		t.Errorf("SpecOf = %+v, want %+v", got, spec)
	}
	parsed, err := ParseCA(ca.CertPEM, ca.KeyPEM)
	if err != nil || !parsed.Cert.Equal(ca.Cert) {
		t.Errorf("ParseCA: %v", err)
	}
}

func TestWriteFileAtomicReplaces(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	for _, s := range []string{"old", "new"} {
		if err := WriteFileAtomic(p, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("content %q", b)
	}
	if entries, _ := os.ReadDir(filepath.Dir(p)); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}
