package local_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/cluster/local/localtest"
	"github.com/informer-conformance/informer-conformance/fixtures"
)

// Named bounds for the waits in these tests.
const (
	convergeTimeout = 30 * time.Second
	pollInterval    = 50 * time.Millisecond
	// The watch cache polls for compactions every 15 s.
	watchCacheCompactTimeout = 20 * time.Second
)

// startCluster starts a cluster for the test (see localtest).
func startCluster(t *testing.T, opts local.Options) *local.Cluster {
	t.Helper()
	return localtest.Start(t, opts)
}

func clientset(t *testing.T, c *local.Cluster, u cluster.User, host string) kubernetes.Interface {
	t.Helper()
	cfg, err := c.RESTConfigFor(u, host)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}}},
	}
}

func newConfigMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault}, Data: map[string]string{"k": "v"}}
}

// TestPodSurvivesRestarts: a pod written before a restart of either kind is
// read back, with the same UID, from the restarted apiserver at the same
// address with the same certificates; the old process is gone first.
func TestPodSurvivesRestarts(t *testing.T) {
	c := startCluster(t, local.Options{})
	ctx := testCtx(t)
	cs := clientset(t, c, cluster.TestUser, c.APIServerURL(0))
	if want := c.Binaries().Versions.KubeAPIServer; want != "" {
		v, err := cs.Discovery().ServerVersion()
		if err != nil || v.GitVersion != want {
			t.Fatalf("server version = %v, %v; want the built %s", v, err, want)
		}
		if got := c.ServerVersion(); got != want {
			t.Errorf("ServerVersion() = %q, want %s", got, want)
		}
	}
	created, err := cs.CoreV1().Pods("default").Create(ctx, newPod("survivor"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod as test user: %v", err)
	}
	for _, mode := range []cluster.StopMode{cluster.Hard, cluster.Graceful} {
		t.Run(string(mode), func(t *testing.T) {
			old := c.Pids()["kube-apiserver-0"]
			if err := c.RestartAPIServer(ctx, 0, mode); err != nil {
				t.Fatalf("%s restart: %v", mode, err)
			}
			if alive(old) {
				t.Errorf("old kube-apiserver pid %d still alive after %s restart", old, mode)
			}
			if now := c.Pids()["kube-apiserver-0"]; now == 0 || now == old {
				t.Errorf("want a new kube-apiserver process, pid before %d after %d", old, now)
			}
			// The same clientset, so the same TLS trust and address.
			got, err := cs.CoreV1().Pods("default").Get(ctx, "survivor", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("read pod back after %s restart: %v", mode, err)
			}
			if got.UID != created.UID {
				t.Errorf("pod UID after %s restart = %s, want %s", mode, got.UID, created.UID)
			}
		})
	}
}

// TestTestUserIsLeastPrivilege: the test user works on pods but cannot touch
// RBAC or nodes, and no client skips TLS verification.
func TestTestUserIsLeastPrivilege(t *testing.T) {
	c := startCluster(t, local.Options{})
	ctx := testCtx(t)
	cs := clientset(t, c, cluster.TestUser, c.APIServerURL(0))
	if _, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("test user list pods: %v", err)
	}
	if _, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("test user list nodes: want Forbidden, got %v", err)
	}
	if _, err := cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("test user list clusterroles: want Forbidden, got %v", err)
	}
	for _, u := range []cluster.User{cluster.Admin, cluster.TestUser} {
		cfg, err := c.RESTConfig(u)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Insecure || len(cfg.CAData) == 0 && cfg.CAFile == "" {
			t.Errorf("%s config: insecure=%v, no CA: want verified TLS", u, cfg.Insecure)
		}
	}
	// A client that does not trust our CA is refused by TLS.
	if _, err := http.Get(c.APIServerURL(0) + "/readyz"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("GET /readyz with the system roots: want a certificate error, got %v", err)
	}
}

// TestCompactionExpiresOldResourceVersions: after compacting etcd, reading
// or watching from a resourceVersion before the compaction answers 410 Gone.
func TestCompactionExpiresOldResourceVersions(t *testing.T) {
	for _, profile := range []string{"default", "no-watch-cache"} {
		t.Run(profile, func(t *testing.T) {
			p, err := local.LoadProfile(profile)
			if err != nil {
				t.Fatal(err)
			}
			c := startCluster(t, local.Options{Profile: p})
			ctx := testCtx(t)
			cs := clientset(t, c, cluster.Admin, c.APIServerURL(0))
			cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, newConfigMap("history"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			oldRV := cm.ResourceVersion
			for i := range 3 {
				cm.Data["k"] = fmt.Sprint(i)
				if cm, err = cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			rev, err := c.CompactEtcd(ctx, 0)
			if err != nil {
				t.Fatalf("compact: %v", err)
			}
			if want := mustAtoi(t, cm.ResourceVersion); rev < want {
				t.Fatalf("compacted to %d, want at least the last write %d", rev, want)
			}
			// etcd answers at once; the watch cache learns of the compaction
			// through compact_rev_key and purges its snapshots on its next
			// poll (every 15 s), so a cached list may take that long.
			start := time.Now()
			var lastErr error
			err = wait.PollUntilContextTimeout(ctx, pollInterval, watchCacheCompactTimeout, true, func(ctx context.Context) (bool, error) {
				_, lastErr = cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{ResourceVersion: oldRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
				return apierrors.IsResourceExpired(lastErr) || apierrors.IsGone(lastErr), nil
			})
			if err != nil {
				t.Errorf("list at compacted resourceVersion %s: want 410 Gone within %s, last got %v", oldRV, watchCacheCompactTimeout, lastErr)
			}
			t.Logf("list at compacted resourceVersion answered 410 after %s", time.Since(start).Round(time.Millisecond))
			if profile == "no-watch-cache" {
				// Without the watch cache a watch goes to etcd, whose history is gone.
				expectWatchGone(ctx, t, cs, oldRV)
			}
		})
	}
}

// expectWatchGone opens a watch at rv and wants it refused or ended with 410.
func expectWatchGone(ctx context.Context, t *testing.T, cs kubernetes.Interface, rv string) {
	t.Helper()
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Errorf("watch at %s: want 410 Gone, got %v", rv, err)
		}
		return
	}
	defer w.Stop()
	timeout := time.After(convergeTimeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Errorf("watch at %s closed without an error event, want 410 Gone", rv)
				return
			}
			if ev.Type == watch.Error {
				if err := apierrors.FromObject(ev.Object); !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
					t.Errorf("watch at %s: want 410 Gone, got %v", rv, err)
				}
				return
			}
		case <-timeout:
			t.Errorf("watch at %s: no 410 within %s", rv, convergeTimeout)
			return
		}
	}
}

// TestRestoreRewindsEtcd: restoring a snapshot makes an object created after
// the snapshot disappear and keeps the one before it; with
// --bump-revision/--mark-compacted resourceVersions keep growing and the old
// ones answer 410, without it they go backwards.
func TestRestoreRewindsEtcd(t *testing.T) {
	cases := []struct {
		name string
		opts cluster.RestoreOptions
	}{
		{"plain", cluster.RestoreOptions{}},
		{"bumped", cluster.RestoreOptions{BumpRevision: 1_000_000, MarkCompacted: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := startCluster(t, local.Options{})
			ctx := testCtx(t)
			cs := clientset(t, c, cluster.Admin, c.APIServerURL(0))
			if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, newConfigMap("before"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			snap := filepath.Join(t.TempDir(), "etcd.db")
			snapRev, err := c.SnapshotEtcd(ctx, snap)
			if err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			after, err := cs.CoreV1().ConfigMaps("default").Create(ctx, newConfigMap("after"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// More history after the snapshot than the restarted apiservers
			// write on start, so a plain restore visibly rewinds the revision.
			for i := range 20 {
				after.Data["k"] = fmt.Sprint(i)
				if after, err = cs.CoreV1().ConfigMaps("default").Update(ctx, after, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.RestoreEtcd(ctx, snap, tc.opts); err != nil {
				t.Fatalf("restore: %v", err)
			}
			if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "after", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("configmap created after the snapshot: want NotFound after restore, got %v", err)
			}
			if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "before", metav1.GetOptions{}); err != nil {
				t.Errorf("configmap created before the snapshot: %v", err)
			}
			rev, err := c.EtcdRevision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			afterRV := mustAtoi(t, after.ResourceVersion)
			if tc.opts.BumpRevision == 0 {
				if rev >= afterRV {
					t.Errorf("plain restore: etcd revision %d, want below the lost write's %d (resourceVersion goes backwards)", rev, afterRV)
				}
			} else {
				if rev < snapRev+int64(tc.opts.BumpRevision) {
					t.Errorf("bumped restore: etcd revision %d, want >= snapshot %d + bump %d", rev, snapRev, tc.opts.BumpRevision)
				}
				_, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{ResourceVersion: after.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
				if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
					t.Errorf("list at pre-restore resourceVersion %s after a bumped, compacted restore: want 410, got %v", after.ResourceVersion, err)
				}
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int64 {
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("resourceVersion %q: %v", s, err)
	}
	return n
}

// TestHAAPIServersShareEtcd: two apiservers over one etcd serve the same
// data, and one keeps serving while the other is down.
func TestHAAPIServersShareEtcd(t *testing.T) {
	c := startCluster(t, local.Options{APIServers: 2})
	ctx := testCtx(t)
	if c.APIServerURL(0) == c.APIServerURL(1) {
		t.Fatalf("both apiservers at %s", c.APIServerURL(0))
	}
	cs0 := clientset(t, c, cluster.TestUser, c.APIServerURL(0))
	cs1 := clientset(t, c, cluster.TestUser, c.APIServerURL(1))
	created, err := cs0.CoreV1().Pods("default").Create(ctx, newPod("shared"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs1.CoreV1().Pods("default").Get(ctx, "shared", metav1.GetOptions{})
	if err != nil || got.UID != created.UID {
		t.Fatalf("read through apiserver 1: %v (uid %v, want %s)", err, got.GetUID(), created.UID)
	}
	if err := c.StopAPIServer(ctx, 0, cluster.Hard); err != nil {
		t.Fatal(err)
	}
	if _, err := cs0.CoreV1().Pods("default").Get(ctx, "shared", metav1.GetOptions{}); err == nil {
		t.Errorf("apiserver 0 answered while stopped")
	}
	if err := cs1.CoreV1().Pods("default").Delete(ctx, "shared", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete through apiserver 1 while 0 is down: %v", err)
	}
	if err := c.StartAPIServer(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := cs0.CoreV1().Pods("default").Get(ctx, "shared", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("apiserver 0 after restart: want the delete made through 1 (NotFound), got %v", err)
	}
}

// TestEtcdLinkStallsOneAPIServer: with EtcdLinks, stalling apiserver 1's
// link to etcd (its answers and watch events held) leaves its watch cache
// behind while apiserver 0 stays current; restored, it catches up. Without
// EtcdLinks there is no link to fault.
func TestEtcdLinkStallsOneAPIServer(t *testing.T) {
	c := startCluster(t, local.Options{APIServers: 2, EtcdLinks: true})
	ctx := testCtx(t)
	cs0 := clientset(t, c, cluster.Admin, c.APIServerURL(0))
	cs1 := clientset(t, c, cluster.Admin, c.APIServerURL(1))
	cached := func() []string { // apiserver 1's watch cache (resourceVersion "0")
		l, err := cs1.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, cm := range l.Items {
			names = append(names, cm.Name)
		}
		return names
	}
	link, err := c.EtcdLink(1)
	if err != nil {
		t.Fatal(err)
	}
	restore, held := link.StallAfter(0)
	defer restore()
	if _, err := cs0.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "while-stalled"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Long enough for an unstalled watch cache to have caught up many times
	// over (milliseconds), so its absence is the stall's doing.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if slices.Contains(cached(), "while-stalled") {
			t.Fatalf("apiserver 1's watch cache has the configmap written while its etcd link was stalled")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if held() == 0 {
		t.Errorf("the stall held no bytes of etcd's")
	}
	restore()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return slices.Contains(cached(), "while-stalled"), nil
	}); err != nil {
		t.Fatalf("apiserver 1's watch cache did not catch up within 30s of the link's restore: %v", cached())
	}
	if _, err := c.EtcdLink(5); err == nil {
		t.Errorf("EtcdLink(5) of 2 apiservers: no error")
	}
	plain := startCluster(t, local.Options{})
	if _, err := plain.EtcdLink(0); err == nil || !strings.Contains(err.Error(), "EtcdLinks") {
		t.Errorf("EtcdLink without EtcdLinks = %v, want an error naming EtcdLinks", err)
	}
}

// TestEtcdRestart: after etcd restarts (both modes) the apiserver serves the
// data again without being restarted itself.
func TestEtcdRestart(t *testing.T) {
	c := startCluster(t, local.Options{})
	ctx := testCtx(t)
	cs := clientset(t, c, cluster.Admin, c.APIServerURL(0))
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, newConfigMap("kept"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []cluster.StopMode{cluster.Hard, cluster.Graceful} {
		if err := c.RestartEtcd(ctx, mode); err != nil {
			t.Fatalf("%s etcd restart: %v", mode, err)
		}
		err := wait.PollUntilContextTimeout(ctx, pollInterval, convergeTimeout, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("configmap not readable within %s after %s etcd restart: %v", convergeTimeout, mode, err)
		}
	}
}

// TestStopStartSeparately: a spec can hold the apiserver down, and operations
// on a stopped process fail clearly.
func TestStopStartSeparately(t *testing.T) {
	c := startCluster(t, local.Options{})
	ctx := testCtx(t)
	if err := c.StopAPIServer(ctx, 0, cluster.Graceful); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Pids()["kube-apiserver-0"]; ok {
		t.Errorf("kube-apiserver-0 still listed after stop")
	}
	if err := c.StopAPIServer(ctx, 0, cluster.Hard); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("stop of a stopped apiserver: want 'not running', got %v", err)
	}
	if err := c.StopAPIServer(ctx, 0, "gently"); err == nil || !strings.Contains(err.Error(), "unknown stop mode") {
		t.Errorf("unknown mode: want a clear error, got %v", err)
	}
	if err := c.StopAPIServer(ctx, 3, cluster.Hard); err == nil || !strings.Contains(err.Error(), "no apiserver 3") {
		t.Errorf("bad index: want a clear error, got %v", err)
	}
	if err := c.StartAPIServer(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.StartAPIServer(ctx, 0); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("start of a running apiserver: want 'already running', got %v", err)
	}
}

// TestProfiles: profile flags and gates reach the binary; what it rejects
// comes back as a clear error.
func TestProfiles(t *testing.T) {
	localtest.SkipIfShort(t)
	ctx := testCtx(t)
	t.Run("managed flag rejected", func(t *testing.T) {
		_, err := local.Start(ctx, local.Options{Profile: local.Profile{Name: "bad", APIServerFlags: map[string]string{"--secure-port": "1"}}})
		if err == nil || !strings.Contains(err.Error(), "--secure-port cannot be set by a profile") {
			t.Errorf("want a clear error, got %v", err)
		}
	})
	t.Run("unknown flag reported from the binary", func(t *testing.T) {
		_, err := local.Start(ctx, local.Options{ArtifactsDir: t.TempDir(), Profile: local.Profile{Name: "typo", APIServerFlags: map[string]string{"watch-cahce": "false"}}})
		if err == nil || !strings.Contains(err.Error(), "unknown flag: --watch-cahce") {
			t.Errorf("want kube-apiserver's 'unknown flag' in the error, got %v", err)
		}
	})
	t.Run("unknown feature gate reported from the binary", func(t *testing.T) {
		_, err := local.Start(ctx, local.Options{ArtifactsDir: t.TempDir(), Profile: local.Profile{Name: "gate", FeatureGates: map[string]bool{"NoSuchGate": true}}})
		if err == nil || !strings.Contains(err.Error(), "NoSuchGate") {
			t.Errorf("want the gate named in the error, got %v", err)
		}
	})
	t.Run("unknown profile", func(t *testing.T) {
		_, err := local.LoadProfile("no-such-profile")
		if err == nil || !strings.Contains(err.Error(), "no-watch-cache") {
			t.Errorf("want an error listing the known profiles, got %v", err)
		}
	})
	t.Run("flags reach the binary", func(t *testing.T) {
		p, err := local.LoadProfile("short-request-timeout")
		if err != nil {
			t.Fatal(err)
		}
		p.FeatureGates = map[string]bool{"WatchList": true}
		c := startCluster(t, local.Options{Profile: p})
		log, err := os.ReadFile(filepath.Join(c.ArtifactsDir(), "kube-apiserver-0.log"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"--min-request-timeout=5", "--feature-gates=WatchList=true"} {
			if !strings.Contains(string(log), want) {
				t.Errorf("kube-apiserver command line lacks %s", want)
			}
		}
	})
}

// TestLoadProfileRefusesLocalFlags: the profile package checks a
// profile's shape (its own tests); local.LoadProfile and ParseProfile also
// refuse the flags the local backend wires itself, combined profiles too.
// A flag the kind backend refuses (kubeadm's) passes here.
func TestLoadProfileRefusesLocalFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "port.yaml")
	if err := os.WriteFile(file, []byte("apiServerFlags:\n  secure-port: \"1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := local.LoadProfile(file); err == nil || !strings.Contains(err.Error(), "--secure-port cannot be set by a profile: the backend allocates ports") {
		t.Errorf("LoadProfile: want secure-port refused, got %v", err)
	}
	if _, err := local.ParseProfile([]byte("apiServerFlags:\n  cert-dir: /x\n")); err == nil || !strings.Contains(err.Error(), "--cert-dir cannot be set") {
		t.Errorf("ParseProfile: want cert-dir refused, got %v", err)
	}
	if p, err := local.ParseProfile([]byte("apiServerFlags:\n  authorization-mode: RBAC\n")); err != nil || p.APIServerFlags["authorization-mode"] != "RBAC" {
		t.Errorf("ParseProfile of a flag the local backend leaves to profiles: %v, %v", p, err)
	}
	p, err := local.LoadProfile("fast-graceful-shutdown+no-watch-cache")
	if err != nil || p.Name != "fast-graceful-shutdown+no-watch-cache" || len(p.APIServerFlags) != 2 {
		t.Errorf("a combined profile: %+v, %v", p, err)
	}
}

// TestClosedClusterRefusesWork: after Close every process is gone and
// lifecycle calls fail clearly.
func TestClosedClusterRefusesWork(t *testing.T) {
	localtest.SkipIfShort(t)
	ctx := testCtx(t)
	c, err := local.Start(ctx, local.Options{ArtifactsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pids := c.Pids()
	work := c.WorkDir()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) alive after Close", name, pid)
		}
	}
	if _, err := os.Stat(work); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work dir %s still there after Close: %v", work, err)
	}
	if err := c.StartAPIServer(ctx, 0); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("start after close: want 'closed', got %v", err)
	}
}

// TestRecoverSwitchedAPIServer: an apiserver a failed upgrade left at
// another version runs the cluster's own again after Recover (skipped
// without the previous minor's build: make binaries-upgrade).
func TestRecoverSwitchedAPIServer(t *testing.T) {
	c := startCluster(t, local.Options{})
	own := c.ServerVersion()
	from, err := binaries.PreviousRelease(own, os.Getenv(binaries.EnvUpgradeFrom))
	if err != nil {
		t.Skip(err)
	}
	if _, _, err := binaries.Built(from, binaries.Options{}); err != nil {
		t.Skipf("kube-apiserver %s not built (make binaries-upgrade): %v", from, err)
	}
	ctx := testCtx(t)
	if err := c.SwitchAPIServer(ctx, 0, from, cluster.Graceful); err != nil {
		t.Fatal(err)
	}
	if got := c.APIServerVersion(0); got != from {
		t.Fatalf("after the switch: %s, want %s", got, from)
	}
	if err := c.Recover(ctx); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if got := c.APIServerVersion(0); got != own {
		t.Errorf("after Recover: %s, want the cluster's own %s", got, own)
	}
	v, err := clientset(t, c, cluster.Admin, c.APIServerURL(0)).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != own {
		t.Errorf("the apiserver says %s after Recover, want %s", v.GitVersion, own)
	}
}

// TestRecoverAndExportLogs: a cluster shared by several scenarios gets back
// what one of them stopped, and its logs can be exported.
func TestRecoverAndExportLogs(t *testing.T) {
	c := startCluster(t, local.Options{})
	ctx := testCtx(t)
	if err := c.Recover(ctx); err != nil {
		t.Fatalf("Recover of a running cluster: %v", err)
	}
	if err := c.StopAPIServer(ctx, 0, cluster.Hard); err != nil {
		t.Fatal(err)
	}
	if err := c.StopEtcd(ctx, cluster.Hard); err != nil {
		t.Fatal(err)
	}
	if err := c.Recover(ctx); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	for _, name := range []string{"etcd", "kube-apiserver-0"} {
		if _, ok := c.Pids()[name]; !ok {
			t.Errorf("%s not running after Recover (pids %v)", name, c.Pids())
		}
	}
	if _, err := clientset(t, c, cluster.Admin, c.APIServerURL(0)).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("after Recover: %v", err)
	}

	dir := filepath.Join(t.TempDir(), "logs")
	if err := c.ExportLogs(ctx, dir); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(logs) < 2 {
		t.Errorf("exported logs %v, want etcd's and kube-apiserver's", logs)
	}
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.ExportLogs(ctx, filepath.Join(file, "logs")); err == nil || !strings.Contains(err.Error(), "export logs") {
		t.Errorf("ExportLogs into a path under a file = %v, want an error saying so", err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Recover(ctx); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Recover of a closed cluster = %v, want an error", err)
	}
}

// TestShippedProfilesParse: every profile in fixtures/profiles parses and
// says what it is for. The list is read from the fixtures, not written
// here: the hand-written list before missed fast-graceful-shutdown and cbor.
func TestShippedProfilesParse(t *testing.T) {
	names := fixtures.ProfileNames()
	for _, want := range []string{"default", "fast-graceful-shutdown", "no-watch-cache"} {
		if !slices.Contains(names, want) {
			t.Errorf("fixtures.ProfileNames() = %v lacks %s", names, want)
		}
	}
	for _, name := range names {
		p, err := local.LoadProfile(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if strings.TrimSpace(p.Description) == "" {
			t.Errorf("%s has no description", name)
		}
	}
}

// alive reports whether pid exists and is not a zombie (a dead child that
// its new parent has not reaped yet is gone for our purposes).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || len(s) < i+3 || s[i+2] != 'Z'
}
