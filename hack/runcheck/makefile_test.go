package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The Makefile makes the paths it is given absolute against the directory
// make runs in, before any suite runs in its own package directory.
func TestMakefileMakesPathsAbsolute(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "--no-print-directory",
		"--eval", `print-paths: ; @echo "$$KUBECONFIG|$$INFORMER_CONFORMANCE_ASSETS|$$INFORMER_CONFORMANCE_ARTIFACTS"`,
		"print-paths", "KUBECONFIG=kc.yaml:/abs/b.yaml", "INFORMER_CONFORMANCE_ASSETS=bin", "ARTIFACTS=out")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := root + "/kc.yaml:/abs/b.yaml|" + root + "/bin|" + root + "/out"
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}
