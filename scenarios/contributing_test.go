package scenarios

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestContributingCompiles: the Go code of CONTRIBUTING.md compiles as
// part of this package, against the code it documents, so a recipe that
// names a field, a type or a signature wrongly fails here and not in a
// contributor's first build.
//
// Each ```go block of the file is, by default, top-level declarations of
// package scenarios. A block that is deliberately a fragment says what it
// is on the line before its fence, in an HTML comment a rendered page does
// not show:
//
//	<!-- compile: statements -->  statements of a scenario's body, with
//	                              ctx (context.Context), s (e2e.Setup) and
//	                              env (*e2e.Env) in scope
//	<!-- compile: spec -->        one element of a []Spec literal (a
//	                              scenario value's Specs)
//
// Another word after "compile:" fails the test. The imports are added here
// (the packages the blocks name: context, e2e, cluster, probe, ...; Gomega
// dot-imported), and each block's lines keep their numbers in
// CONTRIBUTING.md (//line directives), so an error names the document's
// line. The blocks are compiled with `go build -overlay` (no file is
// written in the source tree); it reuses the build cache the test binary
// was built with, so it runs under -short too.
func TestContributingCompiles(t *testing.T) {
	doc := contributingDoc(t)
	b, err := os.ReadFile(doc)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("CONTRIBUTING.md is not here (the module outside its repository, as a dependency): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := goBlocks(string(b))
	if err != nil {
		t.Fatalf("CONTRIBUTING.md: %v", err)
	}
	if len(blocks) == 0 {
		t.Fatal("CONTRIBUTING.md has no ```go block: the test would check nothing")
	}
	if out, err := compileBlocks(t, doc, blocks); err != nil {
		t.Fatalf("the Go code of CONTRIBUTING.md does not compile as part of package scenarios: %v\n%s", err, out)
	}
}

// TestContributingCompilesControl is the negative control: a recipe that
// puts an e2e.Capability in a scenario's Needs (a []cluster.Capability)
// fails to compile, and the error names the document's line.
func TestContributingCompilesControl(t *testing.T) {
	if _, err := os.Stat(contributingDoc(t)); err != nil {
		t.Skipf("CONTRIBUTING.md is not here: %v", err)
	}
	doc := filepath.Join(t.TempDir(), "BROKEN.md")
	md := "# A recipe\n\nSome text.\n\n<!-- compile: spec -->\n```go\n{\n    Text: \"broken\", Needs: []cluster.Capability{e2e.CapabilityHA},\n    Run: func(ctx context.Context, s e2e.Setup, _ Input) {},\n},\n```\n"
	blocks, err := goBlocks(md)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 1 || blocks[0].kind != "spec" || blocks[0].line != 7 {
		t.Fatalf("blocks of the control's document: %+v, want one spec block from line 7", blocks)
	}
	out, err := compileBlocks(t, doc, blocks)
	if err == nil {
		t.Fatalf("a Needs of e2e.Capability compiled; the test cannot catch the recipe's mistake:\n%s", out)
	}
	if want := "BROKEN.md:8"; !strings.Contains(out, want) {
		t.Errorf("the compiler's error does not name %s:\n%s", want, out)
	}
}

// contributingDoc is CONTRIBUTING.md's path, at the repository's root.
func contributingDoc(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller: cannot find the package's directory")
	}
	return filepath.Join(filepath.Dir(file), "..", "CONTRIBUTING.md")
}

// goBlock is a ```go block of a markdown document: its code (the fence's
// indentation removed), the line its code starts on and its kind ("" for
// declarations, or its compile marker).
type goBlock struct {
	code string
	line int
	kind string
}

var (
	fenceOpen  = regexp.MustCompile("^(\\s*)```go\\s*$")
	fenceClose = regexp.MustCompile("^\\s*```\\s*$")
	marker     = regexp.MustCompile(`^\s*<!--\s*compile:\s*(\S+)\s*-->\s*$`)
	// snippetKinds are the markers a block may carry.
	snippetKinds = []string{"statements", "spec"}
)

// goBlocks are the ```go blocks of md.
func goBlocks(md string) ([]goBlock, error) {
	lines := strings.Split(md, "\n")
	var blocks []goBlock
	for i := 0; i < len(lines); i++ {
		m := fenceOpen.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		b := goBlock{line: i + 2}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if k := marker.FindStringSubmatch(lines[j]); k != nil {
				if !slices.Contains(snippetKinds, k[1]) {
					return nil, fmt.Errorf("line %d: compile marker %q: want one of %s", j+1, k[1], strings.Join(snippetKinds, ", "))
				}
				b.kind = k[1]
			}
			break
		}
		var code []string
		for i++; i < len(lines) && !fenceClose.MatchString(lines[i]); i++ {
			code = append(code, strings.TrimPrefix(lines[i], m[1]))
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: the ```go block is never closed", b.line-1)
		}
		b.code = strings.Join(code, "\n")
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// snippetImports are the packages a block may name, by the name it uses.
var snippetImports = map[string]string{
	"context":   "context",
	"errors":    "errors",
	"fmt":       "fmt",
	"time":      "time",
	"rest":      "k8s.io/client-go/rest",
	"cache":     "k8s.io/client-go/tools/cache",
	"e2e":       "github.com/informer-conformance/informer-conformance/e2e",
	"httpfault": "github.com/informer-conformance/informer-conformance/e2e/httpfault",
	"cluster":   "github.com/informer-conformance/informer-conformance/cluster",
	"probe":     "github.com/informer-conformance/informer-conformance/probe",
	"features":  "k8s.io/client-go/features",
}

// gomegaNames make a block dot-import Gomega, as the scenarios do.
var gomegaNames = []string{"Expect", "Eventually", "Consistently"}

// source is block i of doc as a file of package scenarios: wrapped as its
// kind says, with the imports it needs, its lines numbered as in doc.
func (b goBlock) source(doc string, i int) (string, error) {
	var body string
	switch b.kind {
	case "":
		body = fmt.Sprintf("//line %s:%d\n%s\n", doc, b.line, b.code)
	case "statements":
		body = fmt.Sprintf("func _(ctx context.Context, s e2e.Setup, env *e2e.Env) {\n//line %s:%d\n%s\n}\n", doc, b.line, b.code)
	case "spec":
		body = fmt.Sprintf("var _ = []Spec{\n//line %s:%d\n%s\n}\n", doc, b.line, b.code)
	}
	f, err := parser.ParseFile(token.NewFileSet(), fmt.Sprintf("block%d.go", i), "package scenarios\n\n"+body, parser.SkipObjectResolution)
	if err != nil {
		return "", fmt.Errorf("%s:%d: the ```go block does not parse as %s: %w", doc, b.line, map[string]string{"": "declarations", "statements": "statements", "spec": "a []Spec element"}[b.kind], err)
	}
	// The packages the block uses (a package name before a selector) and
	// Gomega's functions called unqualified.
	var imports []string
	seen := map[string]bool{}
	add := func(path string) {
		if !seen[path] {
			seen[path] = true
			imports = append(imports, path)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				if path, ok := snippetImports[x.Name]; ok {
					add(fmt.Sprintf("%q", path))
				}
			}
		case *ast.CallExpr:
			if fn, ok := n.Fun.(*ast.Ident); ok && slices.Contains(gomegaNames, fn.Name) {
				add(`. "github.com/onsi/gomega"`)
			}
		}
		return true
	})
	slices.Sort(imports)
	return fmt.Sprintf("package scenarios\n\nimport (\n\t%s\n)\n\n%s", strings.Join(imports, "\n\t"), body), nil
}

// compileBlocks builds package scenarios with the blocks of doc added as
// files of its own (go build -overlay), and returns the go command's
// output.
func compileBlocks(t *testing.T, doc string, blocks []goBlock) (string, error) {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to compile CONTRIBUTING.md's code with: %v", err)
	}
	_, file, _, _ := runtime.Caller(0)
	pkg := filepath.Dir(file)
	tmp := t.TempDir()
	overlay := map[string]map[string]string{"Replace": {}}
	for i, b := range blocks {
		src, err := b.source(doc, i)
		if err != nil {
			return "", err
		}
		name := filepath.Join(tmp, fmt.Sprintf("block%d.go", i))
		if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay["Replace"][filepath.Join(pkg, fmt.Sprintf("zz_doc_block%d.go", i))] = name
	}
	j, err := json.Marshal(overlay)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "overlay.json"), j, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gocmd, "build", "-overlay="+filepath.Join(tmp, "overlay.json"), ".")
	cmd.Dir = pkg
	out, err := cmd.CombinedOutput()
	return string(out), err
}
