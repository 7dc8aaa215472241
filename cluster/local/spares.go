package local

// Clusters started ahead: the next spec's cluster starts while the current
// one runs.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
)

// Spares hands out clusters started ahead of time. Take gives the cluster
// started in the background for the same key after the last Take (waiting
// for the rest of its start if it is not ready yet), or starts one when
// there is none, and then starts the next one for that key in the
// background: a run of tests that each want a new cluster of the same
// kind waits for none but the first. One cluster at most is kept ahead: a
// Take for another key closes it. The zero value is ready to use; Close
// stops what is kept.
//
// A spare is a cluster like any other, new and never handed out before; it
// has only been running (idle) for longer when it is taken.
type Spares struct {
	// ArtifactsDir, when set, is the parent of the spares' log
	// directories (spare-1, spare-2, ...); else Options' default.
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
	key    string
	done   chan struct{}
	cancel context.CancelFunc
	c      *Cluster
	err    error
}

// Taken says how Take got its cluster.
type Taken string

const (
	// Started: there was no spare for the key; Take started the cluster.
	Started Taken = "started"
	// SpareReady: the spare was ready when asked for.
	SpareReady Taken = "spare ready"
	// SpareStarting: the spare was still starting; Take waited for it.
	SpareStarting Taken = "spare still starting"
)

// Take returns a new cluster started with opts, the spare kept for key if
// there is one (key must name everything opts says but ArtifactsDir and
// Progress), and starts the next spare for key. ctx bounds the wait or the
// start; the spares' own starts are bounded by opts' ReadyTimeout only.
func (s *Spares) Take(ctx context.Context, key string, opts Options) (*Cluster, Taken, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, "", errors.New("local spares: closed")
	}
	sp := s.next
	s.next = nil
	s.mu.Unlock()

	how := Started
	var c *Cluster
	if sp != nil && sp.key != key {
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
			s.report(fmt.Errorf("local spares: the spare for %q failed to start, starting another: %w", key, sp.err))
			how = Started
		} else {
			c = sp.c
		}
	}
	if c == nil {
		var err error
		if c, err = Start(ctx, opts); err != nil {
			return nil, how, err
		}
	}
	s.startNext(key, opts)
	return c, how, nil
}

// startNext starts the spare for key in the background.
func (s *Spares) startNext(key string, opts Options) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.next != nil {
		return
	}
	s.n++
	opts.Name = ""
	opts.ArtifactsDir = ""
	if s.ArtifactsDir != "" {
		opts.ArtifactsDir = filepath.Join(s.ArtifactsDir, fmt.Sprintf("spare-%d", s.n))
	}
	ctx, cancel := context.WithCancel(context.Background())
	sp := &spare{key: key, done: make(chan struct{}), cancel: cancel}
	s.next = sp
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(sp.done)
		sp.c, sp.err = Start(ctx, opts)
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
				s.report(fmt.Errorf("local spares: close the spare for %q: %w", sp.key, err))
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
		return fmt.Errorf("local spares: close: %w", context.Cause(ctx))
	}
}
