package local

import (
	"os"
	"path/filepath"

	"github.com/gofrs/flock"
)

// Default work directories are os.TempDir()/informer-conformance-<name>-*,
// each with an owner lock its process holds while the cluster lives. A
// process that was SIGKILLed cannot remove its directory, but the kernel
// drops its lock; the next Start (or ReapStale) removes every directory whose
// lock it can take, so no temp dir outlives the next run.
const (
	workDirPrefix = "informer-conformance-"
	ownerLockName = ".owner.lock"
)

func newWorkDir(name string) (string, *flock.Flock, error) {
	dir, err := os.MkdirTemp("", workDirPrefix+name+"-")
	if err != nil {
		return "", nil, err
	}
	// Lock under another name, then rename: the reaper never sees an
	// unlocked owner file of a live cluster (the lock follows the inode).
	tmp := filepath.Join(dir, ownerLockName+".new")
	l := flock.New(tmp)
	if _, err := l.TryLock(); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, ownerLockName)); err != nil {
		l.Unlock()
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, l, nil
}

// ReapStale removes work directories left by local clusters whose process
// died without closing them, and returns the directories it removed.
func ReapStale() []string {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), workDirPrefix+"*"))
	var removed []string
	for _, dir := range dirs {
		l := flock.New(filepath.Join(dir, ownerLockName))
		if _, err := os.Stat(l.Path()); err != nil {
			continue // not ours, or not yet locked by its creator
		}
		if ok, err := l.TryLock(); err != nil || !ok {
			continue // alive
		}
		if os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
		_ = l.Unlock()
	}
	return removed
}
