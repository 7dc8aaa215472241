// The processes start on Linux only (process_other.go refuses elsewhere).

package process

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func sh(t *testing.T, script string) *Process {
	t.Helper()
	p := &Process{Name: "sh", Path: "/bin/sh", Args: []string{"-c", script}, LogPath: filepath.Join(t.TempDir(), "sh.log")}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

func never(context.Context) error { return errors.New("not ready") }

func TestEarlyExitCarriesLog(t *testing.T) {
	p := sh(t, "echo 'unknown flag: --nope' >&2; exit 3")
	err := p.WaitReady(context.Background(), 10*time.Millisecond, never)
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "unknown flag: --nope") {
		t.Fatalf("want the early exit with the log's tail, got %v", err)
	}
}

func TestReadyTimeout(t *testing.T) {
	p := sh(t, "exec sleep 60")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := p.WaitReady(ctx, 10*time.Millisecond, never)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("want a deadline error naming the last check, got %v", err)
	}
}

// TestTerminateEscalates: a process that ignores SIGTERM is killed when the
// graceful stop's context ends, and is gone on return.
func TestTerminateEscalates(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "trapped")
	p := sh(t, "trap '' TERM; touch "+marker+"; while :; do sleep 1; done")
	// Only once the trap is set does SIGTERM get ignored.
	if err := p.WaitReady(context.Background(), 10*time.Millisecond, func(context.Context) error {
		_, err := os.Stat(marker)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := p.Terminate(ctx); err == nil || !strings.Contains(err.Error(), "did not exit after SIGTERM") {
		t.Fatalf("want an escalation error, got %v", err)
	}
	if p.Running() {
		t.Fatal("still running after Terminate returned")
	}
}

// TestKillReachesGrandchildren: signals go to the process group, so what the
// process forked dies with it.
func TestKillReachesGrandchildren(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	p := sh(t, "sleep 60 & echo $! > "+pidFile+"; wait")
	var child int
	deadline := time.Now().Add(10 * time.Second)
	for child == 0 && time.Now().Before(deadline) {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		select {
		case <-p.Done():
			t.Fatal("shell exited early")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if child == 0 {
		t.Fatal("no child pid")
	}
	p.Kill()
	// The grandchild was reparented; once killed it is gone or a zombie.
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		if errors.Is(syscall.Kill(child, 0), syscall.ESRCH) {
			return
		}
		<-time.After(10 * time.Millisecond)
	}
	t.Fatalf("grandchild %d survived the kill of its process group", child)
}
