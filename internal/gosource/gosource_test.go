package gosource

import (
	"go/token"
	"os"
	"path/filepath"
	"testing"
)

func TestParseLeavesTestsOut(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"a.go":      "package p\n\nvar A = 1\n",
		"b.go":      "package p\n\nvar B = 2\n",
		"a_test.go": "package p\n\nvar T = 3\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fset := token.NewFileSet()
	files, err := Parse(fset, dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, filepath.Base(fset.Position(f.Pos()).Filename))
	}
	if len(got) != 2 || got[0] != "a.go" || got[1] != "b.go" {
		t.Fatalf("parsed %v, want [a.go b.go]", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "c.go"), []byte("package p\n\nvar ="), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(fset, dir); err == nil {
		t.Fatal("Parse of a file that does not parse: no error")
	}
}
