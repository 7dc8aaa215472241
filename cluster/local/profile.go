package local

import (
	"fmt"

	"github.com/informer-conformance/informer-conformance/cluster/profile"
)

// Profile is a kube-apiserver flag profile (package cluster/profile: what
// every backend reads); the local backend puts its flags and feature gates
// on the kube-apiserver command line it builds, over its own defaults.
type Profile = profile.Profile

// managedFlags are set by the backend and may not come from a profile
// (the flags no backend takes from a profile, feature-gates among them,
// are refused by profile.Profile.Validate itself).
var managedFlags = profile.Managed{
	"etcd-servers": "the backend starts etcd", "etcd-cafile": "the backend issues etcd certificates",
	"etcd-certfile": "the backend issues etcd certificates", "etcd-keyfile": "the backend issues etcd certificates",
	"bind-address": "the backend binds 127.0.0.1", "secure-port": "the backend allocates ports",
	"advertise-address": "the backend binds 127.0.0.1", "tls-cert-file": "the backend issues serving certificates",
	"tls-private-key-file": "the backend issues serving certificates", "client-ca-file": "the backend owns the CA",
	"service-account-key-file": "the backend issues the service-account key", "service-account-signing-key-file": "the backend issues the service-account key",
	"cert-dir": "the backend owns the work directory",
}

// validateProfile checks p's shape and that it sets none of the flags the
// local backend wires itself.
func validateProfile(p Profile) error { return p.Validate(managedFlags) }

// ParseProfile reads a profile from YAML (profile.Parse), rejecting unknown
// fields and the flags the local backend sets itself.
func ParseProfile(data []byte) (Profile, error) {
	p, err := profile.Parse(data)
	if err != nil {
		return Profile{}, err
	}
	return p, validateProfile(p)
}

// LoadProfile returns a profile by name (profile.Load: a name of
// fixtures/profiles, a file, or names joined by "+", combined in order),
// rejecting the flags the local backend sets itself.
func LoadProfile(name string) (Profile, error) {
	p, err := profile.Load(name)
	if err != nil {
		return Profile{}, err
	}
	if err := validateProfile(p); err != nil {
		return Profile{}, fmt.Errorf("profile %s: %w", name, err)
	}
	return p, nil
}
