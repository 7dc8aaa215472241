// Package process starts and stops the control-plane processes of the local
// backend so that none outlives the program that started it.
//
// Every child runs in its own process group (signals reach anything it forks)
// with PR_SET_PDEATHSIG=SIGKILL, so it dies when the test binary dies, even on
// SIGKILL of the test binary, where no Go code can run. The kernel sends the
// death signal when the *thread* that forked the child exits (golang/go#27505),
// so all children are forked from one goroutine locked to its OS thread for the
// life of the program: that thread exits only with the program.
//
// All of that is Linux's (process_linux.go); on other OSes Start fails with
// the reason (Supported), so that packages importing this one still build.
package process

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster/lifetime"
)

// Process is one run of a binary. Start it once; to restart, make a new one.
type Process struct {
	Name    string   // for messages, e.g. "kube-apiserver-0"
	Path    string   // executable
	Args    []string // without argv[0]
	LogPath string   // stdout and stderr are appended here
	// DefaultEnv are KEY=VALUE pairs the child gets unless this program's
	// environment sets KEY itself.
	DefaultEnv []string

	cmd     *exec.Cmd
	log     *os.File
	done    chan struct{}
	waitErr error
}

// Start execs the process. Its output goes to LogPath, after a marker line.
func (p *Process) Start() error {
	if p.cmd != nil {
		return fmt.Errorf("start %s: already started", p.Name)
	}
	if err := Supported(); err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	log, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: open log: %w", p.Name, err)
	}
	fmt.Fprintf(log, "=== %s: %s %s\n", time.Now().Format(time.RFC3339Nano), p.Path, strings.Join(p.Args, " "))
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Env = ServerEnviron(os.Environ())
	for _, kv := range p.DefaultEnv {
		if k, _, _ := strings.Cut(kv, "="); os.Getenv(k) == "" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = sysProcAttr()
	if err := spawn(cmd); err != nil {
		log.Close()
		return fmt.Errorf("start %s (%s): %w", p.Name, p.Path, err)
	}
	p.cmd, p.log, p.done = cmd, log, make(chan struct{})
	pid, done := cmd.Process.Pid, p.done
	// Should the test process's parent die (lifetime.ExitWithParent), the
	// process is killed before the test process exits, without waiting on
	// any lock of its owner. It would die with the test process anyway
	// (PR_SET_PDEATHSIG); this way it is gone before its work directory is
	// removed.
	unregister := lifetime.OnParentDeath(fmt.Sprintf("%s (pid %d)", p.Name, pid), func(ctx context.Context) error {
		if err := killGroup(pid, syscall.SIGKILL); err != nil {
			return err
		}
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("not gone after SIGKILL: %w", ctx.Err())
		}
	})
	go func() {
		p.waitErr = cmd.Wait()
		fmt.Fprintf(log, "=== %s: exited: %v\n", time.Now().Format(time.RFC3339Nano), exitString(p.waitErr))
		log.Close()
		close(p.done)
		unregister()
	}()
	return nil
}

func exitString(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// Pid of the running process (0 before Start).
func (p *Process) Pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Running reports whether the process was started and has not exited.
func (p *Process) Running() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Signal sends sig to the process group.
func (p *Process) Signal(sig syscall.Signal) error {
	if !p.Running() {
		return nil
	}
	if err := killGroup(p.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("signal %s to %s: %w", sig, p.Name, err)
	}
	return nil
}

// Kill sends SIGKILL and waits until the process is gone.
func (p *Process) Kill() {
	if p.done == nil {
		return
	}
	_ = p.Signal(syscall.SIGKILL)
	<-p.done
}

// Terminate sends SIGTERM and waits for the exit until ctx ends; then it
// kills the process and returns ctx's error. The process is gone on return.
func (p *Process) Terminate(ctx context.Context) error {
	if p.done == nil {
		return nil
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		p.Kill()
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		p.Kill()
		return fmt.Errorf("%s did not exit after SIGTERM, killed: %w", p.Name, ctx.Err())
	}
}

// WaitReady polls check every interval until it succeeds, the process exits,
// or ctx ends. The error of an early exit carries the tail of the log.
func (p *Process) WaitReady(ctx context.Context, interval time.Duration, check func(context.Context) error) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (%s); last lines of %s:\n%s", p.Name, exitString(p.waitErr), p.LogPath, LogTail(p.LogPath, 20))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last check: %v); log: %s", p.Name, ctx.Err(), last, p.LogPath)
		case <-t.C:
		}
	}
}

// LogTail returns the last n lines of a log file, for error messages.
func LogTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ServerEnviron is env without the variables that configure the client
// under test, which the servers' own client-go would read too:
// KUBE_FEATURE_<gate> (client-go's feature gates, features/envvar.go) and
// KUBE_WATCHLIST_INCONSISTENCY_DETECTOR (util/consistencydetector). With
// the detector inherited, kube-apiserver's watch caches ran client-go's
// consistency check against etcd after every initialisation, a full extra
// read per resource ("data consistency check for storage/cacher.go ... is
// enabled" in its log): a different, slower server than the one under test.
func ServerEnviron(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if strings.HasPrefix(kv, "KUBE_FEATURE_") || strings.HasPrefix(kv, "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
