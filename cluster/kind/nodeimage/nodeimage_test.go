package nodeimage

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// The base files come from the kind module the backend's Go code is: both
// must be the same version.
func TestKindVersionPinned(t *testing.T) {
	data, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == "sigs.k8s.io/kind" {
			if r.Mod.Version != KindVersion {
				t.Fatalf("go.mod requires sigs.k8s.io/kind %s, the node image reads kind %s's base files", r.Mod.Version, KindVersion)
			}
			return
		}
	}
	t.Fatal("go.mod does not require sigs.k8s.io/kind")
}

func TestEtcdVersionOf(t *testing.T) {
	for ref, want := range map[string]string{
		"registry.k8s.io/etcd:3.6.8-0": "v3.6.8",
		"registry.k8s.io/etcd:3.5.21":  "v3.5.21",
	} {
		if got, err := EtcdVersionOf(ref); err != nil || got != want {
			t.Errorf("EtcdVersionOf(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
	if _, err := EtcdVersionOf("registry.k8s.io/etcd:latest"); err == nil {
		t.Error("a tag without a version was accepted")
	}
}

func TestSandboxImage(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(p, []byte("[plugins.\"io.containerd.grpc.v1.cri\"]\n  # use fixed sandbox image\n  sandbox_image = \"registry.k8s.io/pause:3.10\"\n"), 0o644)
	if got, err := sandboxImage(p); err != nil || got != "registry.k8s.io/pause:3.10" {
		t.Fatalf("sandboxImage = %q, %v", got, err)
	}
	os.WriteFile(p, []byte("version = 2\n"), 0o644)
	if _, err := sandboxImage(p); err == nil {
		t.Fatal("a config without sandbox_image was accepted")
	}
}

func TestTarFilesMakesDirectoriesAndExecutables(t *testing.T) {
	src := filepath.Join(t.TempDir(), "bin")
	os.WriteFile(src, []byte("#!/bin/true\n"), 0o644)
	var buf bytes.Buffer
	if err := tarFiles(&buf, map[string]string{"usr/local/bin/etcd": src}); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	var names []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
		if h.Name == "usr/local/bin/etcd" && h.Mode != 0o755 {
			t.Errorf("mode %o, want 755", h.Mode)
		}
	}
	want := []string{"usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/etcd"}
	if len(names) != len(want) {
		t.Fatalf("entries %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("entries %v, want %v", names, want)
		}
	}
}

// TestCheckDebootstrap: without debootstrap on PATH a build says so, and
// how to get it, before it compiles anything.
func TestCheckDebootstrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := CheckDebootstrap()
	if err == nil || !strings.Contains(err.Error(), "apt-get install debootstrap") {
		t.Errorf("CheckDebootstrap without debootstrap on PATH: %v", err)
	}
}
