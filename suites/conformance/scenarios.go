package conformance

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"
	gtypes "github.com/onsi/gomega/types"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// The specs of every scenario (scenarios.All): a Describe each, named,
// labelled and decorated from its value, with its tables, single specs and
// negative controls.
var _ = func() bool {
	for _, sc := range scenarios.All() {
		describe(sc)
	}
	return true
}()

// describe declares sc's Describe.
func describe(sc scenarios.Scenario) {
	file, line := sc.Location()
	at := types.CodeLocation{FileName: file, LineNumber: line}
	decorations := append([]any{at, Label(sc.Labels...)}, needsAndSpeed(nil, sc.Speed)...)
	if sc.Disruptive {
		decorations = append(decorations, Disruptive)
	}
	for _, c := range sc.Needs {
		decorations = append(decorations, e2e.CapabilityLabel(c))
	}
	Describe(sc.Name(), append(decorations, func() {
		for _, g := range sc.Groups() {
			if g.Context == "" {
				declare(g.Specs[0], at)
				continue
			}
			Context(g.Context, append(needsAndSpeed(g.Needs, g.Speed), at, func() {
				for _, s := range g.Specs {
					declare(s, at)
				}
			})...)
		}
	})...)
}

// declare declares s: a table, or a single spec (a negative control among
// them).
func declare(s scenarios.Spec, at types.CodeLocation) {
	decorations := append(needsAndSpeed(s.Needs, s.Speed), at)
	if s.Sample {
		decorations = append(decorations, Sample)
	}
	if s.ClientGo != "" {
		decorations = append(decorations, e2e.ClientGo(s.ClientGo))
	}
	if s.Entries != nil {
		body := func(ctx SpecContext, m e2e.SyncMode, run func(context.Context, e2e.Setup, scenarios.Input)) {
			run(ctx, m.Setup(), scenarios.Input{})
		}
		args := append([]any{body}, decorations...)
		for _, e := range s.Entries {
			d := append([]any{at}, needsAndSpeed(nil, e.Speed)...)
			if e.Sample {
				d = append(d, Sample)
			}
			if len(e.Labels) > 0 {
				d = append(d, Label(e.Labels...))
			}
			if e.ClientGo != "" {
				d = append(d, e2e.ClientGo(e.ClientGo))
			}
			if e.KubeAPIServer != "" {
				d = append(d, e2e.KubeAPIServer(e.KubeAPIServer))
			}
			for _, m := range e.ModesOf() {
				if m.Name == "" { // client-go's default mode: no mode in the text, no label
					args = append(args, Entry(e.Name, append([]any{m, e.Run}, d...)...))
					continue
				}
				args = append(args, m.Entry(e.Name, append([]any{e.Run}, d...)...))
			}
		}
		DescribeTable(s.Text, args...)
		return
	}
	setup := e2e.Setup{Client: s.Client}
	if s.Mode.Name != "" {
		setup.Mode = s.Mode
		decorations = append(decorations, s.Mode.Decorations()...)
	}
	if s.Attempts > 1 {
		decorations = append(decorations, FlakeAttempts(s.Attempts))
	}
	if !s.Control() || s.SelfChecked {
		if s.SelfChecked {
			decorations = append(decorations, NegativeControl)
		}
		It(s.Text, append(decorations, func(ctx SpecContext) { s.Run(ctx, setup, scenarios.Input{}) })...)
		return
	}
	It(s.Text, append(append(decorations, NegativeControl), func(ctx SpecContext) {
		err := InterceptGomegaFailure(func() { s.Run(ctx, setup, scenarios.Input{}) })
		var families []gtypes.GomegaMatcher
		for _, f := range s.Fails {
			families = append(families, ContainSubstring(f))
		}
		Expect(err).To(MatchError(Or(families...)), s.Because)
	})...)
}

// needsAndSpeed are the capability and speed labels of needs and speed.
func needsAndSpeed(needs []cluster.Capability, speed scenarios.Speed) []any {
	var d []any
	for _, c := range needs {
		d = append(d, e2e.CapabilityLabel(c))
	}
	switch speed {
	case scenarios.Slow:
		d = append(d, Slow)
	case scenarios.Long:
		d = append(d, Slow, Long)
	}
	return d
}
