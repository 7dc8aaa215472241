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
	"slices"
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

// backendsPkg registers every backend of the module: its imports of the
// module's own packages are the backends (backendsOf).
const backendsPkg = "cluster/backends"

// rulesFor are the rules for a module whose backends are backends (their
// packages, relative to the module, as backendsPkg imports them).
func rulesFor(backends []string) []rule {
	rs := []rule{
		{From: "cluster", Not: []string{"e2e", "scenarios", "suites", "report", "hack", "integrations"}, Tests: true,
			Why: "cluster/ is plain Go the harness and the tools build on: it never imports the harness, the scenarios, the suites or the report"},
		{From: "internal/processenv", Not: []string{"cluster", "report", "e2e", "probe", "scenarios", "suites", "hack", "integrations"}, Tests: true,
			Why: "the process's environment is the ground floor: internal/processenv imports nothing of the module (probe/watchlistdetector, which imports it, initialises before client-go)"},
		{From: "internal/lines", Not: []string{"cluster", "report", "e2e", "probe", "scenarios", "suites", "hack", "integrations", "internal/processenv"}, Tests: true,
			Why: "the end of a text is the ground floor too: every package and tool may quote a command's last lines with it"},
		{From: "internal/gosource", Not: []string{"cluster", "report", "e2e", "probe", "scenarios", "suites", "hack", "integrations", "internal/processenv", "internal/lines"}, Tests: true,
			Why: "parsing a package's files is the ground floor of the tests that read the module's own code"},
		{From: "report", Not: []string{"cluster", "e2e", "probe", "scenarios", "suites", "hack", "integrations"}, Tests: true,
			Why: "report/ is the reports as data: tools read it without linking the harness, client-go's informers or a backend"},
	}
	for _, b := range backends {
		others := slices.DeleteFunc(slices.Clone(backends), func(o string) bool { return o == b })
		rs = append(rs, rule{From: b, Not: others,
			Why: "backends never import each other (their tests may: the existing backend's start a local cluster to point it at)"})
	}
	withRegistry := append(slices.Clone(backends), backendsPkg)
	return append(rs,
		rule{From: "cluster/profile", Not: withRegistry, Tests: true,
			Why: "flag profiles are what every backend reads (each renders them its own way): package profile imports none of them"},
		rule{From: "cluster/pool", Not: withRegistry, Tests: true,
			Why: "the pool keeps any backend's clusters (cluster.Backend): it imports none of them"},
		rule{From: "e2e", Not: []string{"scenarios", "suites", "hack", "integrations"}, Tests: true,
			Why: "the harness (e2e/) is what scenarios and suites build on: it never imports them"},
		rule{From: "e2e", Not: withRegistry,
			Why: "the harness selects a backend by name among those registered (cluster.RegisterBackend): the suites import the backends, the harness names none (its tests may)"},
		rule{From: "probe", Not: []string{"cluster", "e2e", "scenarios", "suites", "hack", "integrations"},
			Why: "probe, the informer recorder, is plain Go any harness uses: it never imports the Ginkgo harness or a backend (its tests may start a cluster)"},
		rule{From: "scenarios", Not: []string{"suites", "hack", "integrations"}, Tests: true,
			Why: "scenarios are framework-neutral: the Ginkgo suites and the e2e-framework features call them, not the other way"},
		rule{From: "", Except: []string{"hack"}, Not: []string{"hack"}, Tests: true,
			Why: "hack/ holds tools: nothing outside it imports them"},
	)
}

// backendsOf are the backends backendsPkg registers: its imports of the
// module's packages under cluster/, sorted; an error when the module has
// no such package or it imports none.
func backendsOf(pkgs []pkg) ([]string, error) {
	for _, p := range pkgs {
		if p.Module == nil {
			continue
		}
		if r, ok := rel(p.Module.Path, p.ImportPath); !ok || r != backendsPkg {
			continue
		}
		var out []string
		for _, imp := range p.Imports {
			if to, ok := rel(p.Module.Path, imp); ok && under(to, "cluster") {
				out = append(out, to)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s imports no backend of the module", backendsPkg)
		}
		slices.Sort(out)
		return out, nil
	}
	return nil, fmt.Errorf("no package %s: the backends are read from its imports", backendsPkg)
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
	backends, err := backendsOf(pkgs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "importrules:", err)
		os.Exit(2)
	}
	broken := check(pkgs, rulesFor(backends))
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

// check returns each import of pkgs that breaks one of rules, sorted.
func check(pkgs []pkg, rules []rule) []string {
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
