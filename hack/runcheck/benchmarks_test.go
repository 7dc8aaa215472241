package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/informer-conformance/informer-conformance/hack/runcheck/benchresult"
)

// writeResult writes r as a benchmark's results file in dir.
func writeResult(t *testing.T, dir, name string, r benchresult.Result, err error) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if werr := benchresult.Write(path, r, err); werr != nil {
		t.Fatal(werr)
	}
	return path
}

// TestBenchmarksPage: the header names the first start, the commit, the
// machine and its load then, and every command with the tool it ran; a
// section per command that ran, its table computed from the samples
// (median, nearest-rank p95, min, max), failed samples counted, a row or a
// command that could not run here named as not run with why, and a
// command without results file named too.
func TestBenchmarksPage(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
	start := benchresult.Result{
		Tool:    "hack/startbench -n 4 -warmup 1",
		Title:   "a ready control plane",
		Setup:   "kube-apiserver v1.37.2 and etcd v3.7.3 for every row",
		Started: t0.Add(time.Minute),
		Load:    "1.50 1.00 0.50",
		Rows: []benchresult.Row{
			{Name: "local", Notes: "from the template", Seconds: []float64{1.2, 0.9, 1.0, 1.1}},
			{Name: "envtest", Seconds: []float64{2.5, 2.8}, Failed: 2, FirstError: "etcd did not start"},
			{Name: "kwok", Notes: "kwokctl | binary runtime", NotRun: "no kubectl on PATH"},
		},
	}
	local := benchresult.Result{
		Tool: "hack/localbench -n 1", Title: "the local backend", Started: t0, Load: "0.52 0.31 0.20",
		Rows: []benchresult.Row{{Name: "etcd hard restart", Seconds: []float64{0.25}}},
	}
	kind := benchresult.Result{Tool: "hack/kind bench -apiservers 1", Title: "the kind backend", Started: t0.Add(time.Hour),
		NotRun: "no kind node image informer-conformance/kind-node:v1.37.2-r1 in Docker"}
	runs := []namedRun{
		{"make bench", writeResult(t, dir, "bench.json", local, nil)},
		{"make bench-start BENCH_N=4", writeResult(t, dir, "start.json", start, nil)},
		{"make kind-bench KIND_APISERVERS=1", writeResult(t, dir, "kind.json", kind, nil)},
		{"make other", filepath.Join(dir, "other.json")},
	}
	page, err := benchmarksPage(runs, "abc1234", machine{cores: 2, memory: "24 GiB"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# Benchmarks\n",
		"The benchmarks ran from 2030-01-02 03:04 UTC, the suite at commit abc1234, on a machine with 2 cores and 24 GiB, load average 0.52 0.31 0.20 at the start.",
		"- `make bench` (`hack/localbench -n 1`), from 03:04 UTC, load average 0.52 0.31 0.20.\n",
		"- `make bench-start BENCH_N=4` (`hack/startbench -n 4 -warmup 1`), from 03:05 UTC, load average 1.50 1.00 0.50.\n",
		"- `make kind-bench KIND_APISERVERS=1` (`hack/kind bench -apiservers 1`): not run: no kind node image informer-conformance/kind-node:v1.37.2-r1 in Docker.\n",
		"- `make other`: not run: no results at " + filepath.Join(dir, "other.json") + " (the command did not run, or ended before writing them).\n",
		"\n## `make bench-start BENCH_N=4`\n\nA ready control plane: kube-apiserver v1.37.2 and etcd v3.7.3 for every row.\n\n",
		"| local | 4 | 1.00 s | 1.20 s | 0.90 s | 1.20 s | from the template |\n",
		"| envtest | 2 | 2.50 s | 2.80 s | 2.50 s | 2.80 s | **2 failed, first: etcd did not start** |\n",
		"| kwok | 0 | - | - | - | - | **not run: no kubectl on PATH** kwokctl \\| binary runtime |\n",
		"| etcd hard restart | 1 | 0.25 s | 0.25 s | 0.25 s | 0.25 s |  |\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	for _, notWanted := range []string{"## `make kind-bench", "## `make other`", "Ended early", "Nothing was measured"} {
		if strings.Contains(page, notWanted) {
			t.Errorf("page has %q:\n%s", notWanted, page)
		}
	}
	if strings.Index(page, "## `make bench`") > strings.Index(page, "## `make bench-start") {
		t.Errorf("sections not in the commands' order:\n%s", page)
	}
}

// TestBenchmarksPageEndedEarly: a benchmark that failed part way shows its
// error and what it measured before.
func TestBenchmarksPageEndedEarly(t *testing.T) {
	dir := t.TempDir()
	r := benchresult.Result{Tool: "hack/localbench -n 2", Title: "the local backend", Started: time.Now(),
		Rows: []benchresult.Row{{Name: "start to ready", Seconds: []float64{1, 2}}}}
	path := writeResult(t, dir, "bench.json", r, os.ErrDeadlineExceeded)
	page, err := benchmarksPage([]namedRun{{"make bench", path}}, "", machine{cores: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		", on a machine with 4 cores.",
		"**Ended early**: i/o timeout. The table holds what it measured before.\n",
		"| start to ready | 2 | 1.00 s | 2.00 s | 1.00 s | 2.00 s |  |\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "commit") {
		t.Errorf("no commit known, yet the page names one:\n%s", page)
	}
}

// TestBenchmarksPageBadInput: no results at all, a file that is not a
// benchmark's results, and results that lack what they measured are
// errors naming the file; so are arguments that are no COMMAND=FILE and
// an unknown flag (usage, exit 2).
func TestBenchmarksPageBadInput(t *testing.T) {
	dir := t.TempDir()
	if _, err := benchmarksPage([]namedRun{{"make bench", filepath.Join(dir, "none.json")}}, "", machine{cores: 2}); err == nil ||
		!strings.Contains(err.Error(), "none of the benchmarks has results") {
		t.Errorf("no results at all: %v", err)
	}
	for name, content := range map[string]string{
		"garbage.json":  "| a | markdown table |",
		"unknown.json":  `{"tool": "x", "title": "y", "started": "2030-01-02T03:04:00Z", "samples": [1]}`,
		"untitled.json": `{"tool": "x", "started": "2030-01-02T03:04:00Z"}`,
		"unnamed.json":  `{"tool": "x", "title": "y", "started": "2030-01-02T03:04:00Z", "rows": [{"seconds": [1]}]}`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := benchmarksPage([]namedRun{{"make bench", path}}, "", machine{cores: 2})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "make bench") {
			t.Errorf("%s: got %v, want an error naming the command and the file", name, err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "adir.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := benchmarksPage([]namedRun{{"make bench", filepath.Join(dir, "adir.json")}}, "", machine{cores: 2}); err == nil {
		t.Error("an unreadable results file (a directory), yet a page")
	}

	out := filepath.Join(dir, "page.md")
	for _, args := range [][]string{
		{"-x", out, "make bench=" + filepath.Join(dir, "r.json")},
		{out},
		{out, "make bench"},
		{out, "=r.json"},
		{out, "make bench="},
	} {
		stderr, err := os.CreateTemp(dir, "stderr")
		if err != nil {
			t.Fatal(err)
		}
		if code := generatedPageMain("benchmarks", "RESULTS.json", args, os.Stdout, stderr, benchmarksPage); code != 2 {
			t.Errorf("runcheck benchmarks %q: exit %d, want 2", args, code)
		}
		msg, _ := os.ReadFile(stderr.Name())
		stderr.Close()
		if !strings.Contains(string(msg), "runcheck benchmarks") {
			t.Errorf("runcheck benchmarks %q: %q does not say what is wrong", args, msg)
		}
		if args[0] == "-x" && !strings.Contains(string(msg), "flag provided but not defined: -x") {
			t.Errorf("unknown flag: %q", msg)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("bad arguments, yet a page written")
	}
}

// TestBenchmarksMain writes the page where it is asked to, the command's
// own "=" kept in its name.
func TestBenchmarksMain(t *testing.T) {
	dir := t.TempDir()
	r := benchresult.Result{Tool: "hack/startbench -n 1 -warmup 1", Title: "a ready control plane", Started: time.Now(),
		Rows: []benchresult.Row{{Name: "local", Seconds: []float64{1}}}}
	path := writeResult(t, dir, "start.json", r, nil)
	out := filepath.Join(dir, "docs", "benchmarks.md")
	if code := generatedPageMain("benchmarks", "RESULTS.json", []string{out, "make bench-start BENCH_N=1=" + path}, os.Stdout, os.Stderr, benchmarksPage); code != 0 {
		t.Fatalf("exit %d", code)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "## `make bench-start BENCH_N=1`\n") {
		t.Errorf("page:\n%s", page)
	}
}

// TestBenchmarksPageNothingMeasured: a page whose every command could not
// run, or left no results, says so, without a table; that is no error
// while one of them said why.
func TestBenchmarksPageNothingMeasured(t *testing.T) {
	dir := t.TempDir()
	kind := benchresult.Result{Tool: "hack/kind bench -apiservers 1", Title: "the kind backend", Started: time.Now(),
		NotRun: "Docker is not installed."}
	page, err := benchmarksPage([]namedRun{
		{"make bench", filepath.Join(dir, "bench.json")},
		{"make kind-bench", writeResult(t, dir, "kind.json", kind, nil)},
	}, "abc1234", machine{cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"- `make bench`: not run: no results at ",
		"- `make kind-bench` (`hack/kind bench -apiservers 1`): not run: Docker is not installed.\n",
		"\nNothing was measured in this run: each command above says why, or that it left no results.\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "| measurement |") || strings.Contains(page, "\n## ") {
		t.Errorf("a table or section with nothing measured:\n%s", page)
	}
}
