package scenarios

import (
	"context"
	"errors"
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/internal/gosource"
)

// TestCatalogue: every scenario of docs/scenarios.md (a heading "## S<n>
// ...") has a value, every value a catalogue entry; each has a spec that
// is not a negative control, and a negative control (a test that cannot
// fail is a defect).
func TestCatalogue(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "docs", "scenarios.md"))
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("the catalogue is not here (the module outside its repository, as a dependency): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var catalogued []string
	for _, m := range regexp.MustCompile(`(?m)^## (S\d+) `).FindAllStringSubmatch(string(doc), -1) {
		catalogued = append(catalogued, m[1])
	}
	if len(catalogued) < 34 {
		t.Fatalf("docs/scenarios.md names %d scenarios, want S1-S34 at least", len(catalogued))
	}
	all := All()
	valued := map[string]bool{}
	controls := map[string]bool{}
	for _, sc := range all {
		valued[sc.ID] = true
		if !slices.Contains(catalogued, sc.ID) {
			t.Errorf("%s (%s) has no entry in docs/scenarios.md", sc.Name(), sc.file)
		}
		if !slices.ContainsFunc(sc.Specs, func(s Spec) bool { return !s.Control() }) {
			t.Errorf("%s has negative controls alone", sc.Name())
		}
		controls[sc.ID] = controls[sc.ID] || slices.ContainsFunc(sc.Specs, Spec.Control)
	}
	for _, id := range catalogued {
		switch {
		case !valued[id]:
			t.Errorf("docs/scenarios.md catalogues %s, which has no value (scenarios.Register)", id)
		case !controls[id]:
			t.Errorf("%s has no negative control", id)
		}
	}
}

// TestCatalogueNamesValues: each scenario's catalogue entry names its
// value and file (**Value**) and carries its labels (**Labels**): the
// scenario label, its capabilities, disruptive, slow where every spec is.
func TestCatalogueNamesValues(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	doc, err := os.ReadFile(filepath.Join(dir, "..", "docs", "scenarios.md"))
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("the catalogue is not here (the module outside its repository, as a dependency): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	for _, part := range strings.Split(string(doc), "\n## ")[1:] {
		if m := regexp.MustCompile(`^(S\d+) `).FindStringSubmatch(part); m != nil {
			sections[m[1]] += part
		}
	}
	values := registeredValues(t, dir)
	if len(values) != len(All()) {
		t.Fatalf("found %d registered values in the sources, All has %d: is the test reading the right files?", len(values), len(All()))
	}
	for _, sc := range All() {
		sec := sections[sc.ID]
		v, ok := values[sc.Name()]
		if !ok {
			t.Errorf("%s: no variable found holding its value", sc.Name())
			continue
		}
		value := regexp.MustCompile(`(?m)^- \*\*Value\*\*:[^\n]*(\n  [^\n]*)*`).FindString(sec)
		for _, want := range []string{"`scenarios." + v.name + "`", "`scenarios/" + filepath.Base(v.file) + "`"} {
			if !strings.Contains(value, want) {
				t.Errorf("docs/scenarios.md, %s: the **Value** line does not name %s", sc.ID, want)
			}
		}
		labels := regexp.MustCompile(`(?m)^- \*\*Labels\*\*:[^\n]*(\n  [^\n]*)*`).FindString(sec)
		want := slices.Clone(sc.Labels)
		for _, c := range sc.Needs {
			want = append(want, "capability:"+c.Name)
		}
		if sc.Disruptive {
			want = append(want, "disruptive")
		}
		if sc.Speed != Fast {
			want = append(want, string(Slow))
		}
		for _, l := range want {
			if !strings.Contains(labels, "`"+l+"`") {
				t.Errorf("docs/scenarios.md, %s: the **Labels** line lacks `%s` (%s's value has it)", sc.ID, l, sc.Name())
			}
		}
	}
}

// TestCatalogueNamesWhatExists: every `scenarios.X` the catalogue names is
// a declaration of this package, and every file or directory it names
// (`scenarios/s1_apiserver_restart.go`) is in the repository: a rename
// that leaves the catalogue behind fails here.
func TestCatalogueNamesWhatExists(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	root := filepath.Join(dir, "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "scenarios.md"))
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("the catalogue is not here (the module outside its repository, as a dependency): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, f := range parsed(t, token.NewFileSet(), dir) {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					declared[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch spec := spec.(type) {
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							declared[n.Name] = true
						}
					case *ast.TypeSpec:
						declared[spec.Name.Name] = true
					}
				}
			}
		}
	}
	named := 0
	for _, m := range regexp.MustCompile("`scenarios\\.([A-Z][A-Za-z0-9]*)").FindAllStringSubmatch(string(doc), -1) {
		named++
		if !declared[m[1]] {
			t.Errorf("docs/scenarios.md names scenarios.%s, which package scenarios does not declare", m[1])
		}
	}
	for _, m := range regexp.MustCompile("`((?:scenarios|suites|e2e|cluster|probe|report|hack|fixtures|integrations|docs)/[A-Za-z0-9_./-]+)`").FindAllStringSubmatch(string(doc), -1) {
		named++
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			t.Errorf("docs/scenarios.md names %s: %v", m[1], err)
		}
	}
	if named < 50 {
		t.Fatalf("found %d names in docs/scenarios.md, want 50 or more: is the test reading the catalogue?", named)
	}
}

// parsed are the package's Go files but its tests, parsed.
func parsed(t *testing.T, fset *token.FileSet, dir string) []*ast.File {
	t.Helper()
	files, err := gosource.Parse(fset, dir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestControlsNameTheirAssertions: a negative control proves an assertion
// can fail by matching its message, so both use one named constant: a
// control matching free text keeps passing while the assertion it was
// written against is reworded into something else. Each Fails term of a
// value is a constant, never a literal string.
func TestControlsNameTheirAssertions(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	fset := token.NewFileSet()
	checked := 0
	for _, f := range parsed(t, fset, filepath.Dir(file)) {
		ast.Inspect(f, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			if key, ok := kv.Key.(*ast.Ident); !ok || key.Name != "Fails" {
				return true
			}
			checked++
			lit, ok := kv.Value.(*ast.CompositeLit)
			if !ok {
				t.Errorf("%s: Fails is not a literal list of the assertions' constants", fset.Position(kv.Pos()))
				return true
			}
			for _, e := range lit.Elts {
				if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
					t.Errorf("%s: a negative control matches the free text %s: name the assertion's message with a constant and use it in both", fset.Position(b.Pos()), b.Value)
				}
			}
			return true
		})
	}
	if controls := countControls(); checked < controls || controls < 60 {
		t.Fatalf("checked %d Fails of %d negative controls (want 60 or more): is the test reading the right files?", checked, controls)
	}
}

// countControls counts the registered values' negative controls that
// match Fails.
func countControls() int {
	n := 0
	for _, sc := range All() {
		for _, s := range sc.Specs {
			if len(s.Fails) > 0 {
				n++
			}
		}
	}
	return n
}

// registered is a variable holding a registered value, and its file.
type registered struct{ name, file string }

// registeredValues are the package's variables whose value is a
// Register call, by the registered scenario's name (ID and title, as
// written in the call: literals).
func registeredValues(t *testing.T, dir string) map[string]registered {
	t.Helper()
	out := map[string]registered{}
	fset := token.NewFileSet()
	for _, f := range parsed(t, fset, dir) {
		name := fset.Position(f.Pos()).Filename
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, v := range vs.Values {
					call, ok := v.(*ast.CallExpr)
					if !ok || len(call.Args) != 1 {
						continue
					}
					if fn, ok := call.Fun.(*ast.Ident); !ok || fn.Name != "Register" {
						continue
					}
					lit, ok := call.Args[0].(*ast.CompositeLit)
					if !ok {
						continue
					}
					fields := map[string]string{}
					for _, e := range lit.Elts {
						kv, ok := e.(*ast.KeyValueExpr)
						if !ok {
							continue
						}
						key, _ := kv.Key.(*ast.Ident)
						if b, ok := kv.Value.(*ast.BasicLit); ok && key != nil && b.Kind == token.STRING {
							fields[key.Name], _ = strconv.Unquote(b.Value)
						}
					}
					out[fields["ID"]+" "+fields["Title"]] = registered{vs.Names[i].Name, name}
				}
			}
		}
	}
	return out
}

// TestAllInOrder: All is in catalogue order, a scenario's parts together.
func TestAllInOrder(t *testing.T) {
	all := All()
	for i := 1; i < len(all); i++ {
		if idNumber(all[i-1].ID) > idNumber(all[i].ID) {
			t.Errorf("%s before %s", all[i-1].Name(), all[i].Name())
		}
	}
}

// TestCheck: the shapes Register refuses.
func TestCheck(t *testing.T) {
	run := func(context.Context, e2e.Setup, Input) {}
	for _, tc := range []struct {
		name string
		s    Scenario
		want string
	}{
		{"no ID", Scenario{Title: "t", Specs: []Spec{{Text: "x", Run: run}}}, "want an ID"},
		{"no spec", Scenario{ID: "S99", Title: "t"}, "no spec"},
		{"both", Scenario{ID: "S99", Title: "t", Specs: []Spec{{Text: "x", Run: run, Entries: []Entry{{Run: run}}}}}, "not both or neither"},
		{"neither", Scenario{ID: "S99", Title: "t", Specs: []Spec{{Text: "x"}}}, "not both or neither"},
		{"control without reason", Scenario{ID: "S99", Title: "t", Specs: []Spec{{Text: "x", Run: run, Fails: []string{"f"}}}}, "Because"},
		{"broken client, no control", Scenario{ID: "S99", Title: "t", Specs: []Spec{{Text: "x", Run: run, Client: func(c *rest.Config) *rest.Config { return c }}}}, "belongs to a negative control"},
		{"entry without body", Scenario{ID: "S99", Title: "t", Specs: []Spec{{Text: "x", Entries: []Entry{{Name: "e"}}}}}, "without a body"},
	} {
		err := tc.s.check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	if err := (Scenario{ID: "S99", Title: "t", Specs: []Spec{{Text: "x", Run: run}}}).check(); err != nil {
		t.Errorf("a sound scenario: %v", err)
	}
}
