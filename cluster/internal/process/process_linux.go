package process

// What needs Linux: the children's process groups, their parent-death
// signal (PR_SET_PDEATHSIG, a field of Linux's syscall.SysProcAttr only)
// and signals to a group (kill(2) of a negative pid). process_other.go
// refuses to start anything elsewhere.

import (
	"errors"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Supported says why this OS cannot run the processes (nil: it can).
func Supported() error { return nil }

type spawnReq struct {
	cmd *exec.Cmd
	res chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
	// deathSignal is what children get when this program dies.
	deathSignal = syscall.SIGKILL
)

// DisableParentDeathSignalForTest makes later children survive the death of
// this program. It exists only for the negative control that proves the
// orphan test can fail; nothing else may call it.
func DisableParentDeathSignalForTest() { deathSignal = 0 }

// spawn runs cmd.Start on the dedicated, never-exiting, locked OS thread.
func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the program
			for r := range spawnCh {
				r.res <- r.cmd.Start()
			}
		}()
	})
	res := make(chan error, 1)
	spawnCh <- spawnReq{cmd: cmd, res: res}
	return <-res
}

// sysProcAttr puts a child in a process group of its own, with the
// parent-death signal.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSignal}
}

// killGroup sends sig to the process group pid leads; a group already gone
// is no error.
func killGroup(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
