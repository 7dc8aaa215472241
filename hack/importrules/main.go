// Command importrules checks the house's floors: which packages of this
// module may import which (make verify runs it). From the bottom up:
// cluster/ (the backends) and report/ (report data), then the harness
// (e2e/), then the scenarios, then the suites and the tools (hack/). A
// package imports only from its own floor or below, backends never import
// each other, and report/ stays plain data that tools read without linking
// the harness or a cluster.
//
//	go run ./hack/importrules [dir]
//
// It lists the packages under dir (default ".") with go list and prints
// each import that breaks a rule, with the rule's reason; it exits 1 if any
// does, 2 if go list fails or finds nothing.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// A rule forbids packages under From (paths relative to the module, "" for
// all) but not under Except to import anything under one of Not.
type rule struct {
	From   string
	Except []string
	Not    []string
	// Tests: the rule holds for the packages' test imports too.
	Tests bool
	Why   string
}

var rules = []rule{
	{From: "cluster", Not: []string{"e2e", "scenarios", "suites", "report", "hack", "integrations"}, Tests: true,
		Why: "cluster/ is plain Go the harness and the tools build on: it never imports the harness, the scenarios, the suites or the report"},
	{From: "report", Not: []string{"cluster", "e2e", "probe", "scenarios", "suites", "hack", "integrations"}, Tests: true,
		Why: "report/ is the reports as data: tools read it without linking the harness, client-go's informers or a backend"},
	{From: "cluster/local", Not: []string{"cluster/kind", "cluster/existing"},
		Why: "backends never import each other"},
	{From: "cluster/kind", Not: []string{"cluster/local", "cluster/existing"},
		Why: "backends never import each other"},
	{From: "cluster/existing", Not: []string{"cluster/local", "cluster/kind"},
		Why: "backends never import each other (tests may start a local cluster to point it at)"},
	{From: "cluster/profile", Not: []string{"cluster/local", "cluster/kind", "cluster/existing", "cluster/backends"}, Tests: true,
		Why: "flag profiles are what every backend reads (each renders them its own way): package profile imports none of them"},
	{From: "e2e", Not: []string{"scenarios", "suites", "hack", "integrations"}, Tests: true,
		Why: "the harness (e2e/) is what scenarios and suites build on: it never imports them"},
	{From: "e2e", Not: []string{"cluster/local", "cluster/kind", "cluster/existing", "cluster/backends"},
		Why: "the harness selects a backend by name among those registered (cluster.RegisterBackend): the suites import the backends, the harness names none (its tests may)"},
	{From: "probe", Not: []string{"cluster", "e2e", "scenarios", "suites", "hack", "integrations"},
		Why: "probe, the informer recorder, is plain Go any harness uses: it never imports the Ginkgo harness or a backend (its tests may start a cluster)"},
	{From: "scenarios", Not: []string{"suites", "hack", "integrations"}, Tests: true,
		Why: "scenarios are framework-neutral: the Ginkgo suites and the e2e-framework features call them, not the other way"},
	{From: "", Except: []string{"hack"}, Not: []string{"hack"}, Tests: true,
		Why: "hack/ holds tools: nothing outside it imports them"},
}

// pkg is what go list says of a package.
type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Module       *struct{ Path string }
}

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	pkgs, err := list(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "importrules:", err)
		os.Exit(2)
	}
	broken := check(pkgs)
	for _, b := range broken {
		fmt.Println(b)
	}
	if len(broken) > 0 {
		fmt.Printf("importrules: %d imports break the house's floors\n", len(broken))
		os.Exit(1)
	}
	fmt.Printf("importrules: %d packages, every import keeps to its floor\n", len(pkgs))
}

func list(dir string) ([]pkg, error) {
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports,Module", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list in %s: %v: %s", dir, err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list in %s: %v", dir, err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("go list found no package in %s", dir)
	}
	return pkgs, nil
}

// check returns each import of pkgs that breaks a rule, sorted.
func check(pkgs []pkg) []string {
	var broken []string
	for _, p := range pkgs {
		if p.Module == nil {
			continue
		}
		mod := p.Module.Path
		from, ok := rel(mod, p.ImportPath)
		if !ok {
			continue
		}
		for _, r := range rules {
			if !under(from, r.From) || anyUnder(from, r.Except) {
				continue
			}
			imports := p.Imports
			if r.Tests {
				imports = append(append(append([]string{}, imports...), p.TestImports...), p.XTestImports...)
			}
			for _, imp := range dedup(imports) {
				to, ok := rel(mod, imp)
				if !ok {
					continue
				}
				if anyUnder(to, r.Not) {
					broken = append(broken, fmt.Sprintf("%s imports %s: %s", from, to, r.Why))
				}
			}
		}
	}
	sort.Strings(broken)
	return dedup(broken)
}

// rel is path relative to the module mod ("" for its root).
func rel(mod, path string) (string, bool) {
	if path == mod {
		return "", true
	}
	r, ok := strings.CutPrefix(path, mod+"/")
	return r, ok
}

// under says whether path is dir or below it ("" holds everything).
func under(path, dir string) bool {
	return dir == "" || path == dir || strings.HasPrefix(path, dir+"/")
}

func anyUnder(path string, dirs []string) bool {
	for _, d := range dirs {
		if under(path, d) {
			return true
		}
	}
	return false
}

func dedup(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
