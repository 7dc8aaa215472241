package scenarios

import (
	"go/ast"
	"go/token"
	"testing"

	"github.com/informer-conformance/informer-conformance/internal/gosource"
)

// MaxFunctionLines is the longest a function of package scenarios may be
// (its declaration to its closing brace, function literals included): a
// scenario's body reads as a page, its long steps named.
const MaxFunctionLines = 60

// TestScenarioFunctionsReadAsAPage: no function of the package runs past
// MaxFunctionLines; a longer one names its steps instead.
func TestScenarioFunctionsReadAsAPage(t *testing.T) {
	fset := token.NewFileSet()
	files, err := gosource.Parse(fset, ".")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, af := range files {
		ast.Inspect(af, func(n ast.Node) bool {
			var body *ast.BlockStmt
			name := "a function literal"
			switch x := n.(type) {
			case *ast.FuncDecl:
				body, name = x.Body, x.Name.Name
			case *ast.FuncLit:
				body = x.Body
			default:
				return true
			}
			if body == nil {
				return true
			}
			checked++
			from, to := fset.Position(n.Pos()), fset.Position(body.Rbrace)
			if lines := to.Line - from.Line + 1; lines > MaxFunctionLines {
				t.Errorf("%s:%d: %s runs %d lines, more than %d: name its steps", from.Filename, from.Line, name, lines, MaxFunctionLines)
			}
			return true
		})
	}
	if checked < 100 {
		t.Fatalf("checked %d functions: not the package", checked)
	}
}
