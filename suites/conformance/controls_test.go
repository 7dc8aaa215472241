package conformance

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/informer-conformance/informer-conformance/internal/gosource"
)

// TestNegativeControlsMatchNamedAssertions: a negative control proves an
// assertion can fail by matching the assertion's message, so both must use
// one named constant: a control matching free text (as S3's, S4's, S8-S12's
// did) keeps passing while the assertion it was written against is reworded
// into something else. The scenarios' controls name theirs in
// scenarios.Spec.Fails (checked in package scenarios,
// TestControlsNameTheirAssertions); the specs written here match with
// MatchError, where literal strings are allowed only as further terms of
// an And whose first term is a constant (the detector's "informer pods").
func TestNegativeControlsMatchNamedAssertions(t *testing.T) {
	dir := packageDir()
	fset := token.NewFileSet()
	checked := 0
	for _, f := range sources(t, fset, dir) {
		// A negative control is a function that calls InterceptGomegaFailure
		// and matches the error it returns.
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.FuncLit)
			if !ok {
				return true
			}
			var intercepts bool
			var matches []*ast.CallExpr
			ast.Inspect(lit.Body, func(n ast.Node) bool {
				if _, nested := n.(*ast.FuncLit); nested {
					return false
				}
				if call, ok := n.(*ast.CallExpr); ok {
					switch callee(call) {
					case "InterceptGomegaFailure":
						intercepts = true
					case "MatchError":
						matches = append(matches, call)
					}
				}
				return true
			})
			if !intercepts {
				return true
			}
			for _, call := range matches {
				checked++
				for _, lit := range literalTerms(call.Args[0]) {
					t.Errorf("%s: a negative control matches the free text %s: name the assertion's message with a constant and use it in both", fset.Position(lit.Pos()), lit.Value)
				}
			}
			return true
		})
	}
	if checked < 1 {
		t.Fatalf("found %d MatchError calls in the specs written here, want the consistency detector's control at least: is the test looking in the right place?", checked)
	}
}

// sources are the Go files of dir but its tests, parsed.
func sources(t *testing.T, fset *token.FileSet, dir string) []*ast.File {
	t.Helper()
	files, err := gosource.Parse(fset, dir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func callee(c *ast.CallExpr) string {
	switch f := c.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

// literalTerms are the ContainSubstring("...") terms of a MatchError's
// matcher that name no constant: directly, in an Or, or first in an And.
func literalTerms(e ast.Expr) []*ast.BasicLit {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return nil
	}
	switch callee(call) {
	case "ContainSubstring":
		if len(call.Args) > 0 {
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				return []*ast.BasicLit{lit}
			}
		}
	case "Or":
		var out []*ast.BasicLit
		for _, a := range call.Args {
			out = append(out, literalTerms(a)...)
		}
		return out
	case "And":
		if len(call.Args) > 0 {
			return literalTerms(call.Args[0])
		}
	}
	return nil
}

// packageDir is this package's directory, found from this file's path:
// make e2e runs the suite's binary outside the package directory.
func packageDir() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Dir(file)
	}
	return "."
}
