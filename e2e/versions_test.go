package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersionMismatch(t *testing.T) {
	inUse := map[string]string{ComponentClientGo: "v0.32.13", ComponentKubeAPIServer: "v1.36.3"}
	for _, tc := range []struct {
		name        string
		constraints map[string][]string
		want        string // substring of the reason; "" = runs
	}{
		{"no constraint", nil, ""},
		{"met", map[string][]string{ComponentClientGo: {">= 0.31.0"}, ComponentKubeAPIServer: {">= 1.33.0"}}, ""},
		{"client-go too old", map[string][]string{ComponentClientGo: {">= 0.33.0"}}, "needs client-go >= 0.33.0, this run has v0.32.13"},
		{"server too new", map[string][]string{ComponentKubeAPIServer: {"< 1.36.0"}}, "needs kube-apiserver < 1.36.0, this run has v1.36.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := versionMismatch(tc.constraints, inUse, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("versionMismatch = %q, want %q", got, tc.want)
			}
		})
	}
	// A pre-release compares as its release.
	if got, _ := versionMismatch(map[string][]string{ComponentClientGo: {">= 0.38.0"}}, map[string]string{ComponentClientGo: "v0.38.0-alpha.2"}, nil); got != "" {
		t.Fatalf("pre-release: %q", got)
	}
}

// TestUnknownClientGoVersionSkipsConstrainedSpecs: a spec constrained to
// client-go versions skips when the run's client-go version is unknown,
// saying why, instead of running as if it matched (before, an unknown
// version never skipped); an unconstrained spec runs, and an unknown
// kube-apiserver version (a cluster that failed to start) still does not
// skip.
func TestUnknownClientGoVersionSkipsConstrainedSpecs(t *testing.T) {
	unknown := map[string]string{ComponentClientGo: "go.mod file not found"}
	got, err := versionMismatch(map[string][]string{ComponentClientGo: {">= 0.36.0"}}, map[string]string{}, unknown)
	if err != nil || got != "needs client-go >= 0.36.0, and this run's client-go version is unknown: go.mod file not found" {
		t.Errorf("constrained spec, unknown client-go: %q, %v", got, err)
	}
	if got, _ := versionMismatch(nil, map[string]string{}, unknown); got != "" {
		t.Errorf("unconstrained spec, unknown client-go: %q, want it to run", got)
	}
	if got, _ := versionMismatch(map[string][]string{ComponentKubeAPIServer: {">= 1.34.0"}}, map[string]string{ComponentClientGo: "v0.36.6"}, nil); got != "" {
		t.Errorf("unknown kube-apiserver: %q, want it to run", got)
	}
	if got, _ := versionMismatch(map[string][]string{ComponentClientGo: {">= 0.36.0"}}, map[string]string{ComponentClientGo: "v0.36.6"}, unknown); got != "" {
		t.Errorf("known client-go: %q, want it to run", got)
	}
}

// TestBadVersionConstraintFailsLoudly: a typo in a constraint is an error
// (the spec fails), whether or not the version is known; before, the spec
// was skipped with "bad client-go constraint" and the run stayed green.
func TestBadVersionConstraintFailsLoudly(t *testing.T) {
	for _, inUse := range []map[string]string{{ComponentClientGo: "v0.32.13"}, {}} {
		reason, err := versionMismatch(map[string][]string{ComponentClientGo: {">= banana"}}, inUse, nil)
		if err == nil || !strings.Contains(err.Error(), `bad client-go version constraint ">= banana"`) || reason != "" {
			t.Errorf("versions %v: reason %q, error %v; want an error naming the constraint", inUse, reason, err)
		}
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `bad kube-apiserver version constraint ">= 1.3O"`) {
				t.Errorf("KubeAPIServer(\">= 1.3O\") did not panic naming the constraint: %v", r)
			}
		}()
		KubeAPIServer(">= 1.3O")
	}()
	ClientGo(">= 0.31.0", "< 0.38.0") // parses: no panic
}

// TestLocalVersionFromAssets: with INFORMER_CONFORMANCE_ASSETS the local
// backend's kube-apiserver version (the report's, the constraints') is the
// binary's own, not KUBE_VERSION's or the default.
func TestLocalVersionFromAssets(t *testing.T) {
	dir := t.TempDir()
	for name, out := range map[string]string{"kube-apiserver": "Kubernetes v1.33.7", "etcd": "etcd Version: 3.5.21", "etcdutl": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\necho '"+out+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	setenv(t, EnvBackend, "local")
	setenv(t, "INFORMER_CONFORMANCE_ASSETS", dir)
	for _, kubeVersion := range []string{"", "v1.36.3"} {
		setenv(t, "KUBE_VERSION", kubeVersion)
		if got := KubeAPIServerVersion(); got != "v1.33.7" {
			t.Errorf("KUBE_VERSION=%q: KubeAPIServerVersion() = %q, want the binary's v1.33.7", kubeVersion, got)
		}
		if why, _ := versionMismatch(map[string][]string{ComponentKubeAPIServer: {">= 1.34.0"}}, map[string]string{ComponentKubeAPIServer: KubeAPIServerVersion()}, nil); !strings.Contains(why, "this run has v1.33.7") {
			t.Errorf("a >= 1.34.0 constraint against the binary: %q", why)
		}
	}
}

// TestGoListNamesAClientGoReplacement: a module that replaces client-go by
// a local directory, as downstream repositories do, is named as such (what
// ClientGoReplacement reads; offline, no proxy).
func TestGoListNamesAClientGoReplacement(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs go list")
	}
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("downstream/go.mod", "module example.com/downstream\n\ngo 1.24\n\nrequire k8s.io/client-go v0.36.6\n\nreplace k8s.io/client-go => ../client-go\n")
	write("client-go/go.mod", "module k8s.io/client-go\n\ngo 1.24\n")
	setenv(t, "GOPROXY", "off")
	setenv(t, "GOFLAGS", "-mod=mod")
	ctx, cancel := context.WithTimeout(context.Background(), goListTimeout)
	defer cancel()
	m, err := goListModuleOf(ctx, filepath.Join(dir, "downstream"), "example.com/downstream", "k8s.io/client-go")
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != "v0.36.6" || m.Replace == nil || m.Replace.Path != "../client-go" || m.Replace.Version != "" || !sameDir(m.Replace.Dir, filepath.Join(dir, "client-go")) {
		t.Errorf("go list -m k8s.io/client-go: %+v (replace %+v), want v0.36.6 replaced by ../client-go", m, m.Replace)
	}
	// The local directory the suite was compiled from, as the compiled
	// path gives it: the version is the one go.mod requires.
	compiled := parseCompiledPath(filepath.Join(dir, "client-go", "tools", "cache", "shared_informer.go"))
	got := resolveClientGo(compiled, func() (goModule, error) { return m, nil })
	if want := (ClientGoModule{Version: "v0.36.6", Replacement: "../client-go (a local directory)"}); got != want {
		t.Errorf("resolveClientGo = %+v, want %+v", got, want)
	}
	// Asked in another module (a precompiled suite run from elsewhere),
	// go list's answer is refused.
	if _, err := goListModuleOf(ctx, filepath.Join(dir, "client-go"), "example.com/downstream", "k8s.io/client-go"); err == nil {
		t.Errorf("go list in client-go's own module answered for example.com/downstream")
	}
}
