package cluster

import (
	"context"
	"slices"
	"testing"

	"k8s.io/client-go/rest"
)

type bare struct{}

func (bare) Name() string                          { return "bare" }
func (bare) RESTConfig(User) (*rest.Config, error) { return &rest.Config{}, nil }
func (bare) KubeconfigPath(User) (string, error)   { return "", nil }
func (bare) ArtifactsDir() string                  { return "" }
func (bare) Close(context.Context) error           { return nil }
func (bare) APIServerAddrs() []string              { return nil }
func (bare) RESTConfigFor(User, string) (*rest.Config, error) {
	return &rest.Config{}, nil
}

type twoAPIServers struct {
	bare
	APIServerController
}

func (twoAPIServers) NumAPIServers() int  { return 2 }
func (twoAPIServers) ProfileName() string { return "goaway" }

// TestLacks: what a cluster lacks of a spec and of capabilities, named as a
// skip says it; nothing for one that fits.
func TestLacks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     Cluster
		spec  Spec
		needs []Capability
		want  []string
	}{
		{"bare, nothing asked", bare{}, Spec{}, nil, nil},
		{"bare, HA asked", bare{}, Spec{APIServers: 2, Profile: "goaway", EtcdLinks: true}, []Capability{CapabilityHA, CapabilityEtcdCompaction},
			[]string{"2 kube-apiservers", "kube-apiserver flag profile goaway", "a fault proxy between each kube-apiserver and etcd (etcd links)", "ha", "etcd-compaction"}},
		{"two apiservers fit", twoAPIServers{}, Spec{APIServers: 2, Profile: "goaway"}, []Capability{CapabilityHA, CapabilityAPIServerRestart}, nil},
		{"two apiservers, another profile", twoAPIServers{}, Spec{APIServers: 3, Profile: "no-watch-cache"}, []Capability{CapabilityAPIServerUpgrade},
			[]string{"3 kube-apiservers", "kube-apiserver flag profile no-watch-cache", "apiserver-upgrade"}},
	} {
		if got := Lacks(tc.c, tc.spec, tc.needs...); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, c := range Capabilities {
		if got, ok := CapabilityNamed(c.Name); !ok || got.Name != c.Name {
			t.Errorf("CapabilityNamed(%q) = %v, %v", c.Name, got, ok)
		}
	}
	if _, ok := CapabilityNamed("teleport"); ok {
		t.Error("CapabilityNamed knows an unknown name")
	}
}
