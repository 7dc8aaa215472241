package conformance

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/informer-conformance/informer-conformance/e2e"
)

// offered is a label filter, or a single label, that a document offers a
// downstream, and where.
type offered struct {
	where, filter string
}

// TestDocumentedLabelsSelectSpecs: every label filter and label the docs a
// downstream reads offer (docs/downstream.md, the README's labels table and
// its examples, the reusable workflow's default label filter and its
// example caller's) selects at least one spec of this package, the suite a
// downstream imports: a label of this repository's other suites (smoke)
// would otherwise run nothing there. The specs and their labels come from a
// dry run of this test binary.
func TestDocumentedLabelsSelectSpecs(t *testing.T) {
	specs := specLabels(t)
	root := filepath.Join(packageDir(), "..", "..")
	var all []offered
	for _, file := range []string{"docs/downstream.md", "README.md"} {
		all = append(all, filtersIn(file, read(t, root, file))...)
	}
	all = append(all, labelsTableIn(t, read(t, root, "README.md"))...)
	for _, wf := range []struct {
		file string
		re   *regexp.Regexp
	}{
		{".github/workflows/downstream.yaml", regexp.MustCompile(`label-filter:\s*\n(?:[ \t]+[a-z-]+:.*\n)*?[ \t]+default:\s*"?([^"\n]+)"?`)},
		{".github/workflows/downstream-example.yaml", regexp.MustCompile(`(?m)^\s+label-filter:\s*(\S.*)$`)},
	} {
		m := wf.re.FindStringSubmatch(read(t, root, wf.file))
		if m == nil {
			t.Errorf("%s: no label-filter found", wf.file)
			continue
		}
		all = append(all, offered{wf.file + " (label-filter)", strings.TrimSpace(m[1])})
	}
	if len(all) < 15 {
		t.Fatalf("found only %d label filters and labels in the docs, want at least 15: the extraction missed them: %v", len(all), all)
	}
	for _, o := range all {
		match, err := types.ParseLabelFilter(o.filter)
		if err != nil {
			t.Errorf("%s offers the label filter %q, which does not parse: %v", o.where, o.filter, err)
			continue
		}
		n := 0
		for _, labels := range specs {
			if match(labels) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s offers %q, which selects none of the %d specs of suites/conformance (the suite a downstream imports)", o.where, o.filter, len(specs))
		}
	}
}

func read(t *testing.T, root, file string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var (
	// LABEL_FILTER='a && b', --label-filter='a', -ginkgo.label-filter=a,
	// label-filter: a.
	quotedFilter = regexp.MustCompile(`(?:LABEL_FILTER|label-filter)[=:] ?'([^']+)'`)
	bareFilter   = regexp.MustCompile("(?:LABEL_FILTER|label-filter)=([^\\s'`)]+)")
	// "`LABEL_FILTER`, default `!slow`"; the workflow's inputs table.
	defaultFilter = regexp.MustCompile("`LABEL_FILTER`, default `([^`]+)`")
	inputRow      = regexp.MustCompile("\\| `label-filter` \\| `([^`]+)` \\|")
	// "the `release-sensitive` specs", "the `long` and `extra-stack` specs".
	labelledSpecs = regexp.MustCompile("`([a-z][a-z0-9:-]*)`(?:\\s+and\\s+`([a-z][a-z0-9:-]*)`)?\\s+specs")
	// A label as a table cell names it.
	labelToken = regexp.MustCompile("`([A-Za-z][A-Za-z0-9:-]*)`")
)

// filtersIn are the label filters and labels file's text offers.
func filtersIn(file, text string) []offered {
	var out []offered
	add := func(f string) {
		f = strings.ReplaceAll(f, `\|`, "|") // a pipe escaped in a markdown table
		if f != "..." {
			out = append(out, offered{file, f})
		}
	}
	for _, re := range []*regexp.Regexp{quotedFilter, bareFilter, defaultFilter, inputRow} {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			add(m[1])
		}
	}
	for _, m := range labelledSpecs.FindAllStringSubmatch(text, -1) {
		for _, l := range m[1:] {
			if l != "" {
				add(l)
			}
		}
	}
	return out
}

// labelsTableIn are the labels the README's "Labels at a glance" table
// names in its first two columns (what a label marks): each one a label of
// the importable suite, but for one the table says is this repository's
// own; a pattern (capability:*, stack:<name>) is not a label.
func labelsTableIn(t *testing.T, readme string) []offered {
	_, table, ok := strings.Cut(readme, "\n## Labels at a glance\n")
	if !ok {
		t.Fatal("README.md has no section Labels at a glance")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var out []offered
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(strings.ReplaceAll(line, `\|`, ""), "|")
		if len(cells) < 4 || strings.HasPrefix(cells[1], "---") || strings.TrimSpace(cells[1]) == "label" {
			continue
		}
		for _, cell := range cells[1:3] {
			for _, loc := range labelToken.FindAllStringSubmatchIndex(cell, -1) {
				label := cell[loc[2]:loc[3]]
				if strings.HasPrefix(cell[loc[1]:], " (this repository's own") {
					continue
				}
				out = append(out, offered{"README.md's labels table", label})
			}
		}
	}
	return out
}

// specLabels are the labels of every spec of this package, from a dry run
// of its test binary (TestConformance through e2e.RunSpecs): one entry per
// spec.
func specLabels(t *testing.T) [][]string {
	t.Helper()
	var labels [][]string
	for _, s := range dryRunSpecs(t) {
		labels = append(labels, s.labels)
	}
	return labels
}

// drySpec is a spec of a dry run: its full text and its labels.
type drySpec struct {
	text   string
	labels []string
}

// dryRunSpecs are the specs of this package, from a dry run of its test
// binary, with their labels (the suite's among them).
func dryRunSpecs(t *testing.T) []drySpec {
	t.Helper()
	dir := t.TempDir()
	reportPath := filepath.Join(dir, "report.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestConformance$", "-ginkgo.dry-run", "-ginkgo.no-color", "-ginkgo.json-report="+reportPath)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "INFORMER_CONFORMANCE") && !strings.HasPrefix(kv, "GINKGO_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "INFORMER_CONFORMANCE=1", "INFORMER_CONFORMANCE_ARTIFACTS="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dry run of the suite: %v\n%s", err, out)
	}
	data, err := os.ReadFile(reportPath)
	if err != nil {
		t.Fatal(err)
	}
	var reports []types.Report
	if err := json.Unmarshal(data, &reports); err != nil {
		t.Fatal(err)
	}
	var specs []drySpec
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if s.LeafNodeType == types.NodeTypeIt {
				specs = append(specs, drySpec{s.FullText(), append(s.Labels(), r.SuiteLabels...)})
			}
		}
	}
	if len(specs) < 100 {
		t.Fatalf("the dry run listed %d specs, want the suite's hundreds", len(specs))
	}
	return specs
}

// TestSpecsCarryTheirModesLabels: the sync mode flows one way, from the
// scenario's value through the adapter (its entries' decorations) to the
// Env, and nothing reads it back from Ginkgo; so the suite's specs are
// checked here instead: a spec whose text names a sync mode carries that
// mode's label and not the other's, so that --label-filter=sync:list runs
// exactly the LIST+WATCH specs.
func TestSpecsCarryTheirModesLabels(t *testing.T) {
	named := 0
	for _, s := range dryRunSpecs(t) {
		streaming := strings.Contains(s.text, ", "+e2e.StreamingList.Name) || strings.HasSuffix(s.text, " "+e2e.StreamingList.Name)
		listWatch := strings.Contains(s.text, ", "+e2e.ListWatch.Name) || strings.HasSuffix(s.text, " "+e2e.ListWatch.Name)
		if streaming == listWatch {
			continue // no mode named, or both (a text that compares them)
		}
		named++
		want, other := e2e.LabelStreamingList, e2e.LabelListWatch
		if listWatch {
			want, other = other, want
		}
		if !slices.Contains(s.labels, want) || slices.Contains(s.labels, other) {
			t.Errorf("%q: labels %v, want %s and not %s", s.text, s.labels, want, other)
		}
	}
	if named < 100 {
		t.Errorf("only %d specs name a sync mode in their text, want the suite's hundreds: the check missed them", named)
	}
}
