package translator

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata from kind's own code and the renderer")

// The fixtures: what kind v0.33 writes into the load balancer container of a
// cluster with three control-plane nodes.
const (
	fixtureCluster = "informer-conformance-0123abcd"
	fixtureLB      = fixtureCluster + "-external-load-balancer"
)

// kindOutput is what kind's own loadbalancer package renders.
type kindOutput struct {
	Image     string   `json:"image"`
	LDS       string   `json:"lds"`
	CDS       string   `json:"cds"`
	CDSIPv6   string   `json:"cdsIPv6"`
	Bootstrap string   `json:"bootstrap"`
	Command   []string `json:"command"`
}

// kindGenerator calls kind's loadbalancer.Config and GenerateBootstrapCommand
// (an internal package: its two files are compiled into a throwaway main
// package, unchanged but for the package clause) with the data kind's
// loadbalancer action passes for the fixture cluster.
const kindGenerator = `package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	const cluster = %q
	data := &ConfigData{ControlPlanePort: 6443, BackendServers: map[string]string{}}
	for _, n := range []string{"control-plane", "control-plane2", "control-plane3"} {
		data.BackendServers[cluster+"-"+n] = cluster + "-" + n + ":6443"
	}
	lds, err := Config(data, ProxyLDSConfigTemplate)
	if err != nil {
		panic(err)
	}
	cds, err := Config(data, ProxyCDSConfigTemplate)
	if err != nil {
		panic(err)
	}
	data.IPv6 = true
	cds6, err := Config(data, ProxyCDSConfigTemplate)
	if err != nil {
		panic(err)
	}
	bootstrap := fmt.Sprintf(DynamicFilesystemConfigTemplate, cluster, %q, ProxyConfigPathCDS, ProxyConfigPathLDS)
	json.NewEncoder(os.Stdout).Encode(map[string]any{"image": Image, "lds": lds, "cds": cds, "cdsIPv6": cds6,
		"bootstrap": bootstrap, "command": GenerateBootstrapCommand(cluster, %q)})
}
`

// renderWithKind runs kind's own code from the module cache (offline).
func renderWithKind(t *testing.T) kindOutput {
	t.Helper()
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kind").Output()
	if err != nil {
		t.Fatalf("go list -m sigs.k8s.io/kind: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(dir)), "pkg", "cluster", "internal", "loadbalancer")
	work := t.TempDir()
	for _, f := range []string{"config.go", "const.go"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		data = bytes.Replace(data, []byte("\npackage loadbalancer\n"), []byte("\npackage main\n"), 1)
		if err := os.WriteFile(filepath.Join(work, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gomod := "module kindlb\n\ngo 1.26\n\nrequire sigs.k8s.io/kind " + kindVersion(t) + "\n"
	sum, err := os.ReadFile("../../../../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"go.mod":  gomod,
		"go.sum":  string(sum),
		"main.go": fmt.Sprintf(kindGenerator, fixtureCluster, fixtureLB, fixtureLB),
	} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running kind's loadbalancer package: %v\n%s", err, stderr.String())
	}
	var k kindOutput
	if err := json.Unmarshal(out, &k); err != nil {
		t.Fatal(err)
	}
	return k
}

// kindVersion is the version of sigs.k8s.io/kind this module requires.
func kindVersion(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "sigs.k8s.io/kind").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from what was rendered (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", p, got, want)
	}
}

// The fixtures are what kind's own code writes: a kind bump that changes
// the load balancer's configuration fails here.
func TestFixturesAreKinds(t *testing.T) {
	k := renderWithKind(t)
	golden(t, "kind-lds.yaml", k.LDS)
	golden(t, "kind-cds.yaml", k.CDS)
	golden(t, "kind-cds-ipv6.yaml", k.CDSIPv6)
	golden(t, "kind-envoy.yaml", k.Bootstrap)
	var container bytes.Buffer
	enc := json.NewEncoder(&container)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]any{"image": k.Image, "command": k.Command}); err != nil {
		t.Fatal(err)
	}
	golden(t, "kind-container.json", container.String())
}

func readFixtures(t *testing.T, cds string) (Bootstrap, []Listener, []Cluster) {
	t.Helper()
	read := func(n string) []byte {
		data, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	b, err := ParseBootstrap(read("kind-envoy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ls, err := ParseListeners(read("kind-lds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := ParseClusters(read(cds))
	if err != nil {
		t.Fatal(err)
	}
	return b, ls, cs
}

func TestRenderKindsConfiguration(t *testing.T) {
	b, ls, cs := readFixtures(t, "kind-cds.yaml")
	if got := b.DynamicResources.LDSConfig.PathConfigSource.Path; got != "/home/envoy/lds.yaml" {
		t.Errorf("lds path %q", got)
	}
	cfg, err := Render(b, ls, cs)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "haproxy.cfg", cfg)
	for _, want := range []string{
		"bind 0.0.0.0:6443",
		"balance roundrobin",
		"timeout connect 250ms",
		"http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host kube_apiservers",
		"default-server check check-ssl verify none inter 2s fall 2 rise 1 resolvers dns resolve-prefer ipv4",
		"server " + fixtureCluster + "-control-plane3:6443 " + fixtureCluster + "-control-plane3:6443",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("haproxy.cfg lacks %q", want)
		}
	}
}

func TestRenderIPv6(t *testing.T) {
	b, ls, cs := readFixtures(t, "kind-cds-ipv6.yaml")
	ls[0].Address.SocketAddress.Address = "::" // what the LDS template writes for IPv6
	cfg, err := Render(b, ls, cs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bind :::6443 v4v6", "resolve-prefer ipv6"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("haproxy.cfg lacks %q:\n%s", want, cfg)
		}
	}
}

// Before kind writes its files they hold "resources: []": haproxy still
// gets a listener, the admin one.
func TestRenderEmpty(t *testing.T) {
	b, _, _ := readFixtures(t, "kind-cds.yaml")
	ls, err := ParseListeners([]byte("resources: []"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := ParseClusters([]byte("resources: []"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Render(b, ls, cs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cfg, "listen admin\n    mode http\n    bind 0.0.0.0:10000") || strings.Contains(cfg, "frontend") {
		t.Errorf("empty configuration:\n%s", cfg)
	}
}

func TestRenderRejects(t *testing.T) {
	cds, err := os.ReadFile("testdata/kind-cds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ lds, cds, want string }{
		"an unknown field": {cds: strings.Replace(string(cds), "  lb_policy: ROUND_ROBIN", "  lb_policy: ROUND_ROBIN\n  circuit_breakers: {}", 1), want: "unknown field"},
		"a verified TLS check": {cds: strings.Replace(string(cds), "ACCEPT_UNTRUSTED", "VERIFY_TRUST_CHAIN", 1),
			want: "trust_chain_verification"},
		"a listener to a missing cluster": {cds: "resources: []", want: "does not define"},
		"an unsupported policy":           {cds: strings.Replace(string(cds), "ROUND_ROBIN", "MAGLEV", 1), want: "MAGLEV"},
	} {
		t.Run(name, func(t *testing.T) {
			b, ls, _ := readFixtures(t, "kind-cds.yaml")
			cs, err := ParseClusters([]byte(c.cds))
			if err == nil {
				_, err = Render(b, ls, cs)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming %q", err, c.want)
			}
		})
	}
}

// fakeHAProxy records each invocation's arguments, one line each, and
// stays up like haproxy -db until it is signalled (-c exits at once).
const fakeHAProxy = `#!/bin/sh
echo "$*" >> "$(dirname "$0")/calls"
case "$1" in -c) exit 0 ;; esac
trap 'exit 0' TERM USR1
while :; do sleep 0.05; done
`

// The Supervisor starts haproxy, and when kind moves new files into place
// (tmp + mv, as its loadbalancer action does) starts another with -sf and
// the old one's pid.
func TestSupervisorReloadsOnMove(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "haproxy")
	if err := os.WriteFile(bin, []byte(fakeHAProxy), 0o755); err != nil {
		t.Fatal(err)
	}
	boot, err := os.ReadFile("testdata/kind-envoy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lds, cds := filepath.Join(dir, "lds.yaml"), filepath.Join(dir, "cds.yaml")
	boot = bytes.ReplaceAll(boot, []byte("/home/envoy/lds.yaml"), []byte(lds))
	boot = bytes.ReplaceAll(boot, []byte("/home/envoy/cds.yaml"), []byte(cds))
	bootPath := filepath.Join(dir, "envoy.yaml")
	for p, data := range map[string][]byte{bootPath: boot, lds: []byte("resources: []"), cds: []byte("resources: []")} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log := &lockedBuffer{}
	s := &Supervisor{Bootstrap: bootPath, HAProxy: bin, Poll: 20 * time.Millisecond, Log: log}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	calls := func() []string {
		data, _ := os.ReadFile(filepath.Join(dir, "calls"))
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	waitFor := func(what string, ok func([]string) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !ok(calls()) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: calls %q; log:\n%s", what, calls(), log.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("the first haproxy", func(c []string) bool { return len(c) == 2 })
	if c := calls(); !strings.HasPrefix(c[0], "-c -q -f ") || c[1] != "-db -f "+filepath.Join(dir, "haproxy.cfg") {
		t.Fatalf("first calls %q", c)
	}

	// kind's order: the clusters, then the listeners.
	for _, f := range []string{"kind-cds.yaml", "kind-lds.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, strings.TrimPrefix(f, "kind-"))
		if err := os.WriteFile(dst+".tmp", data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dst+".tmp", dst); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("a reload", func(c []string) bool { return strings.Contains(c[len(c)-1], "-sf ") })
	cfg, err := os.ReadFile(filepath.Join(dir, "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "frontend listener_apiserver") {
		t.Errorf("the reloaded configuration has no apiserver listener:\n%s", cfg)
	}
	if !strings.Contains(log.String(), "took over from pid") {
		t.Errorf("log: %s", log.String())
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
