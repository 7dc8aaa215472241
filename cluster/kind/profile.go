package kind

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/informer-conformance/informer-conformance/cluster/profile"
)

// managedFlags are the kube-apiserver flags kubeadm sets from what kind and
// this backend configure, which a profile may not set: the addresses kind
// publishes, the certificates and keys kubeadm issues (this backend issues
// the test user's certificate from the node's CA and reaches etcd with the
// apiserver's client certificate), etcd, and the authentication and
// authorization the test user's least privilege rests on (k8s.io/kubernetes
// cmd/kubeadm/app/phases/controlplane/manifests.go, getAPIServerCommand,
// v1.36). kubeadm's other defaults (enable-admission-plugins,
// allow-privileged, kubelet-preferred-address-types) a profile may
// override, as it overrides the local backend's.
var managedFlags = profile.Managed{
	"advertise-address": "kubeadm advertises the node's address", "bind-address": "kubeadm binds the node's address",
	"secure-port": "kind publishes kubeadm's port", "cert-dir": "kubeadm owns /etc/kubernetes/pki",
	"etcd-servers": "kubeadm runs etcd on the node", "etcd-cafile": "kubeadm issues etcd certificates",
	"etcd-certfile": "kubeadm issues etcd certificates", "etcd-keyfile": "kubeadm issues etcd certificates",
	"tls-cert-file": "kubeadm issues serving certificates", "tls-private-key-file": "kubeadm issues serving certificates",
	"client-ca-file":             "kubeadm owns the CA (the test user's certificate is issued from it)",
	"kubelet-client-certificate": "kubeadm issues the kubelet client certificate", "kubelet-client-key": "kubeadm issues the kubelet client certificate",
	"requestheader-client-ca-file": "kubeadm owns the front-proxy CA", "requestheader-allowed-names": "kubeadm issues the front-proxy client certificate",
	"requestheader-username-headers": "kubeadm wires the front proxy", "requestheader-group-headers": "kubeadm wires the front proxy",
	"requestheader-extra-headers-prefix": "kubeadm wires the front proxy",
	"proxy-client-cert-file":             "kubeadm issues the front-proxy client certificate", "proxy-client-key-file": "kubeadm issues the front-proxy client certificate",
	"service-account-key-file": "kubeadm issues the service-account key", "service-account-signing-key-file": "kubeadm issues the service-account key",
	"service-account-issuer":      "kubeadm sets the issuer of the cluster's domain",
	"service-cluster-ip-range":    "kind sets the service subnet (networking.serviceSubnet)",
	"enable-bootstrap-token-auth": "kind joins nodes with kubeadm's bootstrap tokens",
	"authorization-mode":          "kubeadm wires Node,RBAC (the test user's least privilege is RBAC)", "authorization-config": "kubeadm wires Node,RBAC (the test user's least privilege is RBAC)",
}

// kubeadm's configuration API versions kind writes (kind v0.33.0
// pkg/cluster/internal/kubeadm/config.go, Config): v1beta4 from Kubernetes
// 1.36 (the node image make kind-image builds), v1beta3 from 1.23 (a
// published older kindest/node).
const (
	kubeadmV1beta4 = "kubeadm.k8s.io/v1beta4"
	kubeadmV1beta3 = "kubeadm.k8s.io/v1beta3"
)

// extraArg is one of kubeadm v1beta4's extraArgs: a list of names and
// values (v1beta3's is a map of names to values).
type extraArg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// apiServerPatch is the body of a kind kubeadmConfigPatch of kubeadm's
// ClusterConfiguration: only what the profile adds to kube-apiserver.
type apiServerPatch struct {
	APIServer struct {
		ExtraArgs any `json:"extraArgs"`
	} `json:"apiServer"`
}

// profilePatches renders p as kind kubeadmConfigPatches: kube-apiserver's
// extraArgs in kubeadm's ClusterConfiguration, its feature gates as
// feature-gates there (for kube-apiserver only: kind's own featureGates
// field would give them to every component, the kubelet's and
// kube-proxy's configurations included, while a profile is
// kube-apiserver's). One patch per kubeadm API version kind may write,
// each naming its apiVersion, so kind applies the one that matches what
// it generated. kind merges a v1beta4 patch's extraArgs into its own by
// name (v0.33.0 pkg/internal/patch/kubeadm_merge.go, mergeExtraArgs:
// runtime-config and the others it sets are kept), and a v1beta3 patch's
// map by JSON merge patch. A profile's feature-gates replaces the one kind
// gives kube-apiserver from its featureGates field, which this backend
// leaves empty (kind fills in KubeletInUserNamespace on rootless Docker, a
// kubelet gate the kubelet still gets). None for a profile without flags
// or gates.
func profilePatches(p profile.Profile) ([]string, error) {
	flags := p.Flags()
	if len(flags) == 0 {
		return nil, nil
	}
	names := slices.Sorted(maps.Keys(flags))
	var list []extraArg
	for _, n := range names {
		list = append(list, extraArg{Name: n, Value: flags[n]})
	}
	var patches []string
	for _, v := range []struct {
		apiVersion string
		extraArgs  any
	}{{kubeadmV1beta4, list}, {kubeadmV1beta3, flags}} {
		var patch apiServerPatch
		patch.APIServer.ExtraArgs = v.extraArgs
		b, err := yaml.Marshal(patch)
		if err != nil {
			return nil, fmt.Errorf("render profile %s for kubeadm %s: %w", p.Name, v.apiVersion, err)
		}
		patches = append(patches, "apiVersion: "+v.apiVersion+"\nkind: ClusterConfiguration\n"+string(b))
	}
	return patches, nil
}

// apiServerManifest is where kubeadm writes kube-apiserver's static pod.
const apiServerManifest = "/etc/kubernetes/manifests/kube-apiserver.yaml"

// checkProfile reads kube-apiserver's static pod manifest on the node and
// fails, naming them, if any of the profile's flags is not on its command
// line as the profile sets it: kind skips a patch whose apiVersion matches
// nothing it generated, without a word.
func (c *Cluster) checkProfile(ctx context.Context) error {
	flags := c.profile.Flags()
	if len(flags) == 0 {
		return nil
	}
	raw, err := c.readNodeFile(ctx, apiServerManifest)
	if err != nil {
		return fmt.Errorf("check profile %s: %w", c.profile.Name, err)
	}
	missing := missingFlags(raw, flags)
	if len(missing) > 0 {
		return fmt.Errorf("kind cluster %s: kube-apiserver runs without the flags of profile %s: %s (kubeadm's configuration did not take the profile's patch: is the node image's kubeadm API older than %s?)",
			c.name, c.profile.Name, strings.Join(missing, " "), kubeadmV1beta3)
	}
	return nil
}

// missingFlags are the --name=value of flags that the kube-apiserver
// container of the static pod manifest raw is not started with (all of
// them if raw is no such pod).
func missingFlags(raw []byte, flags map[string]string) []string {
	var pod corev1.Pod
	var args []string
	if err := yaml.Unmarshal(raw, &pod); err == nil {
		for _, ct := range pod.Spec.Containers {
			if ct.Name == "kube-apiserver" {
				args = append(slices.Clone(ct.Command), ct.Args...)
			}
		}
	}
	var missing []string
	for _, n := range slices.Sorted(maps.Keys(flags)) {
		if want := "--" + n + "=" + flags[n]; !slices.Contains(args, want) {
			missing = append(missing, want)
		}
	}
	return missing
}

// ProfileName implements cluster.Profiled: the name of the flag profile
// the cluster's kube-apiserver runs with ("" for kubeadm's flags only).
func (c *Cluster) ProfileName() string { return c.profile.Name }
