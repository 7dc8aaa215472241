package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/informer-conformance/informer-conformance/cluster/lifetime"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/cluster/local/localtest"
)

// The parent-death test runs three processes: the test, a stand-in for the
// ginkgo CLI (standInEnv) and, as the stand-in's child, a stand-in for a
// Ginkgo test process (testProcessEnv) that starts a local cluster and
// reports it on the stdout it shares with the stand-in. noWatchEnv makes
// that test process start no parent watcher (negative control).
const (
	standInEnv     = "LOCAL_TEST_PARENT_STANDIN"
	testProcessEnv = "LOCAL_TEST_PARENT_DEATH_CHILD"
	noWatchEnv     = "LOCAL_TEST_PARENT_DEATH_NO_WATCH"
)

// parentDeathBound is how long after the SIGKILL of its parent a test
// process may keep its cluster: lifetime.PollInterval to notice, then
// SIGKILL of each process and the removal of the work directory
// (milliseconds), with a wide margin for a loaded machine.
const parentDeathBound = 5 * time.Second

type testProcessReport struct {
	Pid     int
	Pids    map[string]int
	WorkDir string
}

// runParentStandIn starts the test process and waits to be killed.
func runParentStandIn() {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), standInEnv+"=", testProcessEnv+"=1")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "stand-in:", err)
		os.Exit(1)
	}
	select {} // until killed
}

// runTestProcess does what a Ginkgo test process of the local backend
// does: watch its parent (unless noWatchEnv), start a cluster, run on.
func runTestProcess() {
	if os.Getenv(noWatchEnv) != "1" {
		lifetime.ExitWithParent()
	}
	c, err := local.Start(context.Background(), local.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "test process:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(testProcessReport{Pid: os.Getpid(), Pids: c.Pids(), WorkDir: c.WorkDir()})
	select {} // a spec that goes on
}

// startParentStandIn starts the stand-in and returns it with the report of
// its test process.
func startParentStandIn(t *testing.T, watch bool) (*exec.Cmd, testProcessReport) {
	t.Helper()
	env := []string{standInEnv + "=1"}
	if !watch {
		env = append(env, noWatchEnv+"=1")
	}
	var r testProcessReport
	cmd := startReportingChild(t, env, &r)
	t.Cleanup(func() {
		_ = syscall.Kill(r.Pid, syscall.SIGKILL) // its cluster dies with it
		os.RemoveAll(r.WorkDir)
	})
	if len(r.Pids) != 2 {
		t.Fatalf("test process runs %v, want etcd and a kube-apiserver", r.Pids)
	}
	for name, pid := range r.Pids {
		if !alive(pid) {
			t.Fatalf("%s (pid %d) not running before the kill", name, pid)
		}
	}
	return cmd, r
}

// gone waits up to bound for the test process and its cluster's processes
// to be gone and returns how long that took, or the survivors.
func gone(r testProcessReport, bound time.Duration) (time.Duration, []string) {
	start := time.Now()
	var alivePids []string
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, bound, true, func(context.Context) (bool, error) {
		alivePids = nil
		for name, pid := range r.Pids {
			if alive(pid) {
				alivePids = append(alivePids, fmt.Sprintf("%s (pid %d)", name, pid))
			}
		}
		if alive(r.Pid) {
			alivePids = append(alivePids, fmt.Sprintf("the test process (pid %d)", r.Pid))
		}
		return len(alivePids) == 0, nil
	})
	if err != nil {
		return time.Since(start), alivePids
	}
	return time.Since(start), nil
}

// TestParentDeath: when the process that started a test process (the
// ginkgo CLI) is SIGKILLed, the test process tears its cluster down and
// exits within parentDeathBound (lifetime.ExitWithParent), instead of
// running its spec on to the end; its work directory goes with it.
func TestParentDeath(t *testing.T) {
	localtest.SkipIfShort(t)
	cmd, r := startParentStandIn(t, true)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	took, survivors := gone(r, parentDeathBound)
	if survivors != nil {
		t.Fatalf("%v still running %s after the SIGKILL of the test process's parent", survivors, took.Round(time.Millisecond))
	}
	t.Logf("the test process and its etcd and kube-apiserver were gone %s after the SIGKILL of its parent", took.Round(time.Millisecond))
	if _, err := os.Stat(r.WorkDir); err == nil {
		t.Errorf("work dir %s of the test process left behind", r.WorkDir)
	}
}

// TestParentDeathNegativeControl proves TestParentDeath can fail: a test
// process that does not watch its parent keeps its cluster running past
// the bound after its parent's SIGKILL (as Ginkgo test processes did until
// their spec ended).
func TestParentDeathNegativeControl(t *testing.T) {
	localtest.SkipIfShort(t)
	cmd, r := startParentStandIn(t, false)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if took, survivors := gone(r, parentDeathBound); survivors == nil {
		t.Fatalf("without the parent watcher the test process and its cluster were gone %s after its parent's SIGKILL anyway; TestParentDeath proves nothing", took)
	}
}
