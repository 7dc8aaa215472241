package kind

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/informer-conformance/informer-conformance/cluster/profile"
	"github.com/informer-conformance/informer-conformance/fixtures"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cluster/kind -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("rendered:\n%s\nwant (%s):\n%s", got, path, want)
	}
}

// testProfile has flags (one given with "--") and feature gates.
var testProfile = profile.Profile{Name: "test",
	APIServerFlags: map[string]string{"watch-cache": "false", "--goaway-chance": "0.02", "shutdown-watch-termination-grace-period": "2s"},
	FeatureGates:   map[string]bool{"CBORServingAndStorage": true, "WatchList": false}}

// TestConfigWithoutProfile: with no profile the configuration is what it
// was before profiles (no patch of kubeadm's ClusterConfiguration).
func TestConfigWithoutProfile(t *testing.T) {
	cfg, err := renderConfig(true, false, 1, profile.Profile{Name: profile.Default})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "config-own-image.yaml", cfg)
	cfg, err = renderConfig(false, true, 1, profile.Profile{})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "config-published-image-cgroupv1.yaml", cfg)
}

// TestConfigWithProfile: a profile's flags and gates become kube-apiserver
// extraArgs of kubeadm's ClusterConfiguration, one patch for each kubeadm
// API kind writes (v1beta4: a list of names and values; v1beta3: a map),
// the gates as one feature-gates; the result is a kind configuration
// kind's own types read strictly.
func TestConfigWithProfile(t *testing.T) {
	cfg, err := renderConfig(true, false, 1, testProfile)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "config-profile.yaml", cfg)

	var kc v1alpha4.Cluster
	if err := yaml.UnmarshalStrict([]byte(cfg), &kc); err != nil {
		t.Fatalf("kind's v1alpha4.Cluster does not read the configuration: %v", err)
	}
	want := map[string]string{
		"feature-gates": "CBORServingAndStorage=true,WatchList=false", "goaway-chance": "0.02",
		"shutdown-watch-termination-grace-period": "2s", "watch-cache": "false",
	}
	seen := map[string]bool{}
	for _, raw := range kc.KubeadmConfigPatches {
		var patch struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			APIServer  struct {
				ExtraArgs any `json:"extraArgs"`
			} `json:"apiServer"`
		}
		if err := yaml.Unmarshal([]byte(raw), &patch); err != nil {
			t.Fatalf("patch %q: %v", raw, err)
		}
		if patch.Kind != "ClusterConfiguration" {
			continue
		}
		seen[patch.APIVersion] = true
		got := map[string]string{}
		switch args := patch.APIServer.ExtraArgs.(type) {
		case []any: // v1beta4
			if patch.APIVersion != kubeadmV1beta4 {
				t.Errorf("%s patch has a list of extraArgs", patch.APIVersion)
			}
			for _, a := range args {
				m := a.(map[string]any)
				got[m["name"].(string)] = m["value"].(string)
			}
		case map[string]any: // v1beta3
			if patch.APIVersion != kubeadmV1beta3 {
				t.Errorf("%s patch has a map of extraArgs", patch.APIVersion)
			}
			for k, v := range args {
				got[k] = v.(string)
			}
		}
		if !mapsEqual(got, want) {
			t.Errorf("%s patch: extraArgs %v, want %v", patch.APIVersion, got, want)
		}
	}
	if !seen[kubeadmV1beta4] || !seen[kubeadmV1beta3] {
		t.Errorf("patches of ClusterConfiguration for %v, want %s and %s", seen, kubeadmV1beta4, kubeadmV1beta3)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestManagedFlagsRefused: a profile setting a flag kubeadm wires fails
// Start before Docker is asked anything, naming the flag and why; every
// shipped profile passes.
func TestManagedFlagsRefused(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no docker: the refusal must come first
	for flag, why := range map[string]string{
		"etcd-servers": "kubeadm runs etcd", "client-ca-file": "kubeadm owns the CA",
		"--secure-port": "kind publishes", "authorization-mode": "RBAC", "feature-gates": "featureGates field",
	} {
		p := profile.Profile{Name: "bad", APIServerFlags: map[string]string{flag: "x"}}
		_, err := Start(context.Background(), Options{Profile: p})
		name := "--" + strings.TrimPrefix(flag, "--")
		if err == nil || !strings.Contains(err.Error(), "flag "+name+" cannot be set by a profile") || !strings.Contains(err.Error(), why) {
			t.Errorf("profile with %s: %v; want it refused because %s", flag, err, why)
		}
	}
	for _, name := range fixtures.ProfileNames() {
		p, err := profile.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(managedFlags); err != nil {
			t.Errorf("shipped profile %s on kind: %v", name, err)
		}
	}
	combined, err := profile.Load("fast-graceful-shutdown+no-watch-cache+cbor")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := renderConfig(true, false, 1, combined); err != nil {
		t.Error(err)
	}
}

// TestMissingFlags: Start's check of kube-apiserver's static pod manifest
// finds a flag kubeadm did not take, or took with another value; its
// negative control is a manifest with every flag.
func TestMissingFlags(t *testing.T) {
	manifest := `apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - name: kube-apiserver
    command:
    - kube-apiserver
    - --advertise-address=172.18.0.2
    - --feature-gates=CBORServingAndStorage=true,WatchList=false
    - --goaway-chance=0.02
    - --watch-cache=true
`
	flags := testProfile.Flags()
	got := missingFlags([]byte(manifest), flags)
	want := []string{"--shutdown-watch-termination-grace-period=2s", "--watch-cache=false"}
	if !slices.Equal(got, want) {
		t.Errorf("missing %q, want %q", got, want)
	}
	full := strings.Replace(manifest, "--watch-cache=true", "--watch-cache=false\n    - --shutdown-watch-termination-grace-period=2s", 1)
	if got := missingFlags([]byte(full), flags); len(got) != 0 {
		t.Errorf("a manifest with every flag: missing %q", got)
	}
	if got := missingFlags([]byte("not: [a pod"), flags); len(got) != len(flags) {
		t.Errorf("an unreadable manifest: missing %q, want all %d", got, len(flags))
	}
}
