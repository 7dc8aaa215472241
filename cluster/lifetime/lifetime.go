// Package lifetime ends what a test process started as soon as the process
// that started it is gone.
//
// The ginkgo CLI (or go test) runs the test binary as its child. When the
// CLI is SIGKILLed its test processes are not told: they run the current
// spec to its end (seconds to minutes) with its cluster, and only then fail
// to report to the dead CLI. The children of the local backend die with the
// test process (PR_SET_PDEATHSIG), not with its parent, and the test
// process itself cannot ask for a death signal from its parent reliably:
// the kernel sends it when the parent *thread* that forked it exits (a Go
// program's threads may exit before the program). So ExitWithParent polls
// getppid(2): when the parent dies the process is re-parented and its
// parent pid changes. Then the teardowns registered by what the process
// started (OnParentDeath: the local backend's processes and work
// directories, kind clusters) run, last registered first, and the process
// exits.
//
// On Linux and macOS an orphan is re-parented (to init, a subreaper or
// launchd), so this works there. Windows re-parents nothing: Getppid keeps
// the dead parent's pid (syscall/syscall_windows.go Getppid: the process
// snapshot's ParentProcessID) and the teardowns never run; a kind cluster left
// behind is deleted by the next start (kind's ReapStale), whose owner lock
// is gone.
package lifetime

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// PollInterval is how often the parent pid is read (a system call that
	// costs nothing measurable).
	PollInterval = 200 * time.Millisecond
	// TeardownTimeout bounds the teardowns after the parent died; then the
	// process exits anyway (the local backend's processes die with it,
	// PR_SET_PDEATHSIG; kind clusters are deleted by the next start,
	// whose owner lock is gone). Deleting a kind cluster takes about 2 s.
	TeardownTimeout = 30 * time.Second
	// ExitCode is the process's exit status after its parent died.
	ExitCode = 3
)

type teardown struct {
	id   uint64
	name string
	f    func(context.Context) error
}

var (
	mu        sync.Mutex
	nextID    uint64
	teardowns []teardown
	// parent is the parent pid when the program started.
	parent    = os.Getppid()
	watchOnce sync.Once
)

// OnParentDeath registers f, to run when the process's parent is gone
// (once ExitWithParent watches for it); name says what it stops. The
// function returned unregisters f (call it when what f stops has stopped).
// f gets a context that ends at TeardownTimeout; it must not wait for locks
// that the running spec may hold.
func OnParentDeath(name string, f func(ctx context.Context) error) (unregister func()) {
	mu.Lock()
	defer mu.Unlock()
	nextID++
	id := nextID
	teardowns = append(teardowns, teardown{id: id, name: name, f: f})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		teardowns = slices.DeleteFunc(teardowns, func(t teardown) bool { return t.id == id })
	}
}

// ExitWithParent makes the process tear down what it registered and exit
// (ExitCode) within about PollInterval of its parent's death. It starts
// one watcher per process; calling it again does nothing. The parent is
// the one the program started with: a parent gone before this call is
// noticed at the first poll.
func ExitWithParent() {
	watchOnce.Do(func() {
		go func() {
			t := time.NewTicker(PollInterval)
			defer t.Stop()
			for range t.C {
				if now := os.Getppid(); now != parent {
					os.Exit(tearDown(now))
				}
			}
		}()
	})
}

// tearDown runs every registered teardown, last registered first, and
// returns the exit code. The parent's pipes may be gone: SIGPIPE is
// ignored, so a write to them fails instead of killing the process before
// it is done.
func tearDown(newParent int) int {
	signal.Ignore(syscall.SIGPIPE)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), TeardownTimeout)
	defer cancel()
	mu.Lock()
	ts := slices.Clone(teardowns)
	mu.Unlock()
	var msgs []string
	for i := len(ts) - 1; i >= 0; i-- {
		if err := ts[i].f(ctx); err != nil {
			msgs = append(msgs, fmt.Sprintf("%s: %v", ts[i].name, err))
		}
	}
	names := make([]string, 0, len(ts))
	for i := len(ts) - 1; i >= 0; i-- {
		names = append(names, ts[i].name)
	}
	fmt.Fprintf(os.Stderr, "informer-conformance: the parent process (pid %d) is gone (parent now pid %d): stopped what this process started (%s) in %s; exiting\n",
		parent, newParent, strings.Join(names, ", "), time.Since(start).Round(time.Millisecond))
	for _, m := range msgs {
		fmt.Fprintf(os.Stderr, "informer-conformance: teardown: %s\n", m)
	}
	return ExitCode
}
