// Command docscheck fails when the repository's documentation names what
// is not there: a relative markdown link to a missing file, or a repository
// path in backquotes (`scenarios/s1_apiserver_restart.go`,
// `cluster/kind/`) that does not exist. make verify runs it over every
// tracked markdown file but the generated run records (docs/verdict-runs).
//
//	go run ./hack/docscheck [file.md ...]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// roots are the top-level directories whose paths a document may name.
var roots = []string{"cluster", "docs", "e2e", "fixtures", "hack", "integrations", "probe", "report", "scenarios", "suites", ".github", ".ci"}

var (
	link = regexp.MustCompile(`\]\(([^)\s#]+)(#[^)]*)?\)`)
	code = regexp.MustCompile("`((?:" + strings.Join(quoteAll(roots), "|") + `)/[A-Za-z0-9_./-]*)` + "`")
)

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, r := range s {
		out[i] = regexp.QuoteMeta(r)
	}
	return out
}

func main() {
	files := os.Args[1:]
	if len(files) == 0 {
		out, err := exec.Command("git", "ls-files", "*.md").Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "docscheck: git ls-files:", err)
			os.Exit(2)
		}
		for _, f := range strings.Fields(string(out)) {
			if !strings.HasPrefix(f, "docs/verdict-runs/") {
				files = append(files, f)
			}
		}
	}
	if len(files) == 0 {
		fmt.Fprintln(os.Stderr, "docscheck: no markdown file to check")
		os.Exit(2)
	}
	var problems []string
	checked := 0
	for _, f := range files {
		ps, n, err := check(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "docscheck:", err)
			os.Exit(2)
		}
		problems = append(problems, ps...)
		checked += n
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "docscheck: %d names in %d files point nowhere\n", len(problems), len(files))
		os.Exit(1)
	}
	fmt.Printf("docscheck: %d files, %d links and paths, each there\n", len(files), checked)
}

// check is what in file names that is not there, and how many names it
// checked.
func check(file string) ([]string, int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, 0, err
	}
	var problems []string
	n := 0
	for i, line := range strings.Split(string(b), "\n") {
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			if _, err := os.Stat(filepath.Join(filepath.Dir(file), target)); err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: link to %s: no such file", file, i+1, target))
			}
		}
		for _, m := range code.FindAllStringSubmatch(line, -1) {
			n++
			if _, err := os.Stat(strings.TrimSuffix(m[1], ".")); err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: `%s`: no such file or directory", file, i+1, m[1]))
			}
		}
	}
	return problems, n, nil
}
