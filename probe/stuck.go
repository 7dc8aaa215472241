package probe

import (
	"bytes"
	"fmt"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// ShutdownTimeout bounds Factory.Shutdown where a spec's clean-up waits
// for it (StopWithin). Shutdown (client-go informers/factory.go) only waits
// on its WaitGroup for each informer's RunWithContext; that
// (tools/cache/shared_informer.go) returns once its controller has seen the
// context end (the reflector's requests carry the context, so none waits on
// the network; the REST client's wait before a retry is context-aware in
// v0.36, rest/with_retry.go SleepWithContext, and older versions sleep at
// most the Retry-After the specs send, 1 s; controller.go's processLoop
// ends when the queue is closed)
// and its processor's listeners have returned (sharedProcessor.run closes
// each addCh, processorListener.pop returns at once, dropping what is
// pending, processorListener.run after the handler call in flight). No
// timer is waited on, save processorListener.run's one second after a
// handler panicked (only without utilruntime.ReallyCrash). A working
// informer's Shutdown takes milliseconds (S10 asserts 5 s, also on a dead
// connection, TestStopWithin measures it); what outlasts 10 s is a handler
// or an informer that does not return, not a slow machine.
const ShutdownTimeout = 10 * time.Second

// StuckError says that a call into the client under test did not return
// within its bound, and which goroutines it left behind.
type StuckError struct {
	// What did not return, e.g. "factory.Shutdown()".
	What   string
	Within time.Duration
	// Culprit names where the call is stuck, as far as the goroutines tell:
	// a handler blocked in a function of its own, or the informer.
	Culprit string
	// Stuck is the goroutine dump (runtime/pprof goroutine profile,
	// debug=2) of the goroutines the call was waiting on: the one making the
	// call and every goroutine started, directly or not, by the goroutines
	// the call belongs to (for a probe: those that started its informers).
	Stuck []byte
	// All is the same dump of every goroutine of the process.
	All []byte
}

func (e *StuckError) Error() string {
	return fmt.Sprintf("%s did not return within %s: %s", e.What, e.Within, e.Culprit)
}

// Dump is what a goroutine dump file should hold: the stuck goroutines,
// then every goroutine of the process.
func (e *StuckError) Dump() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n# goroutines %s was waiting on (runtime/pprof goroutine profile, debug=2):\n\n", e.Error(), e.What)
	b.Write(e.Stuck)
	b.WriteString("\n# every goroutine of the process:\n\n")
	b.Write(e.All)
	return b.Bytes()
}

// StopWithin is Stop bounded by d: it returns nil once Factory.Shutdown
// returned, or a *StuckError naming the handler or informer it waits on
// when it has not within d. A Shutdown that does not return keeps running
// in the background; a later Stop or StopWithin waits for the same one.
//
// Factory.Shutdown (informers/factory.go) waits for every informer's
// RunWithContext to return; that waits (tools/cache/shared_informer.go) for
// the controller, whose reflector's requests carry the informer's context,
// and then for the processor: sharedProcessor.run closes each listener's
// addCh, processorListener.pop returns and processorListener.run returns
// after the handler call in flight. A handler that never returns therefore
// holds Shutdown for ever.
func (p *Probe) StopWithin(d time.Duration) error {
	if within(p.shutdown(), d) {
		return nil
	}
	p.mu.Lock()
	roots := append([]int64{p.shutdownGoroutine}, p.starters...)
	p.mu.Unlock()
	return stuck("factory.Shutdown()", d, roots)
}

// shutdown closes the stop channel and starts Factory.Shutdown once; the
// channel returned is closed when it returned.
func (p *Probe) shutdown() <-chan struct{} {
	p.stopOnce.Do(func() {
		p.Recorder.addReportedRV(ReportedRV{Time: time.Now(), When: RVStopping, Which: "informer", RV: p.Informer.LastSyncResourceVersion()})
		close(p.stop)
		p.shutdownDone = make(chan struct{})
		started := make(chan struct{})
		go func() {
			p.mu.Lock()
			p.shutdownGoroutine = goroutineID()
			p.mu.Unlock()
			close(started)
			defer close(p.shutdownDone)
			defer unregister(p)
			p.factory.Shutdown()
		}()
		<-started
	})
	return p.shutdownDone
}

// CallWithin runs f and returns nil once it returned, or a *StuckError
// naming what (a call into the client under test, such as requests whose
// context ended) and where f's goroutine waits when it has not within d. f
// keeps running in the background.
func CallWithin(what string, d time.Duration, f func()) error {
	done := make(chan struct{})
	id := make(chan int64, 1)
	go func() {
		defer close(done)
		id <- goroutineID()
		f()
	}()
	root := <-id
	if within(done, d) {
		return nil
	}
	e := stuck(what, d, []int64{root})
	for _, g := range parseGoroutines(e.Stuck) {
		if g.id == root {
			e.Culprit = fmt.Sprintf("goroutine %d [%s] in %s", g.id, g.state, g.blockedIn())
		}
	}
	return e
}

// within says whether done is closed within d.
func within(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// stuck builds the StuckError of a call that did not return: the goroutines
// roots are, and every goroutine they started, directly or not.
func stuck(what string, within time.Duration, roots []int64) *StuckError {
	var all bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&all, 2)
	gs := parseGoroutines(all.Bytes())
	family := map[int64]bool{}
	for _, r := range roots {
		family[r] = true
	}
	for changed := true; changed; {
		changed = false
		for _, g := range gs {
			if !family[g.id] && family[g.parent] {
				family[g.id], changed = true, true
			}
		}
	}
	e := &StuckError{What: what, Within: within, All: all.Bytes(), Culprit: "the informer is stuck (no handler call in flight)"}
	var stuck bytes.Buffer
	var handler, other *goroutine
	for i, g := range gs {
		if !family[g.id] {
			continue
		}
		stuck.WriteString(g.text)
		stuck.WriteString("\n\n")
		switch {
		case handler == nil && strings.Contains(g.text, "(*processorListener).run"):
			handler = &gs[i]
		case other == nil && strings.Contains(g.text, "k8s.io/client-go/"):
			other = &gs[i]
		}
	}
	e.Stuck = stuck.Bytes()
	switch {
	case handler != nil:
		e.Culprit = fmt.Sprintf("a handler is stuck: goroutine %d [%s] in %s", handler.id, handler.state, handler.blockedIn())
	case other != nil:
		e.Culprit = fmt.Sprintf("the informer is stuck (no handler call in flight): goroutine %d [%s] in %s", other.id, other.state, other.blockedIn())
	}
	return e
}

// goroutine is one goroutine of a debug=2 dump.
type goroutine struct {
	id, parent int64
	state      string
	text       string
}

var (
	goroutineHeader = regexp.MustCompile(`^goroutine (\d+) (?:gp=\S+ m=\S+ (?:mp=\S+ )?)?\[([^\]]*)\]`)
	createdBy       = regexp.MustCompile(`(?m)^created by .* in goroutine (\d+)$`)
)

func parseGoroutines(dump []byte) []goroutine {
	var gs []goroutine
	for _, block := range strings.Split(strings.TrimSpace(string(dump)), "\n\n") {
		m := goroutineHeader.FindStringSubmatch(block)
		if m == nil {
			continue
		}
		g := goroutine{state: m[2], text: block}
		g.id, _ = strconv.ParseInt(m[1], 10, 64)
		if c := createdBy.FindStringSubmatch(block); c != nil {
			g.parent, _ = strconv.ParseInt(c[1], 10, 64)
		}
		gs = append(gs, g)
	}
	return gs
}

// blockedIn is the innermost frame of g outside the Go runtime and
// standard synchronisation, and outside client-go when another is there:
// where a handler waits; with its file and line.
func (g goroutine) blockedIn() string {
	lines := strings.Split(g.text, "\n")
	var first string
	for i := 1; i+1 < len(lines); i += 2 {
		fn := lines[i]
		if strings.HasPrefix(fn, "created by ") {
			break
		}
		if p := strings.LastIndexByte(fn, '('); p > 0 {
			fn = fn[:p]
		}
		if strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "sync.") || strings.HasPrefix(fn, "internal/") || strings.HasPrefix(fn, "time.") {
			continue
		}
		where := fn + " (" + strings.TrimSpace(strings.Split(strings.TrimSpace(lines[i+1]), " +")[0]) + ")"
		if first == "" {
			first = where
		}
		if !strings.HasPrefix(fn, "k8s.io/") {
			return where
		}
	}
	if first == "" {
		return "the Go runtime"
	}
	return first
}

// goroutineID is the calling goroutine's id, as goroutine dumps name it.
func goroutineID() int64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := strings.Fields(string(buf))
	if len(f) < 2 {
		return 0
	}
	id, _ := strconv.ParseInt(f[1], 10, 64)
	return id
}
