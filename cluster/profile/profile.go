// Package profile is the kube-apiserver flag profile every backend reads: a
// named set of extra flags and feature gates (fixtures/profiles/*.yaml, or
// built in code), parsed, checked for shape and combined ("a+b") here. How
// a profile reaches kube-apiserver is each backend's own (the local backend
// on the command line it builds, the kind backend through kubeadm's
// configuration), and so is the list of flags it refuses: those it wires
// itself (Managed, passed to Validate).
//
// Plain Go that returns errors; it imports no backend (make verify checks).
package profile

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/informer-conformance/informer-conformance/fixtures"
)

// Profile is a named set of extra kube-apiserver flags and feature gates,
// loaded from fixtures/profiles or built in code. Flags the backend wires
// itself (addresses, certificates, etcd) cannot be set; anything else the
// binary accepts can, and overrides the backend's defaults.
type Profile struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// APIServerFlags maps flag names (with or without "--") to values.
	APIServerFlags map[string]string `json:"apiServerFlags,omitempty"`
	// FeatureGates are passed as --feature-gates.
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}

// Default is the profile of the backend's own flags
// (fixtures/profiles/default.yaml: no flags, no gates), as "" is.
const Default = "default"

// Managed maps the names of the kube-apiserver flags a backend sets itself
// to why a profile may not set them.
type Managed map[string]string

// refused are the flags no profile may set, whatever the backend.
var refused = Managed{
	"feature-gates": "use the profile's featureGates field",
	"kubeconfig":    "not used by kube-apiserver",
	"help":          "not a server flag",
	"version":       "not a server flag",
}

var flagName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
var gateName = regexp.MustCompile(`^[A-Za-z0-9]+$`)

// Validate checks the profile's shape and that it sets none of the flags
// managed (a backend's own) nor those no backend takes from a profile.
// Whether the binary knows a flag or a gate is found when it starts: an
// unknown one makes kube-apiserver exit, and the backend's start says so.
func (p Profile) Validate(managed Managed) error {
	var errs []string
	for _, k := range slices.Sorted(maps.Keys(p.APIServerFlags)) {
		name := strings.TrimPrefix(k, "--")
		why := refused[name]
		if why == "" {
			why = managed[name]
		}
		switch {
		case !flagName.MatchString(name):
			errs = append(errs, fmt.Sprintf("%q is not a flag name (want e.g. min-request-timeout)", k))
		case why != "":
			errs = append(errs, fmt.Sprintf("flag --%s cannot be set by a profile: %s", name, why))
		}
	}
	for _, g := range slices.Sorted(maps.Keys(p.FeatureGates)) {
		if !gateName.MatchString(g) {
			errs = append(errs, fmt.Sprintf("%q is not a feature gate name", g))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("profile %q: %s", p.Name, strings.Join(errs, "; "))
	}
	return nil
}

// Flags are the profile's kube-apiserver flags, names without "--", with
// its feature gates as feature-gates (FeatureGatesValue); nil if it has
// neither.
func (p Profile) Flags() map[string]string {
	var flags map[string]string
	for k, v := range p.APIServerFlags {
		if flags == nil {
			flags = map[string]string{}
		}
		flags[strings.TrimPrefix(k, "--")] = v
	}
	if len(p.FeatureGates) > 0 {
		if flags == nil {
			flags = map[string]string{}
		}
		flags["feature-gates"] = p.FeatureGatesValue()
	}
	return flags
}

// FeatureGatesValue is the value of --feature-gates for the profile's
// gates: Name=true|false, sorted by name, comma-separated ("" for none).
func (p Profile) FeatureGatesValue() string {
	var gates []string
	for _, g := range slices.Sorted(maps.Keys(p.FeatureGates)) {
		gates = append(gates, fmt.Sprintf("%s=%t", g, p.FeatureGates[g]))
	}
	return strings.Join(gates, ",")
}

// Args renders the profile as kube-apiserver arguments (--name=value,
// sorted by name) over defaults: its flags override them, its feature
// gates are --feature-gates.
func (p Profile) Args(defaults map[string]string) []string {
	flags := maps.Clone(defaults)
	if flags == nil {
		flags = map[string]string{}
	}
	maps.Copy(flags, p.Flags())
	var args []string
	for _, k := range slices.Sorted(maps.Keys(flags)) {
		args = append(args, "--"+k+"="+flags[k])
	}
	return args
}

// Parse reads a profile from YAML, rejecting unknown fields, and checks
// its shape (Validate with no backend's flags).
func Parse(data []byte) (Profile, error) {
	var p Profile
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return Profile{}, fmt.Errorf("parse profile: %w", err)
	}
	return p, p.Validate(nil)
}

// Load returns a profile by name from fixtures/profiles (e.g.
// "no-watch-cache"), or from a file when name contains a path separator or
// ends in .yaml. Names joined by "+" (e.g.
// "fast-graceful-shutdown+no-watch-cache") combine those profiles in order,
// a later one's flags and feature gates overriding an earlier one's. The
// result's shape is checked (Validate with no backend's flags): a backend
// checks its own.
func Load(name string) (Profile, error) {
	parts := strings.Split(name, "+")
	if isFile(name) || len(parts) == 1 {
		return loadOne(name)
	}
	combined := Profile{Name: name}
	var descriptions []string
	for _, part := range parts {
		p, err := loadOne(part)
		if err != nil {
			return Profile{}, err
		}
		if p.Description != "" {
			descriptions = append(descriptions, strings.TrimSpace(p.Description))
		}
		for k, v := range p.APIServerFlags {
			if combined.APIServerFlags == nil {
				combined.APIServerFlags = map[string]string{}
			}
			combined.APIServerFlags[strings.TrimPrefix(k, "--")] = v
		}
		for g, on := range p.FeatureGates {
			if combined.FeatureGates == nil {
				combined.FeatureGates = map[string]bool{}
			}
			combined.FeatureGates[g] = on
		}
	}
	combined.Description = strings.Join(descriptions, " ")
	return combined, combined.Validate(nil)
}

func isFile(name string) bool {
	return strings.ContainsRune(name, os.PathSeparator) || strings.HasSuffix(name, ".yaml")
}

// loadOne is Load for one name or file.
func loadOne(name string) (Profile, error) {
	var data []byte
	var err error
	if isFile(name) {
		data, err = os.ReadFile(name)
	} else {
		data, err = fixtures.Profile(name)
	}
	if err != nil {
		return Profile{}, fmt.Errorf("load profile %q (known: %s): %w", name, strings.Join(fixtures.ProfileNames(), ", "), err)
	}
	p, err := Parse(data)
	if err != nil {
		return Profile{}, fmt.Errorf("profile %s: %w", name, err)
	}
	if p.Name == "" {
		p.Name = name
	}
	return p, nil
}
