// Unix only: a process there is re-parented when its parent dies, which
// lifetime notices (Windows keeps the dead parent's pid), and syscall.Kill
// is Unix's.

//go:build unix

package kind

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/informer-conformance/informer-conformance/cluster/lifetime"
)

// parentDeathBound: after its parent's SIGKILL the owner of a kind cluster
// notices within lifetime.PollInterval and kind deletes the cluster (about
// 2 s, `make kind-bench`); lifetime.TeardownTimeout is where it gives up.
const parentDeathBound = lifetime.TeardownTimeout

// TestIntegrationParentDeath: a process owning a kind cluster (a Ginkgo
// test process of the kind backend) whose parent (the ginkgo CLI) is
// SIGKILLed deletes its cluster and exits (lifetime.ExitWithParent), instead
// of keeping it until its spec ends. Three processes: the test, a stand-in
// for the CLI, and its child, the owner, reporting on the stdout it shares
// with the stand-in.
func TestIntegrationParentDeath(t *testing.T) {
	switch {
	case os.Getenv("KIND_TEST_PARENT_STANDIN") == "1":
		owner := exec.Command(os.Args[0], "-test.run=^TestIntegrationParentDeath$", "-test.v=false")
		owner.Env = append(os.Environ(), "KIND_TEST_PARENT_STANDIN=", "KIND_TEST_PARENT_DEATH_OWNER=1")
		owner.Stdout, owner.Stderr = os.Stdout, os.Stderr
		if err := owner.Start(); err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		time.Sleep(10 * time.Minute)
		return
	case os.Getenv("KIND_TEST_PARENT_DEATH_OWNER") == "1":
		lifetime.ExitWithParent()
		c, err := Start(context.Background(), Options{Progress: os.Stderr})
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		fmt.Println("READY", os.Getpid(), c.KindName())
		time.Sleep(10 * time.Minute)
		return
	}
	d := needDockerAndImage(t)
	ctx := context.Background()
	standIn := exec.Command(os.Args[0], "-test.run=^TestIntegrationParentDeath$", "-test.v=false")
	standIn.Env = append(os.Environ(), "KIND_TEST_PARENT_STANDIN=1")
	out, err := standIn.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	standIn.Stderr = os.Stderr
	if err := standIn.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = standIn.Process.Kill(); _ = standIn.Wait() }()
	var name string
	var pid int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "READY" {
			pid, _ = strconv.Atoi(f[1])
			name = f[2]
			break
		}
		if strings.HasPrefix(sc.Text(), "ERROR") {
			t.Fatal(sc.Text())
		}
	}
	if name == "" {
		t.Fatal("the owner never reported a cluster")
	}
	defer func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_, _ = ReapStale(ctx)
	}()
	node := name + "-control-plane"
	if _, err := d.Run(ctx, nil, "inspect", node); err != nil {
		t.Fatalf("node %s not there before the kill: %v", node, err)
	}
	_ = standIn.Process.Signal(syscall.SIGKILL)
	_ = standIn.Wait()
	start := time.Now()
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, parentDeathBound, true, func(ctx context.Context) (bool, error) {
		_, err := d.Run(ctx, nil, "inspect", node)
		return err != nil && syscall.Kill(pid, 0) != nil, nil
	})
	if err != nil {
		t.Fatalf("node %s or its owner (pid %d) still there %s after the SIGKILL of the owner's parent", node, pid, parentDeathBound)
	}
	t.Logf("cluster %s deleted and its owner gone %s after the SIGKILL of the owner's parent", name, time.Since(start).Round(time.Millisecond))
}
