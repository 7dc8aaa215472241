package kind

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/kind/docker"
	"github.com/informer-conformance/informer-conformance/cluster/kind/nodeimage"
)

// EnvIntegration=1 makes the tests that need Docker and the node image fail
// instead of skipping when either is missing (make e2e-kind sets it).
const EnvIntegration = "INFORMER_CONFORMANCE_KIND_INTEGRATION"

// testImage is the node image the integration tests use: $KIND_NODE_IMAGE
// (pulled if need be) or the built one.
var testImage string

func needDockerAndImage(t *testing.T) *docker.Docker {
	t.Helper()
	skip := t.Skipf
	if os.Getenv(EnvIntegration) == "1" {
		skip = t.Fatalf
	}
	d, err := docker.New(context.Background())
	if err != nil {
		skip("kind integration test: %v", err)
		return nil
	}
	image := os.Getenv(EnvNodeImage)
	if image == "" {
		v, err := binaries.FromEnv() // KUBE_VERSION's image, as the backend picks it
		if err != nil {
			t.Fatal(err)
		}
		image = nodeimage.Tag(v.KubeAPIServer)
	}
	if !d.ImageExists(context.Background(), image) && os.Getenv(EnvNodeImage) != "" {
		if _, err := d.Run(context.Background(), nil, "pull", image); err != nil {
			skip("kind integration test: %v", err)
		}
	}
	if !d.ImageExists(context.Background(), image) {
		skip("kind integration test: node image %s not here (make kind-image)", image)
	}
	testImage = image
	return d
}

func TestMissingDocker(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Start(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), "Docker is not installed") {
		t.Fatalf("without docker on PATH: %v", err)
	}
}

func TestDaemonDown(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI")
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	_, err := Start(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), "Docker daemon does not answer") {
		t.Fatalf("with no daemon: %v", err)
	}
}

func TestImageMissingNamesMakeKindImage(t *testing.T) {
	d, err := docker.New(context.Background())
	if err != nil {
		t.Skipf("no Docker: %v", err)
	}
	_, _, err = resolveImage(context.Background(), d, Options{Image: nodeimage.Repository + ":v0.0.0-none"})
	if err == nil || !strings.Contains(err.Error(), "make kind-image") {
		t.Fatalf("missing image: %v", err)
	}
}

// TestIntegrationLeftoversOfAKilledRun starts a cluster in a child process,
// SIGKILLs it, and checks that the cluster outlives it (nothing could
// delete it), that ReapStale then deletes it, and that Clean leaves a
// container without the labels alone.
func TestIntegrationLeftoversOfAKilledRun(t *testing.T) {
	if os.Getenv("KIND_TEST_CHILD") == "1" {
		c, err := Start(context.Background(), Options{Progress: os.Stderr})
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		fmt.Println("READY", c.KindName())
		time.Sleep(10 * time.Minute)
		return
	}
	d := needDockerAndImage(t)
	ctx := context.Background()
	child := exec.Command(os.Args[0], "-test.run=^TestIntegrationLeftoversOfAKilledRun$", "-test.v=false")
	child.Env = append(os.Environ(), "KIND_TEST_CHILD=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	var name string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
			name = n
			break
		}
		if strings.HasPrefix(sc.Text(), "ERROR") {
			t.Fatal(sc.Text())
		}
	}
	if name == "" {
		t.Fatal("the child never reported a cluster")
	}
	node := name + "-control-plane"
	// The cluster's owner lives: nothing reaps it.
	if removed, err := ReapStale(ctx); err != nil || contains(removed, name) {
		t.Fatalf("ReapStale removed a live owner's cluster (%v, %v)", removed, err)
	}
	_ = child.Process.Signal(syscall.SIGKILL)
	_ = child.Wait()
	if _, err := d.Run(ctx, nil, "inspect", node); err != nil {
		t.Fatalf("the node of a SIGKILLed owner vanished by itself (the test proves nothing): %v", err)
	}
	// Something without the labels is not touched by Clean.
	bystander := fmt.Sprintf("informer-conformance-bystander-%d", os.Getpid())
	if _, err := d.Run(ctx, nil, "create", "--name", bystander, "--entrypoint", "/bin/true", testImage); err != nil {
		t.Fatal(err)
	}
	defer d.Run(ctx, nil, "rm", "-f", bystander)
	var log strings.Builder
	if err := Clean(ctx, &log); err != nil {
		t.Fatalf("Clean: %v", err)
	}
	t.Logf("Clean:\n%s", log.String())
	if _, err := d.Run(ctx, nil, "inspect", node); err == nil {
		t.Fatalf("node %s of the killed run is still there after Clean", node)
	}
	if !strings.Contains(log.String(), name) {
		t.Errorf("Clean did not report deleting %s", name)
	}
	if _, err := d.Run(ctx, nil, "inspect", bystander); err != nil {
		t.Fatalf("Clean removed a container without the labels: %v", err)
	}
	if _, err := os.Stat(workRoot() + "/" + name); err == nil {
		t.Errorf("the work directory of %s is still there", name)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestIntegrationNodeKilled: a node container killed under a cluster makes
// the next spec's check fail naming it, and Close still removes everything.
func TestIntegrationNodeKilled(t *testing.T) {
	d := needDockerAndImage(t)
	ctx := context.Background()
	c, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := c.Recover(ctx); err != nil {
		t.Fatalf("a fresh cluster is not fit: %v", err)
	}
	if _, err := d.Run(ctx, nil, "kill", c.nodeName()); err != nil {
		t.Fatal(err)
	}
	err = c.Recover(ctx)
	if err == nil || !strings.Contains(err.Error(), "is not running") {
		t.Fatalf("Recover after the node was killed: %v", err)
	}
	t.Log(err)
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close after the node was killed: %v", err)
	}
	if out, _ := d.Run(ctx, nil, "ps", "-a", "-q", "--filter", "label=io.x-k8s.kind.cluster="+c.KindName()); len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("containers of %s left: %s", c.KindName(), out)
	}
}
