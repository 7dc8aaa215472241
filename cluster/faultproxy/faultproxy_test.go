package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// quiet is how long a test watches a connection to see that nothing arrives.
const quiet = 300 * time.Millisecond

// upstream is a real TCP server: it greets each connection with its tag,
// then echoes, and counts what it received and whether the client closed.
type upstream struct {
	ln       net.Listener
	tag      string
	payload  []byte // sent in answer to the first bytes instead of an echo, when set
	received atomic.Int64
	eofs     atomic.Int32
}

func newUpstream(t testing.TB, tag string) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{ln: ln, tag: tag}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go u.serve(c)
		}
	}()
	return u
}

func (u *upstream) serve(c net.Conn) {
	defer c.Close()
	if _, err := c.Write([]byte(u.tag)); err != nil {
		return
	}
	buf := make([]byte, 32*1024)
	for {
		n, err := c.Read(buf)
		u.received.Add(int64(n))
		if n > 0 {
			answer := buf[:n]
			if u.payload != nil {
				answer = u.payload
			}
			if _, err := c.Write(answer); err != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				u.eofs.Add(1)
			}
			return
		}
	}
}

func (u *upstream) addr() string { return u.ln.Addr().String() }

func startProxy(t testing.TB, ups ...*upstream) *Proxy {
	t.Helper()
	var addrs []string
	for _, u := range ups {
		addrs = append(addrs, u.addr())
	}
	p, err := Start(addrs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// dial connects through the proxy and reads the upstream's tag.
func dial(t testing.TB, p *Proxy, wantTag string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if wantTag != "" {
		expectRead(t, c, wantTag)
	}
	return c
}

func expectRead(t testing.TB, c net.Conn, want string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		t.Fatalf("read %q, %v; want %q", got, err, want)
	}
}

// expectSilence wants a read to time out: the connection is open and nothing comes.
func expectSilence(t testing.TB, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(quiet))
	n, err := c.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("want silence (a read timeout) on an open connection, got %d bytes, %v", n, err)
	}
}

// holds reports whether cond stays true for d, polling.
func holds(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !cond() {
			return false
		}
		<-time.After(10 * time.Millisecond)
	}
	return cond()
}

func echo(t testing.TB, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	expectRead(t, c, msg)
}

func TestPassCountsBytesAndConnections(t *testing.T) {
	u := newUpstream(t, "A")
	p := startProxy(t, u)
	c := dial(t, p, "A")
	echo(t, c, "hello")
	s := p.Stats()
	if s.Accepted != 1 || len(s.Active()) != 1 {
		t.Fatalf("stats %+v: want one accepted, active connection", s)
	}
	if cs := s.Connections[0]; cs.BytesUp != 5 || cs.BytesDown != 6 {
		t.Errorf("bytes up %d down %d, want 5 and 6 (tag + echo)", cs.BytesUp, cs.BytesDown)
	}
}

// TestBlackholeHoldsConnectionsSilently: during a blackhole bytes go nowhere
// in either direction, no connection is closed (no FIN, no RST), new ones are
// accepted and silent, and a client's close does not reach the server until
// the blackhole ends.
func TestBlackholeHoldsConnectionsSilently(t *testing.T) {
	u := newUpstream(t, "A")
	p := startProxy(t, u)
	c := dial(t, p, "A")
	echo(t, c, "before")
	before := u.received.Load()

	restore := p.Blackhole()
	if _, err := c.Write([]byte("lost")); err != nil {
		t.Fatalf("write into the blackhole: %v", err)
	}
	expectSilence(t, c)
	if got := u.received.Load(); got != before {
		t.Errorf("upstream received %d bytes during the blackhole", got-before)
	}
	fresh := dial(t, p, "")
	expectSilence(t, fresh) // not even the greeting
	if len(p.Stats().Active()) != 2 {
		t.Errorf("want both connections open during the blackhole: %+v", p.Stats())
	}
	c.Close()
	if !holds(quiet, func() bool { return u.eofs.Load() == 0 }) {
		t.Fatalf("the server saw the client's close through the blackhole")
	}

	restore()
	// After the blackhole the held half of the closed connection is closed.
	if holds(5*time.Second, func() bool { return u.eofs.Load() == 0 }) {
		t.Errorf("the server never learned the client closed after the blackhole ended")
	}
	echo(t, dial(t, p, "A"), "after")
}

func TestResetAllSendsRST(t *testing.T) {
	u := newUpstream(t, "A")
	p := startProxy(t, u)
	c := dial(t, p, "A")
	if n := p.ResetAll(); n != 1 {
		t.Fatalf("ResetAll reset %d connections, want 1", n)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("want connection reset by peer, got %v", err)
	}
	if cs := p.Stats().Connections[0]; cs.Cause != "reset" || cs.Closed.IsZero() {
		t.Errorf("stats %+v: want closed by reset", cs)
	}
}

func TestRefuseNewKeepsCurrent(t *testing.T) {
	u := newUpstream(t, "A")
	p := startProxy(t, u)
	c := dial(t, p, "A")
	restore := p.RefuseNew()
	if _, err := net.Dial("tcp", p.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("new connection while refusing: want connection refused, got %v", err)
	}
	echo(t, c, "still here")
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	echo(t, dial(t, p, "A"), "back")
}

func TestBlackholeNewKeepsCurrent(t *testing.T) {
	u := newUpstream(t, "A")
	p := startProxy(t, u)
	c := dial(t, p, "A")
	restore := p.BlackholeNew()
	silent := dial(t, p, "")
	expectSilence(t, silent)
	echo(t, c, "current works")
	restore()
	expectSilence(t, silent) // silent for its whole life
	echo(t, dial(t, p, "A"), "new works")
}

func TestLatency(t *testing.T) {
	u := newUpstream(t, "A")
	p := startProxy(t, u)
	c := dial(t, p, "A")
	const d = 100 * time.Millisecond
	restore := p.SetLatency(d)
	start := time.Now()
	echo(t, c, "slow")
	if rtt := time.Since(start); rtt < 2*d {
		t.Errorf("round trip %s with %s added each way, want >= %s", rtt, d, 2*d)
	}
	restore()
}

func TestCutAfter(t *testing.T) {
	u := newUpstream(t, "A")
	u.payload = bytes.Repeat([]byte("x"), 100_000)
	p := startProxy(t, u)
	restore := p.CutAfter(1000)
	defer restore()
	c := dial(t, p, "A")
	if _, err := c.Write([]byte("send")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c)
	if len(got) != 999 { // 1000 bytes from the connection's start, the tag included
		t.Errorf("read %d bytes after the tag before the cut, want 999", len(got))
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("want the cut to reset the connection, got %v", err)
	}
}

func TestUpstreamSelection(t *testing.T) {
	a, b := newUpstream(t, "A"), newUpstream(t, "B")
	p := startProxy(t, a, b)
	dial(t, p, "A")
	restore, err := p.Pin(1)
	if err != nil {
		t.Fatal(err)
	}
	dial(t, p, "B")
	restore()
	dial(t, p, "A")
	rr := p.RoundRobin()
	first := dial(t, p, "")
	second := dial(t, p, "")
	tags := readTag(t, first) + readTag(t, second)
	if tags != "AB" && tags != "BA" {
		t.Errorf("round robin gave %q, want both upstreams", tags)
	}
	rr()
	if _, err := p.Pin(2); err == nil {
		t.Errorf("pin to a missing upstream: want an error")
	}
}

func readTag(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDeadUpstreamResets(t *testing.T) {
	u := newUpstream(t, "A")
	p := startProxy(t, u)
	u.ln.Close()
	// The reset may arrive before the dial returns, or at the first read.
	c, err := net.Dial("tcp", p.Addr())
	if err == nil {
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = c.Read(make([]byte, 1))
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("want a reset when the upstream is down, got %v", err)
	}
	if s := p.Stats(); s.DialFailed != 1 {
		t.Errorf("DialFailed = %d, want 1", s.DialFailed)
	}
}

func TestCloseReleasesEverything(t *testing.T) {
	u := newUpstream(t, "A")
	p := startProxy(t, u)
	c := dial(t, p, "A")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Errorf("connection open after Close")
	}
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Errorf("proxy still accepts after Close")
	}
	if len(p.Stats().Active()) != 0 {
		t.Errorf("active connections after Close: %+v", p.Stats())
	}
}

func TestStartValidates(t *testing.T) {
	if _, err := Start(); err == nil {
		t.Error("no upstream: want an error")
	}
	if _, err := Start("localhost"); err == nil {
		t.Error("upstream without a port: want an error")
	}
}

// benchConn connects to an echo upstream directly or through a proxy.
func benchConn(b *testing.B, via string) net.Conn {
	u := newUpstream(b, "A")
	addr := u.addr()
	if via == "proxy" {
		addr = startProxy(b, u).Addr()
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	expectRead(b, c, "A")
	return c
}

// BenchmarkThroughput streams through the proxy and directly, for the
// proxy's overhead on loopback (compare the MB/s of the two).
func BenchmarkThroughput(b *testing.B) {
	for _, via := range []string{"direct", "proxy"} {
		b.Run(via, func(b *testing.B) {
			c := benchConn(b, via)
			chunk := bytes.Repeat([]byte("x"), 64*1024)
			b.SetBytes(int64(len(chunk)))
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.CopyN(io.Discard, c, int64(b.N)*int64(len(chunk)))
			}()
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
		})
	}
}

// BenchmarkRoundTrip measures the latency the proxy adds to a small
// request/response on loopback.
func BenchmarkRoundTrip(b *testing.B) {
	for _, via := range []string{"direct", "proxy"} {
		b.Run(via, func(b *testing.B) {
			c := benchConn(b, via)
			buf := make([]byte, 1)
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write([]byte("p")); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestGoroutinesNamesTheProxysGoroutines: the names a leak check ignores
// are the functions the running proxy's goroutines show in a stack dump.
func TestGoroutinesNamesTheProxysGoroutines(t *testing.T) {
	names := Goroutines()
	for _, n := range names {
		if !strings.HasPrefix(n, "github.com/informer-conformance/informer-conformance/cluster/faultproxy.(*Proxy).") {
			t.Errorf("Goroutines() has %q: not a method of the proxy", n)
		}
	}
	backend, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	p, err := Start(backend.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// A goroutine not yet scheduled shows its go statement's wrapper
	// (listen.gowrap1), not acceptLoop: poll, bounded, until it runs.
	buf := make([]byte, 1<<20)
	deadline := time.After(goroutineStartBound)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		stacks := string(buf[:runtime.Stack(buf, true)])
		if strings.Contains(stacks, names[0]) {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("within %s, a running proxy's goroutines do not show %q:\n%s", goroutineStartBound, names[0], stacks)
		case <-tick.C:
		}
	}
}

// goroutineStartBound bounds waiting for a goroutine the proxy started to
// be scheduled.
const goroutineStartBound = 5 * time.Second

// TestStartOnRefusesAName: StartOn listens on an IP, not a name it would
// have to resolve.
func TestStartOnRefusesAName(t *testing.T) {
	if p, err := StartOn("localhost", "127.0.0.1:1"); err == nil {
		p.Close()
		t.Fatal("StartOn(localhost): no error")
	}
	p, err := StartOn("127.0.0.1", "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Errorf("Addr %s", p.Addr())
	}
}
