// Package ports hands out loopback TCP ports that no other process of this
// suite on the machine holds, for as long as the holder lives.
//
// Asking the kernel for ":0" and closing the listener races: the port is free
// again at once and may go to another process (or become some connection's
// ephemeral source port) before our server binds it. Instead ports come from a
// range below the kernel's ephemeral range, and each is reserved by an
// exclusive flock on a per-port file in a machine-wide directory. The lock is
// held until Release, or until the process dies (the kernel drops it), so a
// killed test never leaves stale reservations, and a restarted server can get
// its own port back.
//
// Several users of one machine share the directory: it is drwxrwxrwt (like
// /tmp) and lock files are 0666. A candidate whose lock file cannot be opened
// (another user's, made by an older version with 0600) is skipped like a
// held one; Reserve fails only after its bounded tries, naming every reason.
package ports

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gofrs/flock"
)

// The range sits below Linux's default ephemeral range (32768-60999).
const (
	rangeStart = 20000
	rangeEnd   = 32000
)

// Reservation is a held port.
type Reservation struct {
	Port int
	lock *flock.Flock
}

// Dir is where the per-port lock files live. It is fixed, not under $TMPDIR,
// so processes with different temporary directories still see each other.
func Dir() string { return "/tmp/informer-conformance-ports" }

// maxTries bounds the candidates one Reserve tries.
const maxTries = 200

// Reserve returns a port free on 127.0.0.1 and reserved for this process.
func Reserve() (*Reservation, error) {
	return reserve(Dir(), func() int { return rangeStart + rand.IntN(rangeEnd-rangeStart) }, maxTries)
}

func reserve(dir string, next func() int, tries int) (*Reservation, error) {
	// Another error left for the end: lock files that exist may still be
	// openable in a directory this process cannot fix.
	dirErr := shareDir(dir)
	held, inUse := 0, 0
	var errs []string // why candidates could not be locked, distinct
	seen := map[string]bool{}
	for range tries {
		port := next()
		path := filepath.Join(dir, strconv.Itoa(port)+".lock")
		l := flock.New(path, flock.SetPermissions(0o666))
		ok, err := l.TryLock()
		if err != nil {
			// E.g. another user's lock file this user cannot open: try
			// another port.
			if msg := err.Error(); !seen[msg] {
				seen[msg] = true
				errs = append(errs, msg)
			}
			continue
		}
		if !ok {
			held++ // another suite process holds it
			continue
		}
		shareFile(path)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil { // something outside the suite uses it
			_ = l.Unlock()
			inUse++
			continue
		}
		_ = ln.Close()
		return &Reservation{Port: port, lock: l}, nil
	}
	why := []string{fmt.Sprintf("%d held by other processes of the suite", held), fmt.Sprintf("%d in use outside the suite", inUse)}
	if len(errs) > 0 {
		why = append(why, fmt.Sprintf("%d not lockable: %s", tries-held-inUse, strings.Join(errs, "; ")))
	}
	if dirErr != nil {
		why = append(why, dirErr.Error())
	}
	return nil, fmt.Errorf("reserve port: no free port in %d-%d after %d tries: %s", rangeStart, rangeEnd, tries, strings.Join(why, "; "))
}

// shareDir creates dir, world-writable with the sticky bit (like /tmp), so
// every user of the machine reserves ports in it and none can remove
// another's lock files. The mode is set explicitly: the umask would cut it.
func shareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("lock directory: %w", err)
	}
	const want = 0o777 | os.ModeSticky
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("lock directory: %w", err)
	}
	if fi.Mode()&(os.ModePerm|os.ModeSticky) == want {
		return nil
	}
	if err := os.Chmod(dir, want); err != nil {
		return fmt.Errorf("lock directory %s is %v, not drwxrwxrwt, and cannot be changed by this user (its owner can: chmod 1777 %s): %w", dir, fi.Mode(), dir, err)
	}
	return nil
}

// shareFile makes a lock file 0666 whatever the umask, so other users can
// open it to lock the port when this process is done. A file of another
// user is left as it is (this user cannot change it, and could open it).
func shareFile(path string) {
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() != 0o666 {
		_ = os.Chmod(path, 0o666)
	}
}

// Release gives the port back.
func (r *Reservation) Release() error {
	if r == nil || r.lock == nil {
		return nil
	}
	return r.lock.Unlock()
}
