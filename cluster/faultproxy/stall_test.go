package faultproxy

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestBlackholeCurrentLetsNewConnectionsThrough: the connection open at the
// fault is silent both ways and stays open; a new one works.
func TestBlackholeCurrentLetsNewConnectionsThrough(t *testing.T) {
	u := newUpstream(t, "A")
	p := startProxy(t, u)
	c := dial(t, p, "A")
	echo(t, c, "before")
	before := u.received.Load()

	restore := p.BlackholeCurrent()
	if _, err := c.Write([]byte("lost")); err != nil {
		t.Fatalf("write into the blackhole: %v", err)
	}
	expectSilence(t, c)
	if got := u.received.Load(); got != before {
		t.Errorf("upstream received %d bytes of the blackholed connection", got-before)
	}
	echo(t, dial(t, p, "A"), "new works")
	if len(p.Stats().Active()) != 2 {
		t.Errorf("want both connections open: %+v", p.Stats())
	}
	restore()
	echo(t, dial(t, p, "A"), "after")
}

// TestStallAfterHoldsAndDelivers: n more bytes pass, the rest is held (the
// connection open, nothing lost) until restore delivers it in order.
func TestStallAfterHoldsAndDelivers(t *testing.T) {
	u := newUpstream(t, "A")
	payload := bytes.Repeat([]byte("0123456789"), 10_000)
	u.payload = payload
	p := startProxy(t, u)
	c := dial(t, p, "A")

	const n = 1000
	restore, held := p.StallAfter(n)
	defer restore()
	if _, err := c.Write([]byte("send")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read the %d bytes allowed: %v", n, err)
	}
	expectSilence(t, c)
	if held() == 0 {
		t.Errorf("held() = 0 while the stream is stalled")
	}
	if len(p.Stats().Active()) != 1 {
		t.Errorf("want the stalled connection open: %+v", p.Stats())
	}

	restore()
	rest := make([]byte, len(payload)-n)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, rest); err != nil {
		t.Fatalf("read the held bytes after restore: %v", err)
	}
	if !bytes.Equal(append(got, rest...), payload) {
		t.Errorf("the stream after the stall differs from what the server sent")
	}
	// The upstream answers every read with the payload: the stream flows again.
	if _, err := c.Write([]byte("again")); err != nil {
		t.Fatal(err)
	}
	expectRead(t, c, string(payload[:10]))
}

// TestCloseReleasesAStall: a StallAfter never restored holds a pipe's
// goroutine in its writer; Close must let it go (before, it stayed blocked
// on the stall's channel for the life of the process).
func TestCloseReleasesAStall(t *testing.T) {
	u := newUpstream(t, "A")
	u.payload = bytes.Repeat([]byte("0123456789"), 10_000)
	p := startProxy(t, u)
	c := dial(t, p, "A")
	_, held := p.StallAfter(100) // restore deliberately never called
	if _, err := c.Write([]byte("send")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 100)); err != nil {
		t.Fatalf("read the bytes allowed: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); held() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("nothing held within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	const blocked = "stallingWriter"
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, blocked) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 s after Close a goroutine is still held by the stall:\n%s", stacks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
