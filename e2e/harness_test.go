package e2e

import (
	"testing"

	"github.com/informer-conformance/informer-conformance/probe"
)

// ownHarnessFrontEnd is a front end that brings its own harness.
type ownHarnessFrontEnd struct {
	ginkgoFrontEnd
	h *Harness
}

func (f ownHarnessFrontEnd) Harness() *Harness { return f.h }

// TestFrontEndBringsItsOwnHarness: an Env takes its harness from a front
// end that brings one (HarnessCarrier), with that harness's hooks, and the
// process's otherwise; the process's hooks do not reach it.
func TestFrontEndBringsItsOwnHarness(t *testing.T) {
	own := NewHarness(func(string) string { return "" })
	own.SetHooks(Hooks{Informers: func(probe.SourceInput) (probe.Source, error) { return nil, nil }, InformersName: "its-own-cache"})
	fe := ownHarnessFrontEnd{h: own}
	if harnessOf(fe) != own {
		t.Fatal("an Env of a front end with its own harness runs on the process's")
	}
	if harnessOf(ginkgoFrontEnd{}) != theHarness || harnessOf(ownHarnessFrontEnd{}) != theHarness {
		t.Error("a front end without a harness of its own runs on the process's")
	}
	e := &Env{fe: fe, h: harnessOf(fe)}
	if got := e.InformerSource(); got != "its-own-cache" {
		t.Errorf("the Env's informer source %q, want its front end's harness's hooks' (its-own-cache)", got)
	}
	if got := InformerSource(); got != "" {
		t.Errorf("the process's informer source %q: the front end's hooks leaked into the process's harness", got)
	}
}
