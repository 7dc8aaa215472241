package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/client-go/features"
)

// gateCatalogue captures the gates client-go declares: it hands them to a
// Registry's Add (features.AddFeaturesToExistingFeatureGates, in every
// client-go the suite supports, v0.31 to v0.37).
type gateCatalogue map[features.Feature]features.FeatureSpec

func (c gateCatalogue) Add(in map[features.Feature]features.FeatureSpec) error {
	maps.Copy(c, in)
	return nil
}

// ClientGoGates is every feature gate of the client-go in use, with its
// value now (features.FeatureGates(): the defaults, the KUBE_FEATURE_<name>
// environment variables, any override in effect) and its default.
func ClientGoGates() (map[string]Gate, error) {
	known := gateCatalogue{}
	if err := features.AddFeaturesToExistingFeatureGates(known); err != nil {
		return nil, fmt.Errorf("list client-go's feature gates: %w", err)
	}
	gates := features.FeatureGates()
	out := make(map[string]Gate, len(known))
	for name, spec := range known {
		out[string(name)] = Gate{Enabled: gates.Enabled(name), Default: spec.Default}
	}
	return out, nil
}

// gatesLine spells the gates for a report: those off their default first,
// then "defaults:" and the rest.
func gatesLine(gates map[string]Gate) string {
	var changed, defaults []string
	for _, name := range slices.Sorted(maps.Keys(gates)) {
		g := gates[name]
		s := fmt.Sprintf("%s=%t", name, g.Enabled)
		if g.Enabled != g.Default {
			changed = append(changed, s)
		} else {
			defaults = append(defaults, s)
		}
	}
	line := "client-go feature gates: "
	if len(changed) > 0 {
		line += "**changed: " + strings.Join(changed, ", ") + "**; "
	}
	return line + "defaults: " + strings.Join(defaults, ", ")
}
