package ports

import (
	"net"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gofrs/flock"
)

// TestReservationsExclude: a reserved port is neither handed out again nor
// lockable by another reserver (flock conflicts between open file
// descriptions, as between processes) until it is released.
func TestReservationsExclude(t *testing.T) {
	seen := map[int]bool{}
	var held []*Reservation
	for range 50 {
		r, err := Reserve()
		if err != nil {
			t.Fatal(err)
		}
		if seen[r.Port] {
			t.Fatalf("port %d handed out twice", r.Port)
		}
		seen[r.Port] = true
		held = append(held, r)
	}
	r := held[0]
	other := flock.New(filepath.Join(Dir(), strconv.Itoa(r.Port)+".lock"))
	if ok, err := other.TryLock(); err != nil || ok {
		t.Fatalf("a second reserver locked held port %d: ok=%v err=%v", r.Port, ok, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port)))
	if err != nil {
		t.Fatalf("reserved port %d is not free for its holder: %v", r.Port, err)
	}
	ln.Close()
	for _, r := range held {
		if err := r.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := other.TryLock(); err != nil || !ok {
		t.Fatalf("released port %d still locked: ok=%v err=%v", r.Port, ok, err)
	}
	other.Unlock()
}
