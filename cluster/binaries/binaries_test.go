package binaries

import (
	"context"
	"fmt"
	"io"
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
		{Versions{"v1.30.2", ""}, Versions{}, "not supported: choose 1.31.x to 1.37.x"},
		{Versions{"v1.38.0", ""}, Versions{}, "not supported"},
		{Versions{"latest", ""}, Versions{}, "not a release version"},
		{Versions{"", "v3.4.30"}, Versions{}, "etcd version v3.4.30 is not supported"},
		{Versions{"", "main"}, Versions{}, "etcd version \"main\" is not a release version"},
		{Versions{"", "2.0.0"}, Versions{}, "etcd version 2.0.0 is not supported: choose 3.5.x to 3.7.x"},
		{Versions{"2.0.0", ""}, Versions{}, "kube-apiserver version 2.0.0 is not supported: choose 1.31.x to 1.37.x"},
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
	fakeAssets(t, dir, "Kubernetes v1.35.2", "etcd Version: 3.5.21\nGit SHA: Not provided\nGo Version: go1.26.8")
	p, err := Ensure(context.Background(), Versions{}, Options{AssetsDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if p.KubeAPIServer != filepath.Join(dir, KubeAPIServer) {
		t.Errorf("kube-apiserver path %s", p.KubeAPIServer)
	}
	// The binaries' own versions, not KUBE_VERSION's or the defaults.
	if want := (Versions{KubeAPIServer: "v1.35.2", Etcd: "v3.5.21"}); p.Versions != want {
		t.Errorf("versions of the assets = %+v, want %+v (what the binaries say)", p.Versions, want)
	}
	if v, err := Selected(context.Background(), Versions{KubeAPIServer: "v1.36.3"}, Options{AssetsDir: dir}); err != nil || v.KubeAPIServer != "v1.35.2" {
		t.Errorf("Selected with assets = %+v, %v; want kube-apiserver v1.35.2", v, err)
	}
	if err := os.Chmod(filepath.Join(dir, Etcd), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(context.Background(), Versions{}, Options{AssetsDir: dir}); err == nil || !strings.Contains(err.Error(), "not an executable") {
		t.Errorf("non-executable etcd: want a clear error, got %v", err)
	}
}

// fakeAssets writes kube-apiserver, etcd and etcdutl into dir that print
// kube and etcd for --version.
func fakeAssets(t *testing.T, dir, kube, etcd string) {
	t.Helper()
	for name, out := range map[string]string{KubeAPIServer: kube, Etcd: etcd, Etcdutl: ""} {
		script := "#!/bin/sh\ncat <<'EOF'\n" + out + "\nEOF\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAssetsVersionUnreadable: binaries that do not say their version are
// an error naming the binary and what it printed.
func TestAssetsVersionUnreadable(t *testing.T) {
	dir := t.TempDir()
	fakeAssets(t, dir, "no version here", "etcd Version: 3.6.16")
	_, err := Ensure(context.Background(), Versions{}, Options{AssetsDir: dir})
	if err == nil {
		t.Fatal("Ensure accepted a kube-apiserver that does not say its version")
	}
	for _, want := range []string{"cannot tell the version of " + filepath.Join(dir, KubeAPIServer), "no version here", "Kubernetes v1.36.3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- ensureBuilt(context.Background(), Options{CacheDir: cache, Progress: os.Stderr}, "thing", []string{out}, build)
		}()
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

// fakeGo puts on PATH a go command that answers `go mod download -json` as
// the go command does for a version the module proxy refuses: the JSON with
// the proxy's answer on stdout, nothing on stderr, exit status 1.
func fakeGo(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/sh
cat <<'JSON'
{
	"Path": "k8s.io/kubernetes",
	"Version": "v1.36.99",
	"Error": "k8s.io/kubernetes@v1.36.99: reading https://proxy.golang.org/k8s.io/kubernetes/@v/v1.36.99.info: 403 Forbidden\n\tserver response: This module version is not available."
}
JSON
exit 1
`
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(filepath.ListSeparator)+os.Getenv("PATH"))
}

// leftIn lists the files under dir's subdirectories subs, and the
// directories directly in dir/src (a build's sources).
func leftIn(t *testing.T, dir string, subs ...string) []string {
	t.Helper()
	var left []string
	for _, s := range subs {
		_ = filepath.WalkDir(filepath.Join(dir, s), func(p string, d os.DirEntry, err error) error {
			if err == nil && (!d.IsDir() || filepath.Dir(p) == filepath.Join(dir, "src")) {
				left = append(left, p)
			}
			return nil
		})
	}
	return left
}

// TestProxyRefusalKept: the module proxy's own answer (403, "This module
// version is not available") is in the error, and the failed build leaves
// no partial directory in the cache.
func TestProxyRefusalKept(t *testing.T) {
	fakeGo(t)
	cache := t.TempDir()
	_, err := Ensure(context.Background(), Versions{KubeAPIServer: "v1.36.99"}, Options{CacheDir: cache})
	if err == nil {
		t.Fatal("Ensure succeeded with a proxy that refuses the version")
	}
	for _, want := range []string{"k8s.io/kubernetes@v1.36.99", "403 Forbidden", "This module version is not available", "does not serve"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if left := leftIn(t, cache, "src", "bin"); len(left) > 0 {
		t.Errorf("a failed build left %v", left)
	}
}

// TestFailedBuildLeavesNothing: whatever a failed build wrote (sources,
// half-written outputs) is gone; a successful one is kept.
func TestFailedBuildLeavesNothing(t *testing.T) {
	cache := t.TempDir()
	out := filepath.Join(cache, "bin", "r1", "thing", "v1", "thing")
	var work string
	build := func(w string) error {
		work = w
		if err := os.WriteFile(filepath.Join(w, "go.mod"), []byte("module x\n"), 0o644); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(filepath.Dir(out), ".thing.tmp"), []byte("half"), 0o755); err != nil {
			return err
		}
		return fmt.Errorf("go build: exit status 1")
	}
	err := ensureBuilt(context.Background(), Options{CacheDir: cache, Progress: io.Discard}, "thing-v1", []string{out}, build)
	if err == nil || !strings.Contains(err.Error(), "exit status 1") {
		t.Fatalf("ensureBuilt = %v, want the build's error", err)
	}
	if left := leftIn(t, cache, "src", "bin"); len(left) > 0 {
		t.Errorf("a failed build left %v", left)
	}
	if _, err := os.Stat(filepath.Dir(out)); !os.IsNotExist(err) {
		t.Errorf("a failed build left its output directory %s (%v)", filepath.Dir(out), err)
	}
	ok := func(w string) error {
		work = w
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, []byte("x"), 0o755)
	}
	if err := ensureBuilt(context.Background(), Options{CacheDir: cache, Progress: io.Discard}, "thing-v1", []string{out}, ok); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cache, "src", "thing-v1")); err != nil {
		t.Errorf("the successful build's sources are not at src/thing-v1: %v", err)
	}
	if _, err := os.Stat(work); !os.IsNotExist(err) && filepath.Base(work) != "thing-v1" {
		t.Errorf("the build's temporary directory %s is left", work)
	}
}

// TestCopyExecutable: the copy has the source's bytes and is executable,
// and a copy over an existing file replaces it whole.
func TestCopyExecutable(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("#!/bin/sh\necho new\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "out", "kube-apiserver")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := copyExecutable(src, dst); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dst)
	if err != nil || string(b) != "#!/bin/sh\necho new\n" {
		t.Fatalf("copy holds %q (%v)", b, err)
	}
	if !allExecutable([]string{dst}) {
		t.Error("the copy is not executable")
	}
	if _, err := os.Stat(dst + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
}

func TestCacheKey(t *testing.T) {
	got, err := CacheKey(Versions{})
	if want := recipe + "-kube-apiserver-" + DefaultKubeVersion + "-etcd-" + DefaultEtcdVersion; err != nil || got != want {
		t.Errorf("CacheKey(defaults) = %q, %v; want %q", got, err, want)
	}
	if got, err := CacheKey(Versions{KubeAPIServer: "1.33.13", Etcd: "3.5.21"}); err != nil || got != recipe+"-kube-apiserver-v1.33.13-etcd-v3.5.21" {
		t.Errorf("CacheKey(1.33.13, 3.5.21) = %q, %v", got, err)
	}
	if _, err := CacheKey(Versions{KubeAPIServer: "latest"}); err == nil || !strings.Contains(err.Error(), "not a release version") {
		t.Errorf("CacheKey(latest) = %v, want the version refused", err)
	}
}

// TestPreviousRelease: the pinned patch of the minor before, or
// KUBE_UPGRADE_FROM; an error where no minor before is pinned.
func TestPreviousRelease(t *testing.T) {
	if got, err := PreviousRelease("v1.37.2", ""); err != nil || got != "v1.36.3" {
		t.Errorf("PreviousRelease(v1.37.2) = %q, %v; want v1.36.3", got, err)
	}
	if _, err := PreviousRelease("v1.33.13", ""); err == nil || !strings.Contains(err.Error(), "no pinned kube-apiserver release of 1.32") {
		t.Errorf("PreviousRelease(v1.33.13): err %v, want none pinned", err)
	}
	if got, err := PreviousRelease("v1.37.2", "1.34.4"); err != nil || got != "v1.34.4" {
		t.Errorf("with %s=1.34.4: %q, %v", EnvUpgradeFrom, got, err)
	}
}
