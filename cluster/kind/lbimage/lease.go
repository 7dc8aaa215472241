package lbimage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/informer-conformance/informer-conformance/cluster/kind/docker"
	"github.com/informer-conformance/informer-conformance/cluster/lifetime"
)

// kind takes its load balancer image by the name Image alone (see the
// package doc), so the stand-in is lent that name while a cluster of this
// project is being created and the name is taken back when the last
// creator, in any process, is done. Two locks in a directory shared by the
// processes (the kind backend's work root, where its clusters' owner locks
// are) make that safe across processes:
//
//   - tagLock (exclusive, held for moments) orders every decision about the
//     tag: lend, take back, kind-clean's sweep;
//   - usersLock is held shared by every process creating a cluster on the
//     lent name; whoever takes it exclusively (TryLock) knows nobody does,
//     and takes the name back. A killed process's shared lock goes with it,
//     so the next release or `make kind-clean` takes back what it lent.
const (
	tagLockName   = "kind-loadbalancer-tag.lock"
	usersLockName = "kind-loadbalancer-users.lock"
	// lockTimeout bounds waiting for tagLock (held for one docker pull at
	// most).
	lockTimeout = 2 * time.Minute
)

// lender lends standIn the name upstream; the tests use names of their own.
type lender struct {
	dir, upstream, standIn string
}

func defaultLender(dir string) lender { return lender{dir: dir, upstream: Image, standIn: StandIn} }

// A process holds usersLock shared once, however many of its clusters are
// being created: flock(2) locks belong to the open file, so a second one
// in the same process would conflict with the first's release.
type holder struct {
	users      *flock.Flock
	count      int
	unregister func()
}

var (
	holdersMu sync.Mutex
	holders   = map[string]*holder{} // by usersLock's path
)

// Use makes the name Image runnable by kind for the creation of one
// cluster with a load balancer, and returns the function to call once kind
// has created it (its containers keep the image by ID, and docker restarts
// them without the name). In order: kind's own image, when Docker has it
// (without LabelOwner) or can pull it, is used and nothing is lent;
// otherwise the stand-in StandIn is lent the name Image, until the last
// user in any process releases it. dir is the directory shared by the
// processes (the kind backend's work root). Without kind's image or the
// stand-in it is an error saying how to get one.
func Use(ctx context.Context, d *docker.Docker, dir string, progress io.Writer) (release func(), err error) {
	return defaultLender(dir).use(ctx, d, progress)
}

// Unlend takes the name Image back from the stand-in when no process is
// creating a cluster on it (a run killed while it did leaves it lent), and
// removes stand-ins of older recipes left without a name; it says what it
// removed. `make kind-clean` runs it.
func Unlend(ctx context.Context, d *docker.Docker, dir string) ([]string, error) {
	return defaultLender(dir).unlend(ctx, d)
}

func (l lender) lock(name string) (*flock.Flock, error) {
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, err
	}
	return flock.New(filepath.Join(l.dir, name)), nil
}

// tagLocked runs f holding tagLock.
func (l lender) tagLocked(ctx context.Context, f func() error) error {
	tl, err := l.lock(tagLockName)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, lockTimeout)
	defer cancel()
	if ok, err := tl.TryLockContext(ctx, 100*time.Millisecond); err != nil || !ok {
		return fmt.Errorf("lock %s (another process deciding about the kind load balancer image's name): %w", tl.Path(), errors.Join(err, ctx.Err()))
	}
	defer tl.Unlock()
	return f()
}

func (l lender) use(ctx context.Context, d *docker.Docker, progress io.Writer) (func(), error) {
	if progress == nil {
		progress = io.Discard
	}
	users := filepath.Join(l.dir, usersLockName)
	holdersMu.Lock()
	defer holdersMu.Unlock()
	if h := holders[users]; h != nil {
		// Lent by this process already, and held: the name stays.
		h.count++
		return l.releaser(users), nil
	}
	if l.kindsOwn(ctx, d, progress) {
		return func() {}, nil
	}
	lent := false
	err := l.tagLocked(ctx, func() error {
		up := Inspect(ctx, d, l.upstream)
		if up.Present && !up.Ours { // pulled meanwhile
			fmt.Fprintf(progress, "kind load balancer image %s: kind's own, used\n", l.upstream)
			return nil
		}
		si := Inspect(ctx, d, l.standIn)
		if !si.Present || !si.Ours {
			return fmt.Errorf("kind's load balancer image %s is not here and cannot be pulled, and its stand-in %s is not built: run `make kind-image` (builds it offline with haproxy, a few minutes once)", l.upstream, l.standIn)
		}
		if up.ID != si.ID {
			if _, err := d.Run(ctx, nil, "tag", l.standIn, l.upstream); err != nil {
				return err
			}
		}
		ul, err := l.lock(usersLockName)
		if err != nil {
			return err
		}
		// Nobody holds it exclusively but under tagLock, which is ours.
		if ok, err := ul.TryRLock(); err != nil || !ok {
			return fmt.Errorf("shared lock %s: %v", ul.Path(), err)
		}
		h := &holder{users: ul, count: 1}
		// Should the parent die mid-create (lifetime.ExitWithParent), the
		// name is taken back before the process exits, if nobody else uses it.
		h.unregister = lifetime.OnParentDeath("kind load balancer name "+l.upstream, func(ctx context.Context) error {
			return l.takeBack(ctx, d, ul)
		})
		holders[users] = h
		lent = true
		fmt.Fprintf(progress, "kind load balancer image %s cannot be pulled: the stand-in %s has the name while this process creates clusters\n", l.upstream, l.standIn)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !lent {
		return func() {}, nil
	}
	return l.releaser(users), nil
}

// kindsOwn says whether kind's own image is here, pulling it if need be
// (without tagLock: a pull that succeeds replaces any lent name, which is
// right for every user of it).
func (l lender) kindsOwn(ctx context.Context, d *docker.Docker, progress io.Writer) bool {
	if up := Inspect(ctx, d, l.upstream); up.Present && !up.Ours {
		fmt.Fprintf(progress, "kind load balancer image %s: kind's own, used\n", l.upstream)
		return true
	}
	if err := pullOnce(ctx, d, l.upstream); err != nil {
		return false
	}
	fmt.Fprintf(progress, "kind load balancer image %s: pulled, kind's own is used\n", l.upstream)
	return true
}

// releaser is the release function of one use: the last one in the process
// drops its shared lock and takes the name back unless another process
// holds it.
func (l lender) releaser(users string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			holdersMu.Lock()
			defer holdersMu.Unlock()
			h := holders[users]
			if h.count--; h.count > 0 {
				return
			}
			delete(holders, users)
			h.unregister()
			ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
			defer cancel()
			_ = l.takeBack(ctx, nil, h.users)
		})
	}
}

// takeBack drops this process's shared lock and, if no other process holds
// one, takes the name back from the stand-in. d nil: a new client.
func (l lender) takeBack(ctx context.Context, d *docker.Docker, users *flock.Flock) error {
	return l.tagLocked(ctx, func() error {
		_ = users.Unlock()
		if d == nil {
			var err error
			if d, err = docker.New(ctx); err != nil {
				return err
			}
		}
		_, err := l.untagIfUnused(ctx, d)
		return err
	})
}

// untagIfUnused removes the name upstream from the stand-in when no process
// holds usersLock; tagLock must be held. It says whether it did.
func (l lender) untagIfUnused(ctx context.Context, d *docker.Docker) (bool, error) {
	probe, err := l.lock(usersLockName)
	if err != nil {
		return false, err
	}
	ok, err := probe.TryLock()
	if err != nil || !ok {
		return false, err // in use by a live process
	}
	defer probe.Unlock()
	if up := Inspect(ctx, d, l.upstream); !up.Present || !up.Ours {
		return false, nil
	}
	// The stand-in keeps its own name, so this removes a name only; an
	// image lent under an older scheme with no other name goes with it
	// unless a container uses it.
	if _, err := d.Run(ctx, nil, "rmi", l.upstream); err != nil {
		return false, err
	}
	return true, nil
}

func (l lender) unlend(ctx context.Context, d *docker.Docker) ([]string, error) {
	var removed []string
	err := l.tagLocked(ctx, func() error {
		ok, err := l.untagIfUnused(ctx, d)
		if ok {
			removed = append(removed, fmt.Sprintf("name %s (lent to the load balancer stand-in by a run that was killed)", l.upstream))
		}
		return err
	})
	// Stand-ins left without a name (the tag moved to a newer build while
	// a container used the old one): ours by their label, so safe to remove.
	out, lerr := d.Run(ctx, nil, "images", "-q", "--filter", "dangling=true", "--filter", "label="+LabelOwner+"="+OwnerImage)
	for _, id := range strings.Fields(string(out)) {
		if _, rerr := d.Run(ctx, nil, "rmi", id); rerr == nil {
			removed = append(removed, "image "+id+" (an unnamed load balancer stand-in)")
		}
	}
	return removed, errors.Join(err, lerr)
}

var (
	pullMu     sync.Mutex
	pullFailed = map[string]error{}
)

// pullOnce pulls ref, once per process after a failure: offline, each try
// costs up to Docker's dial timeout, and the answer does not change within
// a run.
func pullOnce(ctx context.Context, d *docker.Docker, ref string) error {
	pullMu.Lock()
	defer pullMu.Unlock()
	if err, ok := pullFailed[ref]; ok {
		return err
	}
	_, err := d.Run(ctx, nil, "pull", "--quiet", ref)
	if err != nil && ctx.Err() == nil {
		pullFailed[ref] = err
	}
	return err
}
