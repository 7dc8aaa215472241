package local_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/informer-conformance/informer-conformance/cluster/internal/process"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/cluster/local/localtest"
)

// helperEnv makes the test binary act as a parent that starts a cluster,
// reports it on stdout and waits to be killed; brokenEnv makes that parent
// start its children without the parent-death signal (negative control).
const (
	helperEnv = "LOCAL_TEST_ORPHAN_HELPER"
	brokenEnv = "LOCAL_TEST_ORPHAN_HELPER_NO_PDEATHSIG"
)

type helperReport struct {
	Pids    map[string]int
	Ports   []int
	WorkDir string
}

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		runHelper()
		return
	}
	if os.Getenv(standInEnv) == "1" {
		runParentStandIn()
		return
	}
	if os.Getenv(testProcessEnv) == "1" {
		runTestProcess()
		return
	}
	os.Exit(m.Run())
}

func runHelper() {
	if os.Getenv(brokenEnv) == "1" {
		process.DisableParentDeathSignalForTest()
	}
	c, err := local.Start(context.Background(), local.Options{APIServers: 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	r := helperReport{Pids: c.Pids(), WorkDir: c.WorkDir()}
	for _, u := range []string{c.APIServerURL(0), c.APIServerURL(1), c.EtcdURL()} {
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(u, "https://"))
		n, _ := strconv.Atoi(port)
		r.Ports = append(r.Ports, n)
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
	select {} // until killed
}

// TestNoOrphans kills a test process that started etcd and two
// kube-apiservers, without giving it any chance to clean up (SIGKILL), or
// the way Ctrl-C does (SIGINT), and asserts that every process it started
// dies, its ports become free and its work directory is reaped.
func TestNoOrphans(t *testing.T) {
	localtest.SkipIfShort(t)
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, r := startHelper(t, false)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(context.Context) (bool, error) {
				for _, pid := range r.Pids {
					if alive(pid) {
						return false, nil
					}
				}
				return true, nil
			})
			var lastErr error
			if err == nil {
				// A zombie's threads may still be closing its sockets.
				err = wait.PollUntilContextCancel(ctx, pollInterval, true, func(context.Context) (bool, error) {
					for _, port := range r.Ports {
						ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
						if err != nil {
							lastErr = err
							return false, nil
						}
						ln.Close()
					}
					return true, nil
				})
				if err != nil {
					t.Errorf("ports %v not free within 30 s after the parent died: %v", r.Ports, lastErr)
				}
			}
			if err != nil && lastErr == nil {
				for name, pid := range r.Pids {
					if alive(pid) {
						t.Errorf("%s (pid %d) survived the %s of its parent; killing it", name, pid, sig)
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				return
			}
			removed := local.ReapStale()
			if _, err := os.Stat(r.WorkDir); err == nil {
				t.Errorf("work dir %s of the dead parent not reaped (reaped %v)", r.WorkDir, removed)
			}
		})
	}
}

// startHelper runs the test binary as a parent that starts a cluster (etcd
// and two kube-apiservers) and returns what it reported.
func startHelper(t *testing.T, broken bool) (*exec.Cmd, helperReport) {
	t.Helper()
	env := []string{helperEnv + "=1"}
	if broken {
		env = append(env, brokenEnv+"=1")
	}
	var r helperReport
	cmd := startReportingChild(t, env, &r)
	if len(r.Pids) != 3 {
		t.Fatalf("helper runs %v, want etcd and two kube-apiservers", r.Pids)
	}
	for name, pid := range r.Pids {
		if !alive(pid) {
			t.Fatalf("%s (pid %d) not running before the kill", name, pid)
		}
	}
	return cmd, r
}

// TestOrphanDetectionNegativeControl proves TestNoOrphans can fail: a parent
// that starts its children without the parent-death signal leaves them
// running when it is SIGKILLed, and alive() sees them.
func TestOrphanDetectionNegativeControl(t *testing.T) {
	localtest.SkipIfShort(t)
	cmd, r := startHelper(t, true)
	t.Cleanup(func() {
		for _, pid := range r.Pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		os.RemoveAll(r.WorkDir)
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// Give the kernel as long as TestNoOrphans needed to kill them had it
	// been asked to: they must still be there.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(context.Context) (bool, error) {
		for _, pid := range r.Pids {
			if !alive(pid) {
				return true, nil
			}
		}
		return false, nil
	})
	if err == nil {
		t.Fatalf("without the parent-death signal a child died with its parent anyway: %v; the orphan test proves nothing", r.Pids)
	}
}

// startReportingChild runs this test binary (no tests selected) with env
// added, kills it when the test ends, and decodes the one JSON line it
// prints first into report: the child's way to say what it started.
func startReportingChild(t *testing.T, env []string, report any) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil {
		t.Fatalf("child process did not report what it started: %v", err)
	}
	if err := json.Unmarshal(line, report); err != nil {
		t.Fatalf("child process report %q: %v", line, err)
	}
	return cmd
}
