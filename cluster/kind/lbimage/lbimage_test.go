package lbimage

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster/kind/docker"
)

// kindContainer is what kind runs its load balancer with (the fixture
// package translator checks against kind's own code).
type kindContainer struct {
	Image   string   `json:"image"`
	Command []string `json:"command"`
}

func readKindContainer(t *testing.T) kindContainer {
	t.Helper()
	data, err := os.ReadFile("translator/testdata/kind-container.json")
	if err != nil {
		t.Fatal(err)
	}
	var k kindContainer
	if err := json.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	return k
}

// Use lends the stand-in the name kind runs.
func TestImageIsKinds(t *testing.T) {
	if k := readKindContainer(t); k.Image != Image {
		t.Fatalf("kind runs %s, the stand-in is lent the name %s", k.Image, Image)
	}
}

// The translator's package is where Build looks for it.
func TestEnvoyPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.Name}}", EnvoyPackage).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "main" {
		t.Fatalf("go list %s: %v: %s", EnvoyPackage, err, out)
	}
}

// Fixture names: the endpoints of the fixtures' cluster file.
const fixtureCluster = "informer-conformance-0123abcd"

var fixtureNodes = []string{fixtureCluster + "-control-plane", fixtureCluster + "-control-plane2", fixtureCluster + "-control-plane3"}

// backendConfig is a stand-in kube-apiserver: TLS on 6443, every path
// answered 200 with the node's name.
const backendConfig = `global
    log stdout format raw daemon
defaults
    mode http
    timeout connect 1s
    timeout client 10s
    timeout server 10s
frontend https
    bind :6443 ssl crt /tls.pem
    http-request return status 200 content-type text/plain lf-string "%s"
`

// TestIntegrationImage runs the built image as kind does (its container
// command, then its files written to a tmp name and moved into place) in
// front of three stand-in apiservers, and checks round robin over them, the
// health check taking a killed one out, and no failed connection meanwhile.
func TestIntegrationImage(t *testing.T) {
	ctx := context.Background()
	skip := t.Skipf
	if os.Getenv("INFORMER_CONFORMANCE_KIND_INTEGRATION") == "1" {
		skip = t.Fatalf
	}
	d, err := docker.New(ctx)
	if err != nil {
		skip("%v", err)
		return
	}
	if s := Inspect(ctx, d, StandIn); !s.Present || !s.Ours {
		skip("the load balancer stand-in %s is not built here (make kind-image)", StandIn)
		return
	}
	k := readKindContainer(t)
	run := func(stdin io.Reader, args ...string) string {
		t.Helper()
		out, err := d.Run(ctx, stdin, args...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	label := LabelOwner + "=" + OwnerCheckContainer
	prefix := fmt.Sprintf("informer-conformance-lbtest-%d", os.Getpid())
	run(nil, "network", "create", "--label", label, prefix)
	var containers []string
	t.Cleanup(func() {
		if t.Failed() && len(containers) > 0 {
			t.Logf("load balancer log:\n%s", logs(containers[0]))
		}
		if len(containers) > 0 {
			_, _ = d.Run(ctx, nil, append([]string{"rm", "-f", "-v"}, containers...)...)
		}
		_, _ = d.Run(ctx, nil, "network", "rm", prefix)
	})
	lb := prefix + "-lb"
	containers = append(containers, lb)
	// kind's flags that matter here: detached, with a terminal (commonArgs).
	run(nil, append([]string{"run", "--detach", "--tty", "--name", lb, "--network", prefix, "--label", label, StandIn}, k.Command...)...)
	certPEM := selfSigned(t)
	for i, n := range fixtureNodes {
		name := fmt.Sprintf("%s-%d", prefix, i)
		containers = append(containers, name)
		run(nil, "run", "--detach", "--name", name, "--network", prefix, "--network-alias", n, "--label", label,
			"-e", "PEM="+certPEM, "-e", "CFG="+fmt.Sprintf(backendConfig, n), StandIn,
			"bash", "-c", `printf '%s' "$PEM" > /tls.pem && printf '%s' "$CFG" > /cfg && exec haproxy -db -f /cfg`)
	}
	// kind's loadbalancer action: write to tmp names, then chmod and mv.
	for _, f := range []string{"lds", "cds"} {
		data, err := os.ReadFile(filepath.Join("translator", "testdata", "kind-"+f+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		run(strings.NewReader(string(data)), "exec", "-i", lb, "cp", "/dev/stdin", "/home/envoy/"+f+".yaml.tmp")
	}
	run(nil, "exec", lb, "sh", "-c", "chmod 666 /home/envoy/cds.yaml.tmp /home/envoy/lds.yaml.tmp && mv /home/envoy/cds.yaml.tmp /home/envoy/cds.yaml && mv /home/envoy/lds.yaml.tmp /home/envoy/lds.yaml")
	ip := run(nil, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", lb)
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // the stand-ins' certificate is throwaway
		DisableKeepAlives: true,                                  // a connection each: balanced per connection
	}}
	get := func() (string, error) {
		resp, err := client.Get("https://" + ip + ":6443/")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	seen := map[string]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for len(seen) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("through the load balancer within 30 s: answers from %v, want all three", seen)
		}
		if body, err := get(); err == nil {
			seen[body] = true
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Logf("round robin over %d stand-ins", len(seen))

	run(nil, "kill", containers[2])
	killed := time.Now()
	// fall 2 at inter 2s: out within about 4 s; a connection refused
	// meanwhile is retried on another (redispatch), so none fails.
	var last []string
	for time.Since(killed) < 20*time.Second {
		body, err := get()
		if err != nil {
			t.Fatalf("a request failed %s after the kill: %v", time.Since(killed).Round(time.Millisecond), err)
		}
		last = append(last, body)
		if len(last) > 6 {
			last = last[1:]
		}
		if len(last) == 6 && !strings.Contains(strings.Join(last, " "), fixtureNodes[1]) {
			t.Logf("the killed stand-in is out after %s", time.Since(killed).Round(time.Millisecond))
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.Contains(strings.Join(last, " "), fixtureNodes[1]) {
		t.Fatalf("answers after the kill still from the killed stand-in: %v", last)
	}
	if l := logs(lb); !strings.Contains(l, "took over from pid") {
		t.Errorf("no reload in the load balancer's log:\n%s", l)
	}
}

// logs is a container's output, both streams.
func logs(name string) string {
	out, _ := exec.Command("docker", "logs", name).CombinedOutput()
	return string(out)
}

// selfSigned is a certificate and key, PEM, for the stand-ins.
func selfSigned(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "stand-in"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) +
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}))
}
