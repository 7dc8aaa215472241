// Package faultproxy is an in-process TCP proxy on 127.0.0.1 (or another
// address of the host: StartOn) that sits
// between the clients under test and the apiservers (or an apiserver and
// etcd) and breaks the path the
// way networks break: a blackhole that drops every byte without FIN or RST (a
// vanished host, an expired NAT entry), a reset of every connection (RST),
// refused or silent new connections, added latency, a stream cut after N
// bytes, and failover between several upstreams.
//
// It works on bytes, not HTTP: TLS passes through untouched, so the client
// verifies the apiserver's real certificate (which must carry 127.0.0.1, as
// the local backend's does) and the proxy works in front of any backend.
// Every fault is a value you can undo: it returns a restore function, meant
// for DeferCleanup.
package faultproxy

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
	"github.com/informer-conformance/informer-conformance/cluster/internal/ports"
)

// DialTimeout bounds connecting to an upstream.
const DialTimeout = 5 * time.Second

// Proxy forwards TCP connections from its listener to one of its upstreams.
type Proxy struct {
	// Faults is where the proxy records the windows of the faults it
	// applies (nil: nowhere). Set it before applying one: e2e.StartEnv
	// gives it the spec's log.
	Faults *faultlog.Log

	upstreams []string
	host      string // the listener's IP
	port      *ports.Reservation

	mu        sync.Mutex
	ln        net.Listener // nil while new connections are refused
	conns     map[int64]*conn
	done      []ConnStats // closed connections
	nextID    int64
	pinned    int // upstream index, or -1 for round robin
	rr        int
	refusing  int // nesting count of RefuseNew
	closed    bool
	acceptWG  sync.WaitGroup
	accepted  int
	dialFails int

	blackholeAll atomic.Int32 // nesting count of Blackhole
	blackholeNew atomic.Int32 // nesting count of BlackholeNew
	latency      atomic.Int64 // ns added before each forwarded chunk
	cutAfter     atomic.Int64 // bytes server->client per connection before a reset; 0 = off
}

// conn is one proxied connection.
type conn struct {
	id               int64
	upstream         int
	client, server   *net.TCPConn
	clientAddr       string // client.RemoteAddr(), for Stats
	opened           time.Time
	silenced         bool                       // accepted while BlackholeNew was on
	silencedNow      atomic.Bool                // BlackholeCurrent (stall.go)
	stall            atomic.Pointer[stallState] // StallAfter (stall.go)
	bytesUp, bytesDn atomic.Int64
	closeOnce        sync.Once
	closed           chan struct{} // closed by close: releases a StallAfter's held writer
	closeMu          sync.Mutex    // guards closedAt and cause: Stats reads them while close writes
	closedAt         time.Time
	cause            string
}

// ConnStats describes one connection.
type ConnStats struct {
	ID        int64
	Upstream  int
	Opened    time.Time
	Closed    time.Time // zero while open
	BytesUp   int64     // client to server
	BytesDown int64     // server to client
	Cause     string    // why it closed: "client closed", "server closed", "reset", "cut", ...
	// Client is the client's address (host:port): a probe's requests name
	// the connection that carried them by the same address (probe.Request.Conn).
	Client string
}

// Stats is a snapshot of the proxy's counters.
type Stats struct {
	Accepted    int // connections accepted since start
	DialFailed  int // accepted connections whose upstream could not be reached
	Connections []ConnStats
}

// Active returns the connections still open.
func (s Stats) Active() []ConnStats {
	var out []ConnStats
	for _, c := range s.Connections {
		if c.Closed.IsZero() {
			out = append(out, c)
		}
	}
	return out
}

// Start listens on a reserved 127.0.0.1 port and forwards to upstreams
// (host:port). Connections go to upstream 0 until Pin or RoundRobin says
// otherwise.
func Start(upstreams ...string) (*Proxy, error) { return StartOn("127.0.0.1", upstreams...) }

// StartOn is Start listening on host (an IP of this machine) instead of
// 127.0.0.1, for clients that cannot reach the host's loopback: a kind
// node reaches the host on its Docker network's gateway. The port is
// reserved as Start's are (ports.Reserve), so proxies of parallel processes
// do not collide.
func StartOn(host string, upstreams ...string) (*Proxy, error) {
	if len(upstreams) == 0 {
		return nil, errors.New("start fault proxy: no upstream")
	}
	if net.ParseIP(host) == nil {
		return nil, fmt.Errorf("start fault proxy: listen host %q is not an IP", host)
	}
	for _, u := range upstreams {
		if _, _, err := net.SplitHostPort(u); err != nil {
			return nil, fmt.Errorf("start fault proxy: upstream %q is not host:port: %w", u, err)
		}
	}
	port, err := ports.Reserve()
	if err != nil {
		return nil, fmt.Errorf("start fault proxy: %w", err)
	}
	p := &Proxy{upstreams: upstreams, host: host, port: port, conns: map[int64]*conn{}}
	if err := p.listen(); err != nil {
		port.Release()
		return nil, fmt.Errorf("start fault proxy: %w", err)
	}
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return net.JoinHostPort(p.host, strconv.Itoa(p.port.Port)) }

// URL is https://Addr(), for a rest.Config's Host.
func (p *Proxy) URL() string { return "https://" + p.Addr() }

// listen starts the accept loop; p.mu must not be held.
func (p *Proxy) listen() error {
	ln, err := net.Listen("tcp", p.Addr())
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.acceptWG.Add(1)
	go p.acceptLoop(ln)
	return nil
}

func (p *Proxy) acceptLoop(ln net.Listener) {
	defer p.acceptWG.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return // listener closed: refusing or closing
		}
		go p.handle(c.(*net.TCPConn))
	}
}

func (p *Proxy) handle(client *net.TCPConn) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		reset(client)
		return
	}
	p.accepted++
	up := p.pinned
	if up < 0 {
		up = p.rr % len(p.upstreams)
		p.rr++
	}
	p.mu.Unlock()
	s, err := net.DialTimeout("tcp", p.upstreams[up], DialTimeout)
	if err != nil {
		p.mu.Lock()
		p.dialFails++
		p.mu.Unlock()
		reset(client) // the client sees what it would see of a dead upstream: a reset
		return
	}
	c := &conn{upstream: up, client: client, clientAddr: client.RemoteAddr().String(), server: s.(*net.TCPConn), opened: time.Now(), closed: make(chan struct{}), silenced: p.blackholeNew.Load() > 0}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.close("proxy closed", true)
		return
	}
	p.nextID++
	c.id = p.nextID
	p.conns[c.id] = c
	p.mu.Unlock()
	go p.pipe(c, c.client, c.server, &c.bytesUp, false)
	go p.pipe(c, c.server, c.client, &c.bytesDn, true)
}

// blackholed reports whether c's bytes are being dropped now.
func (p *Proxy) blackholed(c *conn) bool {
	return p.blackholeAll.Load() > 0 || c.silenced || c.silencedNow.Load()
}

// pipe copies src to dst, applying the faults chunk by chunk.
func (p *Proxy) pipe(c *conn, src, dst *net.TCPConn, count *atomic.Int64, down bool) {
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.blackholed(c) {
			if d := time.Duration(p.latency.Load()); d > 0 {
				<-time.After(d)
			}
			chunk := buf[:n]
			limit := p.cutAfter.Load()
			cut := false
			if down && limit > 0 && count.Load()+int64(n) >= limit {
				chunk = chunk[:max(0, limit-count.Load())]
				cut = true
			}
			if len(chunk) > 0 {
				// Counted before the write, so whatever the far side does in
				// answer already sees it counted.
				count.Add(int64(len(chunk)))
				write := dst.Write
				if down {
					write = c.stallingWriter(dst)
				}
				if _, werr := write(chunk); werr != nil {
					p.finish(c, "write failed: "+werr.Error(), false)
					return
				}
			}
			if cut {
				p.finish(c, fmt.Sprintf("cut after %d bytes", limit), true)
				return
			}
		}
		if err != nil {
			if p.blackholed(c) {
				// A vanished host sends no FIN: the other side learns
				// nothing until the blackhole ends or it gives up itself.
				p.holdUntilUnblackholed(c, src)
				return
			}
			cause := "server closed"
			if src == c.client {
				cause = "client closed"
			}
			p.finish(c, cause, errors.Is(err, syscall.ECONNRESET))
			return
		}
	}
}

// holdUntilUnblackholed keeps the half-dead connection's other side open
// while the blackhole lasts, then closes it.
func (p *Proxy) holdUntilUnblackholed(c *conn, gone *net.TCPConn) {
	_ = gone.Close()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for range t.C {
		p.mu.Lock()
		closed := p.closed
		p.mu.Unlock()
		if closed || !p.blackholed(c) {
			p.finish(c, "closed during blackhole", false)
			return
		}
	}
}

// finish closes both sides of c once and records it.
func (p *Proxy) finish(c *conn, cause string, rst bool) {
	c.close(cause, rst)
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.conns[c.id]; ok {
		delete(p.conns, c.id)
		p.done = append(p.done, c.stats())
	}
}

func (c *conn) close(cause string, rst bool) {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeMu.Lock()
		c.cause = cause
		c.closedAt = time.Now()
		c.closeMu.Unlock()
		if rst {
			reset(c.client)
			reset(c.server)
			return
		}
		_ = c.client.Close()
		_ = c.server.Close()
	})
}

func (c *conn) stats() ConnStats {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	return ConnStats{ID: c.id, Upstream: c.upstream, Opened: c.opened, Closed: c.closedAt,
		BytesUp: c.bytesUp.Load(), BytesDown: c.bytesDn.Load(), Cause: c.cause, Client: c.clientAddr}
}

// reset closes c with an RST instead of a FIN.
func reset(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}

// Stats returns a snapshot of the counters, connections in accept order.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Accepted: p.accepted, DialFailed: p.dialFails}
	s.Connections = append(s.Connections, p.done...)
	for _, c := range p.conns {
		s.Connections = append(s.Connections, c.stats())
	}
	slices.SortFunc(s.Connections, func(a, b ConnStats) int { return cmp.Compare(a.ID, b.ID) })
	return s
}

// Blackhole drops every byte of every connection, current and new, in both
// directions, and never closes one, until the returned restore is called.
// Bytes read meanwhile are gone, so a connection that lived through a
// blackhole is corrupt afterwards, as after a lost NAT entry; when a side
// closes during the blackhole, the other side is closed only after it.
func (p *Proxy) Blackhole() (restore func()) {
	p.blackholeAll.Add(1)
	end := p.Faults.Begin(faultlog.Blackhole, "every connection, current and new")
	return once(func() { p.blackholeAll.Add(-1); end() })
}

// BlackholeNew makes connections accepted from now on silent for their whole
// life (accepted, then nothing); current connections keep working.
func (p *Proxy) BlackholeNew() (restore func()) {
	p.blackholeNew.Add(1)
	end := p.Faults.Begin(faultlog.Blackhole, "new connections")
	return once(func() { p.blackholeNew.Add(-1); end() })
}

// RefuseNew closes the listener, so new connections get "connection
// refused"; current connections keep working. Restore listens again on the
// same port (reserved for the proxy, so nothing else took it).
func (p *Proxy) RefuseNew() (restore func() error) {
	p.mu.Lock()
	p.refusing++
	ln := p.ln
	p.ln = nil
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	end := p.Faults.Begin(faultlog.RefuseNew, "")
	var o sync.Once
	return func() error {
		var err error
		o.Do(func() {
			defer end()
			p.mu.Lock()
			p.refusing--
			relisten := p.refusing == 0 && !p.closed
			p.mu.Unlock()
			if relisten {
				if err = p.listen(); err != nil {
					err = fmt.Errorf("fault proxy: listen again on %s: %w", p.Addr(), err)
				}
			}
		})
		return err
	}
}

// ResetAll closes every current connection with an RST to both sides and
// returns how many it reset.
func (p *Proxy) ResetAll() int {
	p.mu.Lock()
	var cs []*conn
	for _, c := range p.conns {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	p.Faults.Begin(faultlog.Reset, fmt.Sprintf("%d connections", len(cs)))()
	for _, c := range cs {
		p.finish(c, "reset", true)
	}
	return len(cs)
}

// SetLatency delays every forwarded chunk by d in each direction.
func (p *Proxy) SetLatency(d time.Duration) (restore func()) {
	old := p.latency.Swap(int64(d))
	end := p.Faults.Begin(faultlog.Latency, d.String())
	return once(func() { p.latency.Store(old); end() })
}

// CutAfter resets each connection once n bytes have gone from the server to
// the client on it (counting from the connection's start): a stream cut in
// the middle of whatever it was sending.
func (p *Proxy) CutAfter(n int64) (restore func()) {
	old := p.cutAfter.Swap(n)
	end := p.Faults.Begin(faultlog.ConnectionsCut, fmt.Sprintf("after %d bytes", n))
	return once(func() { p.cutAfter.Store(old); end() })
}

// Pin sends new connections to upstream i; current connections stay where
// they are (fail over by pinning another and resetting).
func (p *Proxy) Pin(i int) (restore func(), err error) {
	if i < 0 || i >= len(p.upstreams) {
		return nil, fmt.Errorf("pin upstream %d: have %d", i, len(p.upstreams))
	}
	p.mu.Lock()
	old := p.pinned
	p.pinned = i
	p.mu.Unlock()
	return once(func() { p.mu.Lock(); p.pinned = old; p.mu.Unlock() }), nil
}

// RoundRobin spreads new connections over all upstreams in turn.
func (p *Proxy) RoundRobin() (restore func()) {
	p.mu.Lock()
	old := p.pinned
	p.pinned = -1
	p.mu.Unlock()
	return once(func() { p.mu.Lock(); p.pinned = old; p.mu.Unlock() })
}

// Close stops listening, closes every connection and releases the port.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	ln := p.ln
	p.ln = nil
	var cs []*conn
	for _, c := range p.conns {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	p.acceptWG.Wait()
	for _, c := range cs {
		p.finish(c, "proxy closed", false)
	}
	return p.port.Release()
}

func once(f func()) func() {
	var o sync.Once
	return func() { o.Do(f) }
}

var _ io.Closer = (*Proxy)(nil)
