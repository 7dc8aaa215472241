package kind

import (
	"strings"
	"testing"
)

// A kubeadm v1.36 etcd manifest, as on a kind node (trimmed).
const kubeadmEtcdManifest = `apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  containers:
  - command:
    - etcd
    - --advertise-client-urls=https://172.18.0.2:2379
    - --data-dir=/var/lib/etcd
    - --initial-advertise-peer-urls=https://172.18.0.2:2380
    - --initial-cluster=ic-1a2b-control-plane=https://172.18.0.2:2380
    - --name=ic-1a2b-control-plane
    image: registry.k8s.io/etcd:3.6.8-0
    name: etcd
`

func TestEtcdFlags(t *testing.T) {
	flags, err := etcdFlags(kubeadmEtcdManifest)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"name":                        "ic-1a2b-control-plane",
		"initial-cluster":             "ic-1a2b-control-plane=https://172.18.0.2:2380",
		"initial-advertise-peer-urls": "https://172.18.0.2:2380",
		"data-dir":                    "/var/lib/etcd",
	}
	for k, v := range want {
		if flags[k] != v {
			t.Errorf("--%s = %q, want %q", k, flags[k], v)
		}
	}
	if m := etcdImageRE.FindStringSubmatch(kubeadmEtcdManifest); m == nil || m[1] != "registry.k8s.io/etcd:3.6.8-0" {
		t.Errorf("etcd image = %v", m)
	}
}

func TestEtcdFlagsRefusesWhatARestoreCannotUse(t *testing.T) {
	for name, manifest := range map[string]string{
		"no member name":     strings.Replace(kubeadmEtcdManifest, "--name=", "--nom=", 1),
		"another data dir":   strings.Replace(kubeadmEtcdManifest, "--data-dir=/var/lib/etcd", "--data-dir=/data", 1),
		"no initial cluster": strings.Replace(kubeadmEtcdManifest, "--initial-cluster=", "--x=", 1),
	} {
		if _, err := etcdFlags(manifest); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
