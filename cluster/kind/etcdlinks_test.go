package kind

import (
	"strings"
	"testing"
)

// kubeadm's kube-apiserver manifest, as far as setFlag reads it.
const testManifest = `apiVersion: v1
kind: Pod
spec:
  containers:
  - command:
    - kube-apiserver
    - --etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt
    - --etcd-servers=https://127.0.0.1:2379
    - --secure-port=6443
`

func TestSetFlag(t *testing.T) {
	got, err := setFlag(testManifest, etcdServersFlag, "https://172.18.0.1:40000")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(testManifest, "https://127.0.0.1:2379", "https://172.18.0.1:40000", 1)
	if got != want {
		t.Errorf("setFlag:\n%s\nwant\n%s", got, want)
	}
	// --etcd-cafile shares no prefix with --etcd-servers=; a flag missing
	// or given twice is an error, not a guess.
	if _, err := setFlag(strings.Replace(testManifest, "    - --etcd-servers=https://127.0.0.1:2379\n", "", 1), etcdServersFlag, "x"); err == nil {
		t.Error("a manifest without --etcd-servers: no error")
	}
	if _, err := setFlag(testManifest+"    - --etcd-servers=https://10.0.0.1:2379\n", etcdServersFlag, "x"); err == nil {
		t.Error("a manifest with --etcd-servers twice: no error")
	}
}
