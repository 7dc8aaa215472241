package e2e

import (
	"github.com/onsi/ginkgo/v2"

	"github.com/informer-conformance/informer-conformance/cluster"
)

// A Capability is what a spec needs of the backend beyond a kubeconfig:
// one definition carries its name, the check on a started cluster and the
// label a spec asks for it with ("capability:<name>"). A spec whose backend
// lacks one is skipped, naming it (startCluster).
type Capability struct {
	// Name is the label's suffix and what a skip names.
	Name string
	// Has says whether a started cluster has the capability.
	Has func(cluster.Cluster) bool
}

// capabilityLabelPrefix starts every capability label.
const capabilityLabelPrefix = "capability:"

// Label is the Ginkgo label that asks for c.
func (c Capability) Label() ginkgo.Labels { return ginkgo.Label(capabilityLabelPrefix + c.Name) }

// The capabilities a spec can ask for.
var (
	// CapabilityAPIServerRestart: stop and start each kube-apiserver.
	CapabilityAPIServerRestart = Capability{"apiserver-restart", implements[cluster.APIServerController]}
	// CapabilityEtcdCompaction: compact etcd's history.
	CapabilityEtcdCompaction = Capability{"etcd-compaction", implements[cluster.EtcdCompactor]}
	// CapabilityEtcdSnapshot: snapshot etcd and restore the snapshot.
	CapabilityEtcdSnapshot = Capability{"etcd-snapshot", implements[cluster.EtcdSnapshotter]}
	// CapabilityCertRotation: rotate the serving CA and certificates.
	CapabilityCertRotation = Capability{"cert-rotation", implements[cluster.CertRotator]}
	// CapabilityHA: two or more kube-apiservers, each stopped and started
	// on its own.
	CapabilityHA = Capability{"ha", func(c cluster.Cluster) bool {
		a, ok := c.(cluster.APIServerController)
		return ok && a.NumAPIServers() >= 2
	}}
	// CapabilityAPIServerUpgrade: two or more kube-apiservers, each run at
	// another version in place (a rolling control-plane upgrade).
	CapabilityAPIServerUpgrade = Capability{"apiserver-upgrade", func(c cluster.Cluster) bool {
		u, ok := c.(cluster.APIServerUpgrader)
		return ok && u.NumAPIServers() >= 2
	}}
)

var capabilities = []Capability{CapabilityAPIServerRestart, CapabilityEtcdCompaction, CapabilityEtcdSnapshot, CapabilityCertRotation, CapabilityHA, CapabilityAPIServerUpgrade}

// capabilityNamed is the capability a label names.
func capabilityNamed(name string) (Capability, bool) {
	for _, c := range capabilities {
		if c.Name == name {
			return c, true
		}
	}
	return Capability{}, false
}

func implements[T any](c cluster.Cluster) bool {
	_, ok := c.(T)
	return ok
}
