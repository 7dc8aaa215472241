package pool

// Clusters started ahead: the next spec's cluster starts while the current
// one runs.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/informer-conformance/informer-conformance/cluster"
)

// Spares hands out clusters of a backend that starts one per spec, started
// ahead of time. Take gives the cluster started in the background for the
// same cluster.Spec after the last Take (waiting for the rest of its start
// if it is not ready yet), or starts one when there is none, and then
// starts the next one for that spec in the background: a run of specs that
// each want a new cluster of the same kind waits for none but the first.
// One cluster at most is kept ahead: a Take for another spec closes it.
// Close stops what is kept.
//
// A spare is a cluster like any other, new and never handed out before; it
// has only been running (idle) for longer when it is taken.
type Spares struct {
	// Backend starts the clusters (its Start, bounded by StartTimeout).
	Backend cluster.Backend
	// ArtifactsDir, when set, is the parent of the spares' log
	// directories (spare-1, spare-2, ...); else the directory of the
	// harness Take was given.
	ArtifactsDir string
	// Errors, when set, hears of a spare that failed to start or to
	// close; Take then starts a cluster itself.
	Errors func(error)

	mu     sync.Mutex
	next   *spare
	n      int
	closed bool
	wg     sync.WaitGroup
}

type spare struct {
	spec   cluster.Spec
	done   chan struct{}
	cancel context.CancelFunc
	c      cluster.Cluster
	err    error
}

// Taken says how Take got its cluster (the report's "cluster from").
type Taken string

const (
	// Started: there was no spare for the spec; Take started the cluster.
	Started Taken = "started"
	// SpareReady: the spare was ready when asked for.
	SpareReady Taken = "spare ready"
	// SpareStarting: the spare was still starting; Take waited for it.
	SpareStarting Taken = "spare still starting"
)

// Take returns a new cluster started for spec, the spare kept for spec if
// there is one, and starts the next spare for spec with h (its logs in a
// directory of ArtifactsDir). ctx bounds the wait or the start; the
// spares' own starts are bounded by the backend's StartTimeout only.
func (s *Spares) Take(ctx context.Context, spec cluster.Spec, h cluster.Harness) (cluster.Cluster, Taken, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, "", errors.New("spares: closed")
	}
	sp := s.next
	s.next = nil
	s.mu.Unlock()

	how := Started
	var c cluster.Cluster
	if sp != nil && sp.spec != spec {
		s.discard(sp)
		sp = nil
	}
	if sp != nil {
		how = SpareReady
		select {
		case <-sp.done:
		default:
			how = SpareStarting
			select {
			case <-sp.done:
			case <-ctx.Done():
				s.discard(sp)
				return nil, how, fmt.Errorf("wait for the spare cluster: %w", context.Cause(ctx))
			}
		}
		if sp.err != nil {
			s.report(fmt.Errorf("spares: the spare for %+v failed to start, starting another: %w", spec, sp.err))
			how = Started
		} else {
			c = sp.c
		}
	}
	if c == nil {
		sctx, cancel := StartContext(ctx, s.Backend)
		var err error
		c, err = s.Backend.Start(sctx, spec, h)
		cancel()
		if err != nil {
			return nil, how, err
		}
	}
	s.startNext(spec, h)
	return c, how, nil
}

// startNext starts the spare for spec in the background.
func (s *Spares) startNext(spec cluster.Spec, h cluster.Harness) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.next != nil {
		return
	}
	s.n++
	dir := s.ArtifactsDir
	if dir == "" {
		dir = filepath.Dir(h.ArtifactsDir)
	}
	h.ArtifactsDir = filepath.Join(dir, fmt.Sprintf("spare-%d", s.n))
	ctx, cancel := StartContext(context.Background(), s.Backend)
	sp := &spare{spec: spec, done: make(chan struct{}), cancel: cancel}
	s.next = sp
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(sp.done)
		c, err := s.Backend.Start(ctx, spec, h)
		cancel() // ctx bounds the start only
		if err == nil && c == nil {
			err = fmt.Errorf("backend %s started no cluster", s.Backend.Name)
		}
		sp.c, sp.err = c, err
	}()
}

// discard stops sp's start or closes its cluster, in the background.
func (s *Spares) discard(sp *spare) {
	sp.cancel()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-sp.done
		if sp.c != nil {
			if err := sp.c.Close(context.Background()); err != nil {
				s.report(fmt.Errorf("spares: close the spare for %+v: %w", sp.spec, err))
			}
		}
	}()
}

func (s *Spares) report(err error) {
	if s.Errors != nil {
		s.Errors(err)
	}
}

// Close stops the spare's start or closes it, and returns when every
// spare is gone; later Takes fail. ctx bounds the wait.
func (s *Spares) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	sp := s.next
	s.next = nil
	s.mu.Unlock()
	if sp != nil {
		s.discard(sp)
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("spares: close: %w", context.Cause(ctx))
	}
}
