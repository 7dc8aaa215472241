// Unix only: modes and the umask are Unix's (Windows has neither).

//go:build unix

package ports

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// TestReserveSharesDirWithOtherUsers: the lock directory is world-writable
// with the sticky bit (01777) and lock files are 0666, whatever the umask,
// so a second user on the machine can reserve ports too; a directory left
// 0755 by an older version is fixed.
func TestReserveSharesDirWithOtherUsers(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	for _, existing := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "ports")
		if existing {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		r, err := reserve(dir, sequence(freePort(t)), 1)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() & (os.ModePerm | os.ModeSticky); got != 0o777|os.ModeSticky {
			t.Errorf("lock directory (existing=%v) mode %v, want drwxrwxrwt", existing, fi.Mode())
		}
		fi, err = os.Stat(filepath.Join(dir, strconv.Itoa(r.Port)+".lock"))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o666 {
			t.Errorf("lock file mode %v, want -rw-rw-rw-", fi.Mode())
		}
		r.Release()
	}
}
