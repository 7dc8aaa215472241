package local

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

// managedFlags are set by the backend and may not come from a profile.
var managedFlags = map[string]string{
	"etcd-servers": "the backend starts etcd", "etcd-cafile": "the backend issues etcd certificates",
	"etcd-certfile": "the backend issues etcd certificates", "etcd-keyfile": "the backend issues etcd certificates",
	"bind-address": "the backend binds 127.0.0.1", "secure-port": "the backend allocates ports",
	"advertise-address": "the backend binds 127.0.0.1", "tls-cert-file": "the backend issues serving certificates",
	"tls-private-key-file": "the backend issues serving certificates", "client-ca-file": "the backend owns the CA",
	"service-account-key-file": "the backend issues the service-account key", "service-account-signing-key-file": "the backend issues the service-account key",
	"cert-dir": "the backend owns the work directory", "feature-gates": "use the profile's featureGates field",
	"kubeconfig": "not used by kube-apiserver", "help": "not a server flag", "version": "not a server flag",
}

var flagName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
var gateName = regexp.MustCompile(`^[A-Za-z0-9]+$`)

// Validate checks the profile's shape. Whether the binary knows a flag or a
// gate is found when it starts: an unknown one makes kube-apiserver exit and
// Start returns its message.
func (p Profile) Validate() error {
	var errs []string
	for _, k := range slices.Sorted(maps.Keys(p.APIServerFlags)) {
		name := strings.TrimPrefix(k, "--")
		switch {
		case !flagName.MatchString(name):
			errs = append(errs, fmt.Sprintf("%q is not a flag name (want e.g. min-request-timeout)", k))
		case managedFlags[name] != "":
			errs = append(errs, fmt.Sprintf("flag --%s cannot be set by a profile: %s", name, managedFlags[name]))
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

// apply renders the profile as kube-apiserver flags (--name=value, sorted),
// its flags overriding defaults and its feature gates as --feature-gates.
func (p Profile) apply(defaults map[string]string) []string {
	flags := maps.Clone(defaults)
	for k, v := range p.APIServerFlags {
		flags[strings.TrimPrefix(k, "--")] = v
	}
	if len(p.FeatureGates) > 0 {
		var gates []string
		for _, g := range slices.Sorted(maps.Keys(p.FeatureGates)) {
			gates = append(gates, fmt.Sprintf("%s=%t", g, p.FeatureGates[g]))
		}
		flags["feature-gates"] = strings.Join(gates, ",")
	}
	var args []string
	for _, k := range slices.Sorted(maps.Keys(flags)) {
		args = append(args, "--"+k+"="+flags[k])
	}
	return args
}

// ParseProfile reads a profile from YAML, rejecting unknown fields.
func ParseProfile(data []byte) (Profile, error) {
	var p Profile
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return Profile{}, fmt.Errorf("parse profile: %w", err)
	}
	return p, p.Validate()
}

// LoadProfile returns a profile by name from fixtures/profiles (e.g.
// "no-watch-cache"), or from a file when name contains a path separator or
// ends in .yaml. Names joined by "+" (e.g.
// "fast-graceful-shutdown+no-watch-cache") combine those profiles in order,
// a later one's flags and feature gates overriding an earlier one's.
func LoadProfile(name string) (Profile, error) {
	parts := strings.Split(name, "+")
	if isProfileFile(name) || len(parts) == 1 {
		return loadProfile(name)
	}
	combined := Profile{Name: name}
	var descriptions []string
	for _, part := range parts {
		p, err := loadProfile(part)
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
	return combined, combined.Validate()
}

func isProfileFile(name string) bool {
	return strings.ContainsRune(name, os.PathSeparator) || strings.HasSuffix(name, ".yaml")
}

// loadProfile is LoadProfile for one name or file.
func loadProfile(name string) (Profile, error) {
	var data []byte
	var err error
	if isProfileFile(name) {
		data, err = os.ReadFile(name)
	} else {
		data, err = fixtures.Profile(name)
	}
	if err != nil {
		return Profile{}, fmt.Errorf("load profile %q (known: %s): %w", name, strings.Join(fixtures.ProfileNames(), ", "), err)
	}
	p, err := ParseProfile(data)
	if err != nil {
		return Profile{}, fmt.Errorf("profile %s: %w", name, err)
	}
	if p.Name == "" {
		p.Name = name
	}
	return p, nil
}
