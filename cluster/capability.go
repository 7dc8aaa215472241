package cluster

import "fmt"

// A Capability is what a spec may need of a cluster beyond a kubeconfig:
// its name ("ha": the label capability:ha, what a skip names) and the check
// on a started cluster, next to the interfaces it checks for.
type Capability struct {
	// Name is what a spec asks for and a skip names.
	Name string
	// Has says whether a started cluster has the capability.
	Has func(Cluster) bool
}

// The capabilities a spec can need.
var (
	// CapabilityAPIServerRestart: stop and start each kube-apiserver.
	CapabilityAPIServerRestart = Capability{"apiserver-restart", implements[APIServerController]}
	// CapabilityEtcdCompaction: compact etcd's history.
	CapabilityEtcdCompaction = Capability{"etcd-compaction", implements[EtcdCompactor]}
	// CapabilityEtcdSnapshot: snapshot etcd and restore the snapshot.
	CapabilityEtcdSnapshot = Capability{"etcd-snapshot", implements[EtcdSnapshotter]}
	// CapabilityCertRotation: rotate the serving CA and certificates.
	CapabilityCertRotation = Capability{"cert-rotation", implements[CertRotator]}
	// CapabilityHA: two or more kube-apiservers, each stopped and started
	// on its own.
	CapabilityHA = Capability{"ha", func(c Cluster) bool {
		a, ok := c.(APIServerController)
		return ok && a.NumAPIServers() >= 2
	}}
	// CapabilityAPIServerUpgrade: two or more kube-apiservers, each run at
	// another version in place (a rolling control-plane upgrade).
	CapabilityAPIServerUpgrade = Capability{"apiserver-upgrade", func(c Cluster) bool {
		u, ok := c.(APIServerUpgrader)
		return ok && u.NumAPIServers() >= 2
	}}
)

// Capabilities are every capability a spec can need.
var Capabilities = []Capability{CapabilityAPIServerRestart, CapabilityEtcdCompaction, CapabilityEtcdSnapshot, CapabilityCertRotation, CapabilityHA, CapabilityAPIServerUpgrade}

// CapabilityNamed is the capability of that name.
func CapabilityNamed(name string) (Capability, bool) {
	for _, c := range Capabilities {
		if c.Name == name {
			return c, true
		}
	}
	return Capability{}, false
}

func implements[T any](c Cluster) bool {
	_, ok := c.(T)
	return ok
}

// Lacks is the one check of whether a started cluster fits a spec: what c
// lacks of what spec asks for (its kube-apiservers, its flag profile, its
// etcd links) and of needs, each named as a skip says it; none when it
// fits. A backend's Supports answers before any cluster is started (what
// it can start); Lacks answers for the cluster at hand (one a backend
// shares, or one a caller created: the e2e-framework providers').
func Lacks(c Cluster, spec Spec, needs ...Capability) []string {
	var missing []string
	if spec.APIServers > 1 {
		a, ok := c.(APIServerController)
		if !ok || a.NumAPIServers() < spec.APIServers {
			missing = append(missing, fmt.Sprintf("%d kube-apiservers", spec.APIServers))
		}
	}
	if spec.Profile != "" {
		p, ok := c.(Profiled)
		if !ok || p.ProfileName() != spec.Profile {
			missing = append(missing, "kube-apiserver flag profile "+spec.Profile)
		}
	}
	if spec.EtcdLinks && !HasEtcdLinks(c) {
		missing = append(missing, "a fault proxy between each kube-apiserver and etcd (etcd links)")
	}
	for _, n := range needs {
		if !n.Has(c) {
			missing = append(missing, n.Name)
		}
	}
	return missing
}

// HasEtcdLinks says whether c was started with a fault proxy between each
// kube-apiserver and etcd: an EtcdLinks whose backend can have them (the
// local backend's type always can) answers EtcdLink(0) only then.
func HasEtcdLinks(c Cluster) bool {
	l, ok := c.(EtcdLinks)
	if !ok {
		return false
	}
	_, err := l.EtcdLink(0)
	return err == nil
}
