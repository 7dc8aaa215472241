package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOptedOut: only INFORMER_CONFORMANCE=1 runs the specs; unset or 0
// skips with the one line naming the command; -short skips whatever the
// variable says; any other value is an error, not a silent skip.
func TestOptedOut(t *testing.T) {
	for _, tc := range []struct {
		value   string
		short   bool
		skip    string // "" = runs
		wantErr bool
	}{
		{value: "", skip: "informer-conformance specs not run: set INFORMER_CONFORMANCE=1 (INFORMER_CONFORMANCE=1 go run github.com/onsi/ginkgo/v2/ginkgo -procs=4 ./conformance)"},
		{value: "0", skip: "informer-conformance specs not run: set INFORMER_CONFORMANCE=1"},
		{value: "", short: true, skip: "informer-conformance specs not run: set INFORMER_CONFORMANCE=1"},
		{value: "1"},
		{value: "1", short: true, skip: "-short"},
		{value: "true", wantErr: true},
		{value: "yes", short: true, wantErr: true},
	} {
		skip, err := optedOut(tc.value, tc.short, "./conformance")
		if (err != nil) != tc.wantErr || tc.skip == "" && skip != "" || !strings.HasPrefix(skip, tc.skip) {
			t.Errorf("INFORMER_CONFORMANCE=%q short=%t: skip %q, error %v; want skip %q, error %t", tc.value, tc.short, skip, err, tc.skip, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "set it to 1") {
			t.Errorf("INFORMER_CONFORMANCE=%q: the error %q does not say what to set", tc.value, err)
		}
		if strings.Contains(skip, "\n") {
			t.Errorf("the skip reason is more than one line: %q", skip)
		}
	}
}

// TestPackageArg: the command in the skip line names the test package
// from the root of its module.
func TestPackageArg(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{"test/conformance", "nomodule"} {
		if err := os.MkdirAll(filepath.Join(root, "mod", dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "mod", "go.mod"), []byte("module example.com/m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		filepath.Join(root, "mod", "test", "conformance", "c_test.go"): "./test/conformance",
		filepath.Join(root, "mod", "c_test.go"):                        ".",
		"example.com/m/test/conformance/c_test.go":                     ".", // -trimpath
	} {
		if got := packageArg(file); got != want {
			t.Errorf("packageArg(%q) = %q, want %q", file, got, want)
		}
	}
}
