package ports

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// freePort is a port of the range nothing listens on now.
func freePort(t *testing.T, not ...int) int {
	t.Helper()
	for p := rangeStart; p < rangeEnd; p++ {
		if slices.Contains(not, p) {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err == nil {
			ln.Close()
			return p
		}
	}
	t.Fatal("no free port in the range")
	return 0
}

// unlockable makes port's lock file in dir one nobody can open for
// writing, root included: a directory (as a lock file of another user with
// 0600 is to everybody but that user).
func unlockable(t *testing.T, dir string, port int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, strconv.Itoa(port)+".lock"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func sequence(ports ...int) func() int {
	i := 0
	return func() int {
		p := ports[i%len(ports)]
		i++
		return p
	}
}

// TestReserveTriesNextCandidate: a lock file this process cannot open
// (another user's) does not end the reservation; the next candidate is tried.
func TestReserveTriesNextCandidate(t *testing.T) {
	dir := t.TempDir()
	bad := freePort(t)
	good := freePort(t, bad)
	unlockable(t, dir, bad)
	r, err := reserve(dir, sequence(bad, good), 5)
	if err != nil {
		t.Fatalf("reserve with port %d's lock file unopenable: %v", bad, err)
	}
	defer r.Release()
	if r.Port != good {
		t.Fatalf("reserved %d, want %d", r.Port, good)
	}
}

// TestReserveGivesUpWithReasons: after its bounded tries Reserve fails,
// naming why each candidate was refused.
func TestReserveGivesUpWithReasons(t *testing.T) {
	dir := t.TempDir()
	bad := freePort(t)
	unlockable(t, dir, bad)
	held := freePort(t, bad)
	other := flock.New(filepath.Join(dir, strconv.Itoa(held)+".lock"))
	if ok, err := other.TryLock(); !ok || err != nil {
		t.Fatalf("lock %d: %v %v", held, ok, err)
	}
	defer other.Unlock()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	inUse := busy.Addr().(*net.TCPAddr).Port
	tries := 0
	seq := sequence(bad, held, inUse)
	_, err = reserve(dir, func() int { tries++; return seq() }, 6)
	if err == nil {
		t.Fatal("reserve succeeded with no usable candidate")
	}
	if tries != 6 {
		t.Errorf("tried %d candidates, want the bound 6", tries)
	}
	for _, want := range []string{"after 6 tries", "is a directory", "2 held by other processes of the suite", "2 in use outside the suite"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
