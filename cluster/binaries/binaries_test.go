package binaries

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestNormalize(t *testing.T) {
	cases := []struct {
		in       Versions
		want     Versions
		errMatch string
	}{
		{Versions{}, Versions{DefaultKubeVersion, DefaultEtcdVersion}, ""},
		{Versions{"1.31.14", "3.5.21"}, Versions{"v1.31.14", "v3.5.21"}, ""},
		{Versions{"v1.30.2", ""}, Versions{}, "not supported: choose 1.31.x to 1.36.x"},
		{Versions{"v1.37.0", ""}, Versions{}, "not supported"},
		{Versions{"latest", ""}, Versions{}, "not a release version"},
		{Versions{"", "v3.4.30"}, Versions{}, "etcd version v3.4.30 is not supported"},
		{Versions{"", "main"}, Versions{}, "etcd version \"main\" is not a release version"},
	}
	for _, c := range cases {
		got, err := c.in.Normalize()
		if c.errMatch != "" {
			if err == nil || !strings.Contains(err.Error(), c.errMatch) {
				t.Errorf("Normalize(%+v): want error containing %q, got %v", c.in, c.errMatch, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Normalize(%+v) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func TestAssetsDir(t *testing.T) {
	dir := t.TempDir()
	_, err := Ensure(context.Background(), Versions{}, Options{AssetsDir: dir})
	if err == nil || !strings.Contains(err.Error(), "must hold kube-apiserver, etcd and etcdutl") || !strings.Contains(err.Error(), "kube-apiserver") {
		t.Fatalf("empty assets dir: want a clear error, got %v", err)
	}
	for _, name := range []string{KubeAPIServer, Etcd, Etcdutl} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Ensure(context.Background(), Versions{}, Options{AssetsDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if p.KubeAPIServer != filepath.Join(dir, KubeAPIServer) {
		t.Errorf("kube-apiserver path %s", p.KubeAPIServer)
	}
	if err := os.Chmod(filepath.Join(dir, Etcd), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(context.Background(), Versions{}, Options{AssetsDir: dir}); err == nil || !strings.Contains(err.Error(), "not an executable") {
		t.Errorf("non-executable etcd: want a clear error, got %v", err)
	}
}

func TestMissingToolchain(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Ensure(context.Background(), Versions{}, Options{CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "Go toolchain (go) is not on PATH") {
		t.Errorf("want a clear error about the missing toolchain, got %v", err)
	}
}

// TestOneBuildAtATime: concurrent callers (here goroutines; flock conflicts
// between open file descriptions, as between processes) build once, and the
// others reuse the result.
func TestOneBuildAtATime(t *testing.T) {
	cache := t.TempDir()
	out := filepath.Join(cache, "bin", "thing")
	var builds, running, overlap atomic.Int32
	build := func(string) error {
		if running.Add(1) > 1 {
			overlap.Add(1)
		}
		defer running.Add(-1)
		builds.Add(1)
		time.Sleep(200 * time.Millisecond) // a build that takes a while, so callers overlap
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, []byte("x"), 0o755)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			errs <- ensureBuilt(context.Background(), Options{CacheDir: cache, Progress: os.Stderr}, "thing", []string{out}, build)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if builds.Load() != 1 || overlap.Load() != 0 {
		t.Errorf("builds = %d, overlapping = %d; want one build and no overlap", builds.Load(), overlap.Load())
	}
}

func TestUnknownVersionFromProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("asks the Go module proxy")
	}
	_, err := Ensure(context.Background(), Versions{KubeAPIServer: "v1.31.999"}, Options{CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "not available from the Go module proxy") {
		t.Errorf("want a clear error for a version the proxy lacks, got %v", err)
	}
}

func TestUnavailableModules(t *testing.T) {
	stderr := `go: informer-conformance.local/kube-apiserver imports
	k8s.io/kubernetes/pkg/kubeapiserver/options imports
	k8s.io/cluster-bootstrap/util/tokens: k8s.io/cluster-bootstrap@v0.31.14: verifying module: k8s.io/cluster-bootstrap@v0.31.14: reading https://proxy.example/sumdb/sum.golang.org/lookup/k8s.io/cluster-bootstrap@v0.31.14: 404 Not Found
	k8s.io/cri-client/pkg/logs: k8s.io/cri-client@v0.31.14: reading https://proxy.example/k8s.io/cri-client/@v/v0.31.14.zip: 403 Forbidden
	k8s.io/cri-client/pkg/x: k8s.io/cri-client@v0.31.14: reading https://proxy.example/k8s.io/cri-client/@v/v0.31.14.zip: 403 Forbidden`
	got := unavailableModules(stderr)
	want := []string{"k8s.io/cluster-bootstrap@v0.31.14", "k8s.io/cri-client@v0.31.14"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("unavailableModules = %v, want %v", got, want)
	}
}
