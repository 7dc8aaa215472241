package faultproxy

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
)

// BlackholeCurrent drops every byte of the connections open now, in both
// directions, and never closes one, until the returned restore is called;
// connections accepted meanwhile work. It is a stale connection (an expired
// NAT entry, a vanished path) that a client can recover from only by
// noticing it on its own and dialing again: the new dial gets through.
func (p *Proxy) BlackholeCurrent() (restore func()) {
	cs := p.current()
	for _, c := range cs {
		c.silencedNow.Store(true)
	}
	end := p.Faults.Begin(faultlog.Blackhole, fmt.Sprintf("the %d connections open", len(cs)))
	return once(func() {
		for _, c := range cs {
			c.silencedNow.Store(false)
		}
		end()
	})
}

// StallAfter lets each connection open now forward n more bytes from the
// server to the client and then holds the rest back (nothing dropped, nothing
// closed; the proxy stops reading from the server, so TCP back-pressure
// reaches it) until restore, which delivers what was held and lets the
// connection flow again. Client-to-server bytes keep flowing. With a stream
// of length-prefixed frames, it stops the stream in the middle of a frame
// that is larger than n: the client sees a frame begin and the rest never
// come. held reports how many bytes are being, or were, held back.
func (p *Proxy) StallAfter(n int64) (restore func(), held func() int64) {
	cs := p.current()
	var states []*stallState
	for _, c := range cs {
		s := &stallState{left: n, released: make(chan struct{})}
		states = append(states, s)
		c.stall.Store(s)
	}
	end := p.Faults.Begin(faultlog.Stall, fmt.Sprintf("the %d connections open, after %d bytes", len(cs), n))
	restore = once(func() {
		for i, c := range cs {
			c.stall.CompareAndSwap(states[i], nil)
			close(states[i].released)
		}
		end()
	})
	held = func() int64 {
		var total int64
		for _, s := range states {
			total += s.held.Load()
		}
		return total
	}
	return restore, held
}

// current returns the open connections.
func (p *Proxy) current() []*conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	cs := make([]*conn, 0, len(p.conns))
	for _, c := range p.conns {
		cs = append(cs, c)
	}
	return cs
}

// stallState is one connection's StallAfter.
type stallState struct {
	mu       sync.Mutex
	left     int64 // bytes that may still pass before holding
	held     atomic.Int64
	released chan struct{}
}

// allow returns how many of k bytes may pass now.
func (s *stallState) allow(k int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := int(min(int64(k), s.left))
	s.left -= int64(n)
	return n
}

// stallingWriter is dst.Write for server-to-client bytes, honouring a
// StallAfter on c: it writes what the stall allows and blocks with the rest
// until the stall is released or the connection closes (Close, or the
// client went away), whichever comes first: a stall never restored leaks
// no goroutine.
func (c *conn) stallingWriter(dst *net.TCPConn) func([]byte) (int, error) {
	return func(b []byte) (int, error) {
		s := c.stall.Load()
		if s == nil {
			return dst.Write(b)
		}
		n := s.allow(len(b))
		if n > 0 {
			if w, err := dst.Write(b[:n]); err != nil {
				return w, err
			}
		}
		if n == len(b) {
			return n, nil
		}
		s.held.Add(int64(len(b) - n))
		select {
		case <-s.released:
		case <-c.closed:
			return n, net.ErrClosed
		}
		w, err := dst.Write(b[n:])
		return n + w, err
	}
}
