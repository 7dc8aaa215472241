package local_test

import (
	"crypto/x509"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/local"
)

// TestRotateCertificates: a kubeconfig naming files keeps working across
// rotations (a new client reads the new files), while what was read before
// stops working: after a client CA rotation the old client certificate is
// refused (401), after a serving CA rotation the old CA no longer verifies
// the apiserver. The self-contained kubeconfigs are rewritten.
func TestRotateCertificates(t *testing.T) {
	c := startCluster(t, local.Options{})
	ctx := testCtx(t)
	path, err := c.FileKubeconfig(cluster.Admin, c.APIServerURL(0))
	if err != nil {
		t.Fatal(err)
	}
	fromFiles := func() *rest.Config {
		t.Helper()
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.CertFile == "" || cfg.KeyFile == "" || cfg.CAFile == "" || len(cfg.CertData)+len(cfg.KeyData)+len(cfg.CAData) > 0 {
			t.Fatalf("kubeconfig %s: want file paths only, got files %q %q %q and %d/%d/%d bytes inline",
				path, cfg.CAFile, cfg.CertFile, cfg.KeyFile, len(cfg.CAData), len(cfg.CertData), len(cfg.KeyData))
		}
		return cfg
	}
	list := func(cfg *rest.Config) error {
		t.Helper()
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		return err
	}
	before, err := c.RESTConfig(cluster.Admin) // inline data, read now
	if err != nil {
		t.Fatal(err)
	}
	if err := list(fromFiles()); err != nil {
		t.Fatalf("before rotation, from files: %v", err)
	}

	if err := c.RotateCertificates(ctx, cluster.RotateOptions{Stop: cluster.Hard}); err != nil {
		t.Fatal(err)
	}
	if err := list(fromFiles()); err != nil {
		t.Errorf("after the client CA rotation, a new client from files: %v", err)
	}
	if err := list(before); !apierrors.IsUnauthorized(err) {
		t.Errorf("after the client CA rotation, the old client certificate: got %v, want 401 Unauthorized", err)
	}

	if err := c.RotateCertificates(ctx, cluster.RotateOptions{Stop: cluster.Hard, ServingCA: true}); err != nil {
		t.Fatal(err)
	}
	if err := list(fromFiles()); err != nil {
		t.Errorf("after the serving CA rotation, a new client from files: %v", err)
	}
	var unknownCA x509.UnknownAuthorityError
	if err := list(before); !errors.As(err, &unknownCA) {
		t.Errorf("after the serving CA rotation, the old CA: got %v, want x509.UnknownAuthorityError", err)
	}
	kc, err := c.KubeconfigPath(cluster.Admin)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	if err := list(cfg); err != nil {
		t.Errorf("the rewritten self-contained kubeconfig %s: %v", kc, err)
	}
}
