package e2e

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
)

// What is really the process's, not a spec's: client-go's feature gates
// (features/testing's SetFeatureDuringTest sets them for the whole
// process), its metrics hooks (tools/metrics.Register, once per process:
// the rate limiter's tap that a failure's verdict reads), Gomega's fail
// handler (a TestingRun's spec registers its t) and the environment
// (Setenv; the variables the library itself sets go through
// internal/processenv). Two specs changing them at once in one process
// would change them under each other, whatever their front ends.
//
// holdProcess is the one place that hands them out: to one spec at a time.
// The first spec that changes one of them holds them until it ends; the
// same spec again is a no-op; another spec meanwhile fails, naming both.
// Everything else of a spec is its own (its Env, its front end, its
// context), so specs that change none of them could share a process.
//
// Beside it, what the process knows of itself, each with its own lock: the
// test package that called RunSpecs, the client-go the binary was built
// with (learnt once per test package: ClientGoInUse), the warnings said
// once (warnOnce). Nothing else of the harness is package state: the run's
// configuration, hooks and pools are its Harness's, a spec's the Env's.
var process struct {
	mu     sync.Mutex
	holder *processHolder

	// testPackage is the directory of the test package that runs the
	// specs, recorded by RunSpecs; "" when unknown.
	testPackage struct {
		sync.Mutex
		dir string
	}
	// clientGo holds ClientGoInUse's answer (go list runs once per test
	// package directory).
	clientGo struct {
		sync.Mutex
		done bool
		dir  string
		m    ClientGoModule
	}
	// warned are the warnings warnOnce said.
	warned sync.Map
}

// processHolder is the spec that holds the process's state.
type processHolder struct {
	fe FrontEnd
	// what it took first, for the error a second spec gets.
	what string
	// limiter records what client-go's client-side rate limiter held the
	// spec's informers (watchRateLimiter), for its failure's verdict.
	limiter *probe.MetricsTap
}

// holdProcess makes the spec of fe the holder of the process's state for
// what (a gate, a variable, Gomega's fail handler) until the spec ends; it
// fails the spec when another spec of the process holds it.
func holdProcess(fe FrontEnd, what string) *processHolder {
	h, err := tryHoldProcess(fe, what)
	if err != nil {
		fe.Fail(err.Error())
	}
	return h
}

// tryHoldProcess is holdProcess's check: the holder, or an error naming
// both specs. A new holder is released by a clean-up of the spec's.
func tryHoldProcess(fe FrontEnd, what string) (*processHolder, error) {
	process.mu.Lock()
	if h := process.holder; h != nil {
		process.mu.Unlock()
		if sameFrontEnd(h.fe, fe) {
			return h, nil
		}
		return nil, fmt.Errorf("informer-conformance: this spec (artifacts %s) needs %s, which is the process's, but another spec of the process (artifacts %s) holds the process's state for %s: "+
			"scenarios that change client-go's feature gates, its metrics hooks, Gomega's fail handler or the environment run one at a time per process", fe.ArtifactsDir(), what, h.fe.ArtifactsDir(), h.what)
	}
	h := &processHolder{fe: fe, what: what}
	process.holder = h
	process.mu.Unlock()
	// Registered before whatever the spec then changes (a gate's restore,
	// a variable's), so it runs after those are undone.
	fe.DeferCleanup(0, func(context.Context) error {
		releaseProcess(h)
		return nil
	})
	return h, nil
}

// releaseProcess ends h's hold (a later holder's stays).
func releaseProcess(h *processHolder) {
	process.mu.Lock()
	defer process.mu.Unlock()
	if process.holder == h {
		process.holder = nil
	}
}

// sameFrontEnd says whether a and b are one spec's front end (values of a
// type that cannot be compared are never the same).
func sameFrontEnd(a, b FrontEnd) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb || !ta.Comparable() {
		return false
	}
	return a == b
}

// setLimiter records the holder's rate limiter tap (nil: none now).
func (h *processHolder) setLimiter(tap *probe.MetricsTap) {
	process.mu.Lock()
	defer process.mu.Unlock()
	h.limiter = tap
}

// heldLimiterWaits is what the rate limiter held the informers of the spec
// that holds the process so far (nil when not recorded).
func heldLimiterWaits() *report.LimiterWaits {
	process.mu.Lock()
	var tap *probe.MetricsTap
	if h := process.holder; h != nil {
		tap = h.limiter
	}
	process.mu.Unlock()
	if tap == nil {
		return nil
	}
	w := probe.LimiterWaits(tap.Calls())
	return &w
}
