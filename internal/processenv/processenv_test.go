package processenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A variable is set once per process: the same value again is fine,
// another owner's different value is refused, naming both, and the first
// stays.
func TestSetRefusesAConflictingSecondOwner(t *testing.T) {
	const name = "INFORMER_CONFORMANCE_PROCESSENV_TEST"
	t.Cleanup(func() {
		os.Unsetenv(name)
		mu.Lock()
		delete(set, name)
		mu.Unlock()
	})
	if err := Set(name, "a", "first"); err != nil {
		t.Fatal(err)
	}
	if err := Set(name, "a", "second"); err != nil {
		t.Errorf("the same value again: %v", err)
	}
	err := Set(name, "b", "second")
	if err == nil || !strings.Contains(err.Error(), "second wants") || !strings.Contains(err.Error(), "first set it") {
		t.Errorf("a conflicting value: %v, want an error naming both owners", err)
	}
	if got := os.Getenv(name); got != "a" {
		t.Errorf("%s=%q after the refused Set, want the first value", name, got)
	}
	if owner, value, ok := Owner(name); !ok || owner != "first" || value != "a" {
		t.Errorf("Owner: %q %q %t", owner, value, ok)
	}
}

// TestNoOtherSetenv: no library package of the module changes the
// process's environment but through this one (tests may, with t.Setenv;
// the tools under hack/ are commands, not library code).
func TestNoOtherSetenv(t *testing.T) {
	root := filepath.Join("..", "..")
	var offenders []string
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case "hack", "internal/processenv", "_artifacts", "_bin", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, call := range []string{"os.Setenv(", "os.Unsetenv(", "os.Clearenv("} {
			if strings.Contains(string(src), call) {
				offenders = append(offenders, rel+": "+call)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s: not the module", files, root)
	}
	if len(offenders) > 0 {
		t.Errorf("library code changes the process's environment outside internal/processenv (use processenv.Set): %v", offenders)
	}
}
