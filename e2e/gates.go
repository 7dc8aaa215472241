package e2e

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
)

// gateCatalogue captures the gates client-go declares: it hands them to a
// Registry's Add (features.AddFeaturesToExistingFeatureGates, in every
// client-go the suite supports, v0.31 to v0.37).
type gateCatalogue map[features.Feature]features.FeatureSpec

func (c gateCatalogue) Add(in map[features.Feature]features.FeatureSpec) error {
	maps.Copy(c, in)
	return nil
}

// knownGates is every gate the client-go in use declares, with its spec
// (default, pre-release stage, locked or not).
func knownGates() (gateCatalogue, error) {
	known := gateCatalogue{}
	if err := features.AddFeaturesToExistingFeatureGates(known); err != nil {
		return nil, fmt.Errorf("list client-go's feature gates: %w", err)
	}
	return known, nil
}

// ClientGoGates is every feature gate of the client-go in use, with its
// value now (features.FeatureGates(): the defaults, the KUBE_FEATURE_<name>
// environment variables, any override in effect) and its default.
func ClientGoGates() (map[string]Gate, error) {
	known, err := knownGates()
	if err != nil {
		return nil, err
	}
	gates := features.FeatureGates()
	out := make(map[string]Gate, len(known))
	for name, spec := range known {
		out[string(name)] = Gate{Enabled: gates.Enabled(name), Default: spec.Default}
	}
	return out, nil
}

// UseClientGoGate sets client-go's feature gate name to value for the rest
// of the current spec (features/testing SetFeatureDuringTest: restored
// after it), and records it in the spec's report. By name, since the suite
// compiles against client-go versions that lack newer gates: where this
// client-go has no such gate, or has it locked to its default (a GA gate,
// LockToDefault) at the other value, the spec skips, saying so.
func UseClientGoGate(ctx context.Context, name string, value bool) {
	useClientGoGate(FrontEndOf(ctx), name, value)
}

// useClientGoGate is UseClientGoGate for the spec of fe, which holds the
// process's state for it (client-go's gates are the process's:
// holdProcess).
func useClientGoGate(fe FrontEnd, name string, value bool) {
	known, err := knownGates()
	if err != nil {
		fe.Fail(err.Error())
	}
	spec, ok := known[features.Feature(name)]
	switch {
	case !ok:
		fe.Skip(fmt.Sprintf("%s has no %s gate", ClientGoName(), name))
	case spec.LockToDefault && spec.Default != value:
		fe.Skip(fmt.Sprintf("%s has %s locked to %t (%s)", ClientGoName(), name, spec.Default, spec.PreRelease))
	}
	setGate(fe, features.Feature(name), value)
	fe.AddReportEntry("client-go gate set by the spec", fmt.Sprintf("%s=%t", name, value))
}

// setGate sets client-go's gate for the rest of the spec of fe, which
// holds the process's state for it.
func setGate(fe FrontEnd, gate features.Feature, value bool) {
	holdProcess(fe, "client-go's feature gate "+string(gate))
	clientfeaturestesting.SetFeatureDuringTest(fe.TB(), gate, value)
}

// ClientGoGate is the value of client-go's gate name now, and whether this
// client-go has it.
func ClientGoGate(name string) (enabled, known bool) {
	gates, err := ClientGoGates()
	if err != nil {
		return false, false
	}
	g, ok := gates[name]
	return g.Enabled, ok
}
