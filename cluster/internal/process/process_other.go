//go:build !linux

package process

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
)

// errUnsupported is why nothing starts here: every child must die with
// this program, even on its SIGKILL, and nothing but Linux's parent-death
// signal (PR_SET_PDEATHSIG) guarantees that; signals reach a child's own
// children through its process group, which Windows does not have.
var errUnsupported = fmt.Errorf("%w on %s: the parent-death signal they need, PR_SET_PDEATHSIG, is Linux's",
	errors.ErrUnsupported, runtime.GOOS)

// Supported says why this OS cannot run the processes (nil: it can).
func Supported() error { return errUnsupported }

// Never reached: Start returns Supported's error first.

func sysProcAttr() *syscall.SysProcAttr { return nil }

func spawn(*exec.Cmd) error { return errUnsupported }

func killGroup(int, syscall.Signal) error { return errUnsupported }
