package kind_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	backend "github.com/informer-conformance/informer-conformance/cluster/kind"
	"github.com/informer-conformance/informer-conformance/cluster/kind/docker"
	"github.com/informer-conformance/informer-conformance/cluster/kind/lbimage"
	"github.com/informer-conformance/informer-conformance/cluster/kind/nodeimage"
	"github.com/informer-conformance/informer-conformance/integrations/e2eframework/kind"
	"github.com/informer-conformance/informer-conformance/integrations/e2eframework/provider"
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
		v, err := binaries.FromEnv() // KUBE_VERSION's image, as the backend picks it
		if err != nil {
			t.Fatal(err)
		}
		image = nodeimage.Tag(v.KubeAPIServer)
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
	loadImages(ctx, t, cfg, "ic-e2efw", c.KindName()+"-control-plane", cs)
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
	// image is kind's own field (a setting of KIND_NODE_IMAGE), the rest strict.
	imageConfig := filepath.Join(dir, "image.yaml")
	if err := os.WriteFile(imageConfig, []byte("image: kindest/node:v1.37.2\napiServers: 2\nnodes: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := kind.NewProvider().CreateWithConfig(ctx, imageConfig); err == nil || !strings.Contains(err.Error(), `unknown field "nodes"`) {
		t.Errorf("a config with image and an unknown field = %v, want an error naming the unknown field only", err)
	}
	if _, err := kind.NewProvider().WithOpts(provider.WithEtcdVersion("v3.6.1")).Create(ctx); err == nil || !strings.Contains(err.Error(), "does not read ETCD_VERSION") {
		t.Errorf("an etcd version = %v, want an error: the kind backend runs kubeadm's etcd", err)
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
	if err := kind.NewProvider().(*kind.Provider).LoadImage(ctx, "example/app:dev"); err == nil || !strings.Contains(err.Error(), "no cluster yet") {
		t.Errorf("LoadImage before Create = %v", err)
	}
	if err := kind.NewProvider().(*kind.Provider).LoadImage(ctx, "example/app:dev", "--name=x"); err == nil || !strings.Contains(err.Error(), "--nodes") {
		t.Errorf("LoadImage with an unknown argument = %v", err)
	}
}

// checkLoadBalancerImage: offline (kind's Envoy neither here nor
// pullable) the load balancer runs the stand-in, and kind's name is not
// left on it by this process (another one creating a cluster may hold it).
func checkLoadBalancerImage(ctx context.Context, t *testing.T, container string) {
	t.Helper()
	d, err := docker.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.Run(ctx, nil, "inspect", "--format", "{{.Image}}", container)
	if err != nil {
		t.Fatal(err)
	}
	running := strings.TrimSpace(string(out))
	kinds := lbimage.Inspect(ctx, d, lbimage.Image)
	standIn := lbimage.Inspect(ctx, d, lbimage.StandIn)
	switch {
	case kinds.Present && !kinds.Ours:
		if running != kinds.ID {
			t.Errorf("the load balancer runs %s, not kind's own %s (%s)", running, lbimage.Image, kinds.ID)
		}
		t.Logf("load balancer: kind's own %s", lbimage.Image)
	case running != standIn.ID:
		t.Errorf("the load balancer runs %s, not the stand-in %s (%s)", running, lbimage.StandIn, standIn.ID)
	default:
		t.Logf("load balancer: the stand-in %s (%s); kind's name %s now: present=%v (held by another process if present)", lbimage.StandIn, running, lbimage.Image, kinds.Present)
	}
}

// loadImages loads two images no registry has (a static binary that
// prints a line, imported into the host's Docker) through envfuncs: one
// from the host's Docker, one from an archive. Each must then be in the
// node's containerd (crictl, on the node), and a pod must run the first
// (imagePullPolicy Never: from the node alone). Mistakes are clear errors.
func loadImages(ctx context.Context, t *testing.T, cfg *envconf.Config, name, node string, cs kubernetes.Interface) {
	t.Helper()
	d, err := docker.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref := fmt.Sprintf("informer-conformance-test/loaded:%d", os.Getpid())
	archived := ref + "-archived"
	tinyImage(ctx, t, d, ref)
	t.Cleanup(func() { _, _ = d.Run(context.Background(), nil, "rmi", ref, archived) })
	if _, err := d.Run(ctx, nil, "tag", ref, archived); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "archived.tar")
	if _, err := d.Run(ctx, nil, "save", "-o", archive, archived); err != nil {
		t.Fatal(err)
	}
	crictl := func() string {
		out, err := d.Run(ctx, nil, "exec", node, "crictl", "images")
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	if before := crictl(); strings.Contains(before, "informer-conformance-test/loaded") {
		t.Fatalf("the node has the image before it is loaded:\n%s", before)
	}
	start := time.Now()
	if _, err := envfuncs.LoadImageToCluster(name, ref)(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Logf("LoadImageToCluster %s: %s", ref, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if _, err := envfuncs.LoadImageArchiveToCluster(name, archive)(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Logf("LoadImageArchiveToCluster %s: %s", archive, time.Since(start).Round(time.Millisecond))
	after := crictl()
	t.Logf("docker exec %s crictl images:\n%s", node, after)
	repo, tag, _ := strings.Cut(ref, ":")
	for _, want := range []string{tag, tag + "-archived"} {
		if !regexp.MustCompile(`(?m)^docker\.io/` + regexp.QuoteMeta(repo) + `\s+` + regexp.QuoteMeta(want) + `\s`).MatchString(after) {
			t.Errorf("crictl images on %s has no docker.io/%s:%s", node, repo, want)
		}
	}
	// Loaded again: already there, nothing imported.
	if _, err := envfuncs.LoadImageToCluster(name, ref)(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	runPod(ctx, t, cs, ref)

	if _, err := envfuncs.LoadImageToCluster(name, ref+"-none")(ctx, cfg); err == nil || !strings.Contains(err.Error(), "not in the host's Docker") {
		t.Errorf("LoadImageToCluster of an image the host lacks = %v", err)
	}
	if _, err := envfuncs.LoadImageToCluster(name, ref, "--nodes=no-such-node")(ctx, cfg); err == nil || !strings.Contains(err.Error(), node) {
		t.Errorf("LoadImageToCluster onto an unknown node = %v, want an error naming the nodes", err)
	}
}

// tinyImage imports, as ref, an image of one static binary, /hello, which
// prints podOutput.
func tinyImage(ctx context.Context, t *testing.T, d *docker.Docker, ref string) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\""+podOutput+"\\n\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rootfs := filepath.Join(dir, "rootfs")
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(rootfs, "hello"), src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tar := exec.CommandContext(ctx, "tar", "-C", rootfs, "-c", "hello")
	pipe, err := tar.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tar.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Run(ctx, pipe, "import", "--change", `CMD ["/hello"]`, "-", ref); err != nil {
		t.Fatal(err)
	}
	if err := tar.Wait(); err != nil {
		t.Fatal(err)
	}
}

const podOutput = "hello from a loaded image"

// serviceAccountTimeout bounds the wait for the controller manager to make
// the default namespace's service account after the cluster is ready.
const serviceAccountTimeout = time.Minute

// runPod runs image in a pod that may not pull it and checks its output.
func runPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, image string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "loaded-image", Namespace: "default"},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "hello", Image: image, ImagePullPolicy: corev1.PullNever}},
		},
	}
	// The service account admission refuses a pod until the controller
	// manager has made the namespace's default service account, which it
	// does some time after the cluster is ready.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, serviceAccountTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("service account default/default: not made within %s: %v", serviceAccountTimeout, err)
	}
	start := time.Now()
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	w, err := cs.CoreV1().Pods("default").Watch(wctx, metav1.ListOptions{FieldSelector: "metadata.name=" + pod.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var last *corev1.Pod
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		last = p
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Waiting != nil && (s.State.Waiting.Reason == "ErrImageNeverPull" || s.State.Waiting.Reason == "CreateContainerError") {
				t.Fatalf("pod %s: %s: %s", p.Name, s.State.Waiting.Reason, s.State.Waiting.Message)
			}
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			break
		}
	}
	if last == nil || last.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pod running the loaded image did not succeed within 2 min: %+v", last)
	}
	logs, err := cs.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(logs)) != podOutput {
		t.Fatalf("pod output %q, want %q", logs, podOutput)
	}
	t.Logf("pod of the loaded image (pull policy Never) succeeded in %s, printing %q", time.Since(start).Round(100*time.Millisecond), strings.TrimSpace(string(logs)))
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
	p := kind.NewProvider().WithOpts(kind.WithAPIServers(2), kind.WithProfile("goaway"), kind.WithEtcdLinks(), kind.WithProgress(testLog{t}))
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
	checkLoadBalancerImage(ctx, t, c.KindName()+"-external-load-balancer")
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

// testLog sends progress lines to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
