package existing_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/existing"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/cluster/local/localtest"
)

// A real cluster reached only through its kubeconfig: the version is read,
// clients work, and a client through a TLS-passing proxy on another address
// still verifies the server's certificate against the kubeconfig's name.
func TestConnectToARealCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lc := localtest.Start(t, local.Options{})
	path, err := lc.KubeconfigPath(cluster.Admin)
	if err != nil {
		t.Fatal(err)
	}
	c, err := existing.Connect(ctx, existing.Options{Kubeconfig: path})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.ServerVersion(), "v1.") {
		t.Fatalf("server version %q", c.ServerVersion())
	}
	p, err := faultproxy.Start(c.APIServerAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cfg, err := c.RESTConfigFor(cluster.TestUser, "https://localhost:"+strings.Split(p.URL(), ":")[2])
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	if p.Stats().Accepted == 0 {
		t.Fatal("the client did not go through the proxy")
	}

	// KUBECONFIG as kubectl reads it: a list of files, missing ones ignored.
	t.Setenv(existing.EnvKubeconfig, "")
	missingFile := filepath.Join(t.TempDir(), "missing")
	t.Setenv("KUBECONFIG", missingFile+string(filepath.ListSeparator)+path)
	c, err = existing.Connect(ctx, existing.Options{})
	if err != nil {
		t.Fatalf("KUBECONFIG list: %v", err)
	}
	// ... but the files it ignored are named, for the caller to report.
	if got := c.MissingKubeconfigs(); len(got) != 1 || got[0] != missingFile {
		t.Fatalf("MissingKubeconfigs of KUBECONFIG=%s = %q, want [%s]", os.Getenv("KUBECONFIG"), got, missingFile)
	}
	if _, err := c.KubeconfigPath(cluster.Admin); err == nil || !strings.Contains(err.Error(), "several files") {
		t.Fatalf("KubeconfigPath of a KUBECONFIG list = %v, want an error naming several files", err)
	}
}

func TestConnectErrorsSayWhatIsWrong(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not: [a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	unreachable := filepath.Join(dir, "unreachable")
	if err := os.WriteFile(unreachable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(existing.EnvKubeconfig, "")
	t.Setenv("KUBECONFIG", "")
	for _, tc := range []struct {
		name, path, want string
	}{
		{"none", "", "no kubeconfig: set INFORMER_CONFORMANCE_KUBECONFIG or KUBECONFIG"},
		{"missing file", filepath.Join(dir, "nope"), "no such file"},
		{"not a kubeconfig", garbage, "kubeconfig " + garbage},
		{"server down", unreachable, "does not answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := existing.Connect(ctx, existing.Options{Kubeconfig: tc.path})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Connect(%q) = %v, want an error containing %q", tc.path, err, tc.want)
			}
		})
	}
	t.Run("KUBECONFIG list of missing files", func(t *testing.T) {
		list := filepath.Join(dir, "nope") + string(filepath.ListSeparator) + filepath.Join(dir, "nope2")
		t.Setenv("KUBECONFIG", list)
		_, err := existing.Connect(ctx, existing.Options{})
		if err == nil || !strings.Contains(err.Error(), "kubeconfig "+list) || !strings.Contains(err.Error(), filepath.Join(dir, "nope2")+": no such file") {
			t.Fatalf("Connect with KUBECONFIG=%s = %v, want an error naming it and each missing file", list, err)
		}
	})
	// client-go's own answer to a KUBECONFIG whose file is missing is "no
	// configuration has been provided, try setting KUBERNETES_MASTER".
	t.Run("KUBECONFIG of a missing file", func(t *testing.T) {
		missing := filepath.Join(dir, "kc.yaml")
		t.Setenv("KUBECONFIG", missing)
		_, err := existing.Connect(ctx, existing.Options{})
		if err == nil || !strings.Contains(err.Error(), missing+": no such file") || strings.Contains(err.Error(), "KUBERNETES_MASTER") {
			t.Fatalf("Connect with KUBECONFIG=%s = %v, want an error naming the missing file", missing, err)
		}
	})
}
