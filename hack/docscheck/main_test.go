package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: a link or a repository path that points nowhere is named
// with its line; what exists, web links and other code spans are not.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "x.md")
	text := "see [here](x.md) and [there](missing.md#a), [web](https://example.com)\n" +
		"`scenarios/scenario.go` exists, `scenarios/nope.go` does not, `tools/cache/reflector.go` is client-go's\n"
	if err := os.WriteFile(md, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(filepath.Join("..", "..")); err != nil { // the repository root, where the paths are
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chdir(wd) })
	problems, n, err := check(md)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(problems, "\n")
	if n != 4 || len(problems) != 2 || !strings.Contains(got, ":1: link to missing.md") || !strings.Contains(got, ":2: `scenarios/nope.go`") {
		t.Errorf("checked %d, problems:\n%s", n, got)
	}
}
