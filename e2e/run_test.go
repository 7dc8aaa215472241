package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/informer-conformance/informer-conformance/report"
)

// twin is one of the two sync-mode entries of a table whose texts are long
// enough that their first 100 characters are the same.
func twin(mode string) types.SpecReport {
	return types.SpecReport{
		ContainerHierarchyTexts: []string{"S2 stale HTTP/2 connection (network blackhole)",
			"detects the dead connection with the HTTP/2 health check and recovers every informer on a new one"},
		LeafNodeText:     mode,
		LeafNodeType:     types.NodeTypeIt,
		LeafNodeLocation: types.CodeLocation{FileName: "/src/suites/conformance/s2_blackhole.go", LineNumber: 89},
	}
}

func TestSpecDirNameTwinsDiffer(t *testing.T) {
	a, b := specDirName(twin("streaming list")), specDirName(twin("LIST+WATCH"))
	if a == b {
		t.Fatalf("the two sync-mode entries share the directory %s", a)
	}
	// The case the old names (the first 100 characters) got wrong.
	if full := report.SafeName(strings.Join(append(twin("").ContainerHierarchyTexts, ""), "_")); len(full) < 100 {
		t.Fatalf("not a twin case: the common prefix is %d characters", len(full))
	}
	for _, n := range []string{a, b} {
		if len(n) > 120 || report.SafeName(n) != n {
			t.Errorf("directory name %q: %d bytes or unsafe characters", n, len(n))
		}
		if !strings.HasPrefix(n, "S2-stale-HTTP-2-connection") {
			t.Errorf("directory name %q does not start with the spec's name", n)
		}
	}
	if !strings.Contains(a, "streaming-list") || !strings.Contains(b, "LIST-WATCH") {
		t.Errorf("the sync mode is not readable in %q and %q", a, b)
	}
	// Same text at two locations (a spec declared twice) differs too; the
	// same spec gets the same name in every process.
	moved := twin("streaming list")
	moved.LeafNodeLocation.LineNumber++
	if specDirName(moved) == a || specDirName(twin("streaming list")) != a {
		t.Errorf("the name is not a function of the spec's text and location")
	}
}

func TestSpecDirNameLimits(t *testing.T) {
	r := types.SpecReport{ContainerHierarchyTexts: []string{strings.Repeat("é/ä ", 200)}, LeafNodeText: strings.Repeat("x", 1000)}
	n := specDirName(r)
	if len(n) > 255 || report.SafeName(n) != n {
		t.Fatalf("directory name of %d bytes or with unsafe characters: %q", len(n), n)
	}
	if err := os.Mkdir(filepath.Join(t.TempDir(), n), 0o755); err != nil {
		t.Fatal(err)
	}
	if short := specDirName(types.SpecReport{LeafNodeText: "resyncs"}); !strings.HasPrefix(short, "resyncs-") {
		t.Errorf("a short name is kept whole: %q", short)
	}
}

// TestConfigRefusesBadValues: the run's configuration refuses, before
// any spec, a relative path (KUBECONFIG may list several), a flag that is
// not true or false and a count that is no positive number, each named
// with what it means; absolute paths and good values pass.
func TestConfigRefusesBadValues(t *testing.T) {
	env := map[string]string{EnvBackend: "existing"}
	getenv := func(name string) string { return env[name] }
	if _, err := ReadConfig(getenv); err != nil {
		t.Fatalf("nothing set: %v", err)
	}
	env["INFORMER_CONFORMANCE_ARTIFACTS"] = "/abs/out"
	env["KUBECONFIG"] = "/abs/a.yaml" + string(os.PathListSeparator) + "kc.yaml"
	env[EnvClusterPerSpec] = "yes"
	_, err := ReadConfig(getenv)
	if err == nil {
		t.Fatal("relative KUBECONFIG and a flag of yes accepted")
	}
	for _, want := range []string{"relative path kc.yaml", "KUBECONFIG", "package directory", EnvClusterPerSpec + `="yes": want true or false`, "client-side specs too"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "/abs/out") {
		t.Errorf("error %q names an absolute path", err)
	}
	env = map[string]string{EnvBackend: "local", "INFORMER_CONFORMANCE_ASSETS": "bin", EnvSpares: "true"}
	if _, err := ReadConfig(getenv); err == nil || !strings.Contains(err.Error(), "INFORMER_CONFORMANCE_ASSETS") {
		t.Errorf("a relative assets directory on the local backend: %v", err)
	}
	rc, err := ReadConfig(func(name string) string { return map[string]string{EnvSpares: "true"}[name] })
	if err != nil || !rc.Env.Flag(EnvSpares) || rc.Backend.Name != DefaultBackend {
		t.Errorf("spares on the default backend: %+v, %v", rc.Env, err)
	}
}

func TestPrepareRunEmptiesTheSuitesArtifacts(t *testing.T) {
	for _, name := range allVarNames() {
		setenv(t, name, "")
	}
	root := t.TempDir()
	setenv(t, "INFORMER_CONFORMANCE_ARTIFACTS", root)
	old := filepath.Join(filepath.Join(SuiteArtifactsDir(), specDirName(twin("LIST+WATCH"))), "probe-pods.json")
	other := filepath.Join(root, "other-suite", "spec", "kube-apiserver-0.log")
	f := reportFiles("s")
	jsonPath, mdPath, summaryPath, htmlPath := f.JSON, f.Markdown, f.Summary, f.HTML
	otherReport := reportFiles("other").JSON
	// The layout before per-suite directories (<root>/p<N>/<spec>), and a p<N>
	// of some other tool's that shares the root.
	oldLayout := []string{filepath.Join(root, "p1", "S1-spec", "probe-pods.json"), filepath.Join(root, "p2", "backend-local", "etcd.log")}
	notOurs := filepath.Join(root, "p3", "notes.txt")
	for _, p := range append([]string{old, other, jsonPath, mdPath, summaryPath, htmlPath, otherReport, notOurs}, oldLayout...) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("an earlier run"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if err := PrepareRun(types.Report{SuiteDescription: "s", SuiteConfig: types.SuiteConfig{DryRun: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("a dry run removed %s: %v", old, err)
	}

	if err := PrepareRun(types.Report{SuiteDescription: "s"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range append([]string{old, jsonPath, mdPath, summaryPath, htmlPath}, filepath.Join(root, "p1"), filepath.Join(root, "p2")) {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s of an earlier run is still there (%v)", p, err)
		}
	}
	for _, p := range []string{other, otherReport, notOurs} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("another suite's %s went: %v", p, err)
		}
	}

	setenv(t, "INFORMER_CONFORMANCE_ARTIFACTS", "out")
	if err := PrepareRun(types.Report{SuiteDescription: "s"}); err == nil || !strings.Contains(err.Error(), "relative path") {
		t.Errorf("relative artifacts directory: %v", err)
	}
}
