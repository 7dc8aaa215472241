package e2e

import (
	"github.com/onsi/ginkgo/v2"

	"github.com/informer-conformance/informer-conformance/cluster"
)

// A Capability is what a spec needs of the backend beyond a kubeconfig: a
// cluster.Capability (its name and its check on a started cluster, next
// to the cluster interfaces it checks for) with the label a spec asks for
// it with ("capability:<name>"). A spec whose cluster lacks one is
// skipped, naming it (startCluster, through cluster.Lacks).
type Capability struct{ cluster.Capability }

// capabilityLabelPrefix starts every capability label.
const capabilityLabelPrefix = "capability:"

// Label is the Ginkgo label that asks for c.
func (c Capability) Label() ginkgo.Labels { return CapabilityLabel(c.Capability) }

// CapabilityLabel is the Ginkgo label that asks for c.
func CapabilityLabel(c cluster.Capability) ginkgo.Labels {
	return ginkgo.Label(capabilityLabelPrefix + c.Name)
}

// The capabilities a spec can ask for: cluster.Capabilities, each with
// its label (what each is: its cluster.Capability's comment).
var (
	CapabilityAPIServerRestart = Capability{cluster.CapabilityAPIServerRestart}
	CapabilityEtcdCompaction   = Capability{cluster.CapabilityEtcdCompaction}
	CapabilityEtcdSnapshot     = Capability{cluster.CapabilityEtcdSnapshot}
	CapabilityCertRotation     = Capability{cluster.CapabilityCertRotation}
	CapabilityHA               = Capability{cluster.CapabilityHA}
	CapabilityAPIServerUpgrade = Capability{cluster.CapabilityAPIServerUpgrade}
)
