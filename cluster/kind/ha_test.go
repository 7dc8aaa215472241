package kind

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/kind/lbimage"
	"github.com/informer-conformance/informer-conformance/cluster/profile"
)

// EnvIntegrationHA=1 runs TestIntegrationHA (a cluster of three
// control-plane nodes, minutes on 2 cores): make e2e-kind leaves it out.
const EnvIntegrationHA = "INFORMER_CONFORMANCE_KIND_HA"

func TestConfigControlPlanes(t *testing.T) {
	for n, want := range map[int]int{0: 1, 1: 1, 3: 3} {
		cfg, err := renderConfig(true, false, n, profile.Profile{})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(cfg, "- role: control-plane\n"); got != want {
			t.Errorf("APIServers %d: %d control-plane nodes in\n%s", n, got, cfg)
		}
	}
}

func TestTooManyAPIServers(t *testing.T) {
	_, err := Start(context.Background(), Options{APIServers: MaxAPIServers + 1})
	if err == nil || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("Start with %d apiservers: %v", MaxAPIServers+1, err)
	}
}

// TestIntegrationHA: three control-plane nodes behind kind's load balancer
// (the image lbimage builds): each apiserver reached on its own address
// with TLS verified, one stopped while the others and the load balancer
// take writes, started again, another restarted.
func TestIntegrationHA(t *testing.T) {
	if os.Getenv(EnvIntegrationHA) != "1" {
		t.Skipf("%s=1 runs it (three control-plane nodes: minutes)", EnvIntegrationHA)
	}
	d := needDockerAndImage(t)
	ctx := context.Background()
	if s := lbimage.Inspect(ctx, d, lbimage.StandIn); !s.Present && !lbimage.Inspect(ctx, d, lbimage.Image).Present {
		t.Fatalf("neither kind's load balancer image %s nor its stand-in %s is here (make kind-image)", lbimage.Image, lbimage.StandIn)
	}
	start := time.Now()
	c, err := Start(ctx, Options{APIServers: 3, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	t.Logf("3 control-plane nodes: create to ready %s", time.Since(start).Round(100*time.Millisecond))
	if n := c.NumAPIServers(); n != 3 {
		t.Fatalf("NumAPIServers %d", n)
	}
	addrs := c.APIServerAddrs()
	write := func(i int, name string) error {
		t.Helper()
		cfg, err := c.RESTConfig(cluster.Admin) // through the load balancer
		if i >= 0 {
			cfg, err = c.RESTConfigFor(cluster.Admin, "https://"+addrs[i])
		}
		if err != nil {
			return err
		}
		cfg.Timeout = 10 * time.Second
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}
	for i := range addrs {
		if err := write(i, "via-"+string(rune('a'+i))); err != nil {
			t.Fatalf("write through apiserver %d (%s, TLS verified): %v", i, addrs[i], err)
		}
	}
	t0 := time.Now()
	if err := c.StopAPIServer(ctx, 0, cluster.Hard); err != nil {
		t.Fatal(err)
	}
	t.Logf("hard stop of apiserver 0: %s", time.Since(t0).Round(100*time.Millisecond))
	if err := write(1, "while-0-down"); err != nil {
		t.Fatalf("write through apiserver 1 while 0 is down: %v", err)
	}
	for j := range 6 { // the load balancer sends no connection to the stopped one
		if err := write(-1, "lb-while-0-down-"+string(rune('a'+j))); err != nil {
			t.Fatalf("write %d through the load balancer while apiserver 0 is down: %v", j, err)
		}
	}
	if err := c.Recover(ctx); err != nil { // starts apiserver 0 again, as for the next spec
		t.Fatalf("Recover: %v", err)
	}
	t0 = time.Now()
	if err := c.RestartAPIServer(ctx, 2, cluster.Graceful); err != nil {
		t.Fatal(err)
	}
	t.Logf("graceful restart of apiserver 2: %s", time.Since(t0).Round(100*time.Millisecond))
	if err := write(0, "after"); err != nil {
		t.Fatalf("write through apiserver 0 after its start: %v", err)
	}
	// cluster.Graceful: a caller that ends the drain has the apiserver killed.
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	err = c.StopAPIServer(sctx, 1, cluster.Graceful)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a graceful stop whose context ended mid-drain: %v, want an error wrapping the context's", err)
	}
	if ids, err := c.runningAPIServers(ctx, 1); err != nil || len(ids) != 0 {
		t.Fatalf("apiserver 1 still runs after the drain was cut short: %v, %v", ids, err)
	}
	if err := c.StartAPIServer(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CompactEtcd(ctx, 0); err != nil {
		t.Fatalf("compaction: %v", err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
