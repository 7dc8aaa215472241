package e2e

import (
	"go/ast"
	"go/token"
	"sort"
	"testing"

	"github.com/informer-conformance/informer-conformance/internal/gosource"
)

// packageVars are the package-level variables e2e may have, each with why
// it is one: values set once (a table, a pattern, an exported value) or
// the one explicit place of what is the process's. A spec's state is its
// Env's; the run's (configuration, hooks, pools) its Harness's.
var packageVars = map[string]string{
	"process":                    "the one place of what is the process's (process.go): its holder, what it knows of itself",
	"theHarness":                 "the run value of the Ginkgo suites and RunSpecs (NewHarness(os.Getenv)); a front end may bring its own",
	"declared":                   "the registry of variables packages built on the harness declare from init (DeclareVars)",
	"declaredMu":                 "declared's lock",
	"HarnessVars":                "a table: the harness's own variables",
	"dumpNameChars":              "a pattern",
	"oldProcessDir":              "a pattern",
	"StreamingList":              "an exported value: a sync mode",
	"ListWatch":                  "an exported value: a sync mode",
	"CapabilityAPIServerRestart": "an exported value: a capability",
	"CapabilityEtcdCompaction":   "an exported value: a capability",
	"CapabilityEtcdSnapshot":     "an exported value: a capability",
	"CapabilityCertRotation":     "an exported value: a capability",
	"CapabilityHA":               "an exported value: a capability",
	"CapabilityAPIServerUpgrade": "an exported value: a capability",
}

// TestPackageStateIsDeclared: a new package-level variable of e2e is a
// decision, said here with its reason; the harness's state belongs to its
// Harness or a spec's Env, not to the package.
func TestPackageStateIsDeclared(t *testing.T) {
	fset := token.NewFileSet()
	files, err := gosource.Parse(fset, ".")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, af := range files {
		for _, d := range af.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, sp := range g.Specs {
				for _, n := range sp.(*ast.ValueSpec).Names {
					if n.Name == "_" {
						continue
					}
					found[n.Name] = true
					if _, ok := packageVars[n.Name]; !ok {
						t.Errorf("%s: package-level variable %s: the harness's state is its Harness's or a spec's Env's; if it must be the package's, add it to packageVars with why", fset.Position(n.Pos()), n.Name)
					}
				}
			}
		}
	}
	var gone []string
	for n := range packageVars {
		if !found[n] {
			gone = append(gone, n)
		}
	}
	sort.Strings(gone)
	if len(gone) > 0 {
		t.Errorf("packageVars names variables e2e no longer has: %v", gone)
	}
}
