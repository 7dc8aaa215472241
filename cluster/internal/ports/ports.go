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
package ports

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"

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

// Reserve returns a port free on 127.0.0.1 and reserved for this process.
func Reserve() (*Reservation, error) {
	if err := os.MkdirAll(Dir(), 0o777); err != nil {
		return nil, fmt.Errorf("reserve port: %w", err)
	}
	for range 200 {
		port := rangeStart + rand.IntN(rangeEnd-rangeStart)
		l := flock.New(filepath.Join(Dir(), strconv.Itoa(port)+".lock"))
		ok, err := l.TryLock()
		if err != nil {
			return nil, fmt.Errorf("reserve port: %w", err)
		}
		if !ok {
			continue // another suite process holds it
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil { // something outside the suite uses it
			_ = l.Unlock()
			continue
		}
		_ = ln.Close()
		return &Reservation{Port: port, lock: l}, nil
	}
	return nil, fmt.Errorf("reserve port: no free port in %d-%d after 200 tries", rangeStart, rangeEnd)
}

// Release gives the port back.
func (r *Reservation) Release() error {
	if r == nil || r.lock == nil {
		return nil
	}
	return r.lock.Unlock()
}
