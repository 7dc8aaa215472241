package kind_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	backend "github.com/informer-conformance/informer-conformance/cluster/kind"
	"github.com/informer-conformance/informer-conformance/cluster/kind/docker"
	"github.com/informer-conformance/informer-conformance/cluster/kind/nodeimage"
	"github.com/informer-conformance/informer-conformance/integrations/e2eframework/kind"
)

// needKind skips (fails, with INFORMER_CONFORMANCE_KIND_INTEGRATION=1, as
// make e2e-kind sets) without Docker or the node image.
func needKind(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("creates a kind cluster")
	}
	skip := t.Skipf
	if os.Getenv("INFORMER_CONFORMANCE_KIND_INTEGRATION") == "1" {
		skip = t.Fatalf
	}
	d, err := docker.New(context.Background())
	if err != nil {
		skip("kind provider test: %v", err)
		return
	}
	image := os.Getenv(backend.EnvNodeImage)
	if image == "" {
		image = nodeimage.Tag(binaries.DefaultKubeVersion)
	}
	if !d.ImageExists(context.Background(), image) {
		skip("kind provider test: node image %s not here (make kind-image)", image)
	}
}

// TestKindProviderThroughEnvfuncs: envfuncs create, wait for, export the
// logs of and destroy a kind cluster through the provider.
func TestKindProviderThroughEnvfuncs(t *testing.T) {
	needKind(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg := envconf.New()
	p := kind.NewProvider()
	start := time.Now()
	ctx, err := envfuncs.CreateCluster(p, "ic-e2efw")(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("create to ready (CreateCluster, with WaitForControlPlane): %s", time.Since(start).Round(100*time.Millisecond))
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			_ = p.Destroy(context.Background())
		}
	})
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("the environment's client: %v", err)
	}
	c, err := p.(*kind.Provider).Cluster()
	if err != nil {
		t.Fatal(err)
	}
	var _ cluster.EtcdCompactor = c // the features can break it
	logs := filepath.Join(t.TempDir(), "logs")
	if _, err := envfuncs.ExportClusterLogs("ic-e2efw", logs)(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(logs); len(entries) == 0 {
		t.Error("no logs exported")
	}
	if _, err := envfuncs.DestroyCluster("ic-e2efw")(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	destroyed = true
	if err := p.Destroy(ctx); err == nil || !strings.Contains(err.Error(), "Destroy") {
		t.Errorf("a second Destroy = %v", err)
	}
}

// TestKindProviderBadInput: mistakes are clear errors before any container
// starts.
func TestKindProviderBadInput(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	kindConfig := filepath.Join(dir, "kind.yaml")
	if err := os.WriteFile(kindConfig, []byte("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := kind.NewProvider().CreateWithConfig(ctx, kindConfig); err == nil || !strings.Contains(err.Error(), "e2e-framework's kind provider") {
		t.Errorf("a kind configuration = %v, want an error pointing to e2e-framework's kind provider", err)
	}
	if _, err := kind.NewProvider().WithPath("/usr/local/bin/kind").Create(ctx); err == nil || !strings.Contains(err.Error(), "kind's Go library") {
		t.Errorf("WithPath = %v, want an error", err)
	}
	if _, err := kind.NewProvider().Create(ctx, "--wait=5m"); err == nil || !strings.Contains(err.Error(), "--wait") {
		t.Errorf("an unknown argument = %v", err)
	}
	if _, err := kind.NewProvider().Create(ctx, "--profile=no-such-profile"); err == nil || !strings.Contains(err.Error(), "no-such-profile") {
		t.Errorf("an unknown profile = %v, want an error naming it", err)
	}
	if _, err := kind.NewProvider().WithOpts(kind.WithAPIServers(4)).Create(ctx); err == nil || !strings.Contains(err.Error(), "4") {
		t.Errorf("4 apiservers = %v, want an error", err)
	}
	if err := kind.NewProvider().ExportLogs(ctx, dir); err == nil || !strings.Contains(err.Error(), "no cluster yet") {
		t.Errorf("ExportLogs before Create = %v", err)
	}
}

// TestKindProviderHAWithProfile: WithAPIServers, WithProfile and
// WithEtcdLinks reach the backend: two control-plane nodes behind kind's
// load balancer, each apiserver with the profile's flag and reaching etcd
// through its link. Opt-in
// (INFORMER_CONFORMANCE_KIND_HA_INTEGRATION=1): a cluster of two nodes
// takes a minute or more.
func TestKindProviderHAWithProfile(t *testing.T) {
	if os.Getenv("INFORMER_CONFORMANCE_KIND_HA_INTEGRATION") != "1" {
		t.Skip("INFORMER_CONFORMANCE_KIND_HA_INTEGRATION=1 creates a kind cluster of two control-plane nodes")
	}
	needKind(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg := envconf.New()
	p := kind.NewProvider().WithOpts(kind.WithAPIServers(2), kind.WithProfile("goaway"), kind.WithEtcdLinks())
	start := time.Now()
	if _, err := envfuncs.CreateCluster(p, "ic-e2efw-ha")(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Logf("create to ready, 2 control-plane nodes: %s", time.Since(start).Round(100*time.Millisecond))
	t.Cleanup(func() { _ = p.Destroy(context.Background()) })
	c, err := p.(*kind.Provider).Cluster()
	if err != nil {
		t.Fatal(err)
	}
	if n := c.NumAPIServers(); n != 2 {
		t.Errorf("NumAPIServers = %d, want 2", n)
	}
	if got := c.ProfileName(); got != "goaway" {
		t.Errorf("ProfileName = %q, want goaway", got)
	}
	for i := range 2 {
		l, err := c.EtcdLink(i)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(l.Stats().Active()); n == 0 {
			t.Errorf("etcd link %d (%s) carries no connection", i, l.Addr())
		}
	}
}
