package main

import (
	"slices"
	"strings"
	"testing"
)

const mod = "example.com/m"

func p(path string, imports []string, tests ...string) pkg {
	q := pkg{ImportPath: mod + "/" + path, Module: &struct{ Path string }{mod}}
	for _, i := range imports {
		q.Imports = append(q.Imports, mod+"/"+i)
	}
	for _, i := range tests {
		q.XTestImports = append(q.XTestImports, mod+"/"+i)
	}
	return q
}

// TestCheckFindsEveryBrokenFloor is the check's negative control: a house
// that breaks each rule once is reported once per broken import, and the
// imports the rules allow are not.
func TestCheckFindsEveryBrokenFloor(t *testing.T) {
	pkgs := []pkg{
		// Allowed.
		p("cluster/kind", []string{"cluster", "cluster/kind/docker", "cluster/binaries", "cluster/profile"}),
		p("cluster/local/sub", []string{"cluster/profile"}),
		p("cluster/profile", []string{"fixtures"}),
		p("cluster/existing", []string{"cluster"}, "cluster/local", "cluster/local/localtest"),
		p("e2e", []string{"cluster", "report", "probe"}, "cluster/backends"),
		p("probe", []string{"report"}, "cluster/local"),
		p("scenarios", []string{"e2e", "cluster"}),
		p("suites/conformance", []string{"scenarios", "e2e"}),
		p("hack/matrix", []string{"report", "hack/matrix/internal"}),
		{ImportPath: "k8s.io/client-go/rest", Imports: []string{"example.com/m/e2e"}},
		// Broken, one per rule.
		p("cluster/local", []string{"cluster", "e2e"}),
		p("report", []string{"probe"}),
		p("probe/sub", []string{"e2e"}),
		p("cluster/kind/nodeimage", []string{"cluster/local"}),
		p("cluster/profile/sub", nil, "cluster/kind"),
		p("e2e/httpfault", nil, "scenarios"),
		p("e2e/sub", []string{"cluster/kind"}),
		p("scenarios/sub", []string{"suites/conformance"}),
		p("suites/smoke", []string{"hack/matrix"}),
	}
	got := check(pkgs, rulesFor([]string{"cluster/existing", "cluster/kind", "cluster/local"}))
	want := []string{
		"cluster/kind/nodeimage imports cluster/local",
		"cluster/local imports e2e",
		"cluster/profile/sub imports cluster/kind",
		"e2e/httpfault imports scenarios",
		"e2e/sub imports cluster/kind",
		"probe/sub imports e2e",
		"report imports probe",
		"scenarios/sub imports suites/conformance",
		"suites/smoke imports hack/matrix",
	}
	var heads []string
	for _, g := range got {
		heads = append(heads, strings.SplitN(g, ":", 2)[0])
	}
	if !slices.Equal(heads, want) {
		t.Errorf("check found\n%s\nwant the imports\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestThisModuleKeepsItsFloors runs the check on this module.
func TestThisModuleKeepsItsFloors(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: lists the module's packages with go list")
	}
	pkgs, err := list("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages, want this module's (20 or more)", len(pkgs))
	}
	backends, err := backendsOf(pkgs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cluster/existing", "cluster/kind", "cluster/local"}; !slices.Equal(backends, want) {
		t.Errorf("backends %v, want %v", backends, want)
	}
	for _, b := range check(pkgs, rulesFor(backends)) {
		t.Error(b)
	}
}

// TestBackendsOf: the backends are what cluster/backends imports of the
// module's cluster/ packages; a module without it, or one importing none,
// is an error.
func TestBackendsOf(t *testing.T) {
	got, err := backendsOf([]pkg{
		p("cluster/local", nil),
		p("cluster/backends", []string{"cluster/zeta", "cluster/alpha"}),
	})
	if err != nil || !slices.Equal(got, []string{"cluster/alpha", "cluster/zeta"}) {
		t.Errorf("backendsOf = %v, %v", got, err)
	}
	// A new backend gets the rules at once: alpha may not import zeta.
	broken := check([]pkg{p("cluster/alpha", []string{"cluster/zeta"})}, rulesFor(got))
	if len(broken) != 1 || !strings.HasPrefix(broken[0], "cluster/alpha imports cluster/zeta: backends never import each other") {
		t.Errorf("a backend importing another: %v", broken)
	}
	if _, err := backendsOf([]pkg{p("cluster/local", nil)}); err == nil {
		t.Error("no cluster/backends, no error")
	}
	if _, err := backendsOf([]pkg{p("cluster/backends", []string{"report"})}); err == nil {
		t.Error("cluster/backends importing no backend, no error")
	}
}
