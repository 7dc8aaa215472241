package main

// The benchmarks page: the timings of named benchmark commands, written
// from the results they leave with -json (package benchresult), so the
// docs link to one generated page instead of repeating numbers that drift.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/informer-conformance/informer-conformance/hack/runcheck/benchresult"
)

// benchmarksPage renders the page: how it was made (the first start, the
// commit, the machine and its load then), the commands, then a section
// per command with its table.
func benchmarksPage(runs []namedRun, commit string, m machine) (string, error) {
	type loaded struct {
		namedRun
		r      benchresult.Result
		absent string // why there are no results
	}
	var got []loaded
	var first *benchresult.Result
	for _, run := range runs {
		r, err := benchresult.Read(run.file)
		if errors.Is(err, benchresult.ErrNoResults) {
			got = append(got, loaded{namedRun: run, absent: fmt.Sprintf("no results at %s (the command did not run, or ended before writing them)", relPath(run.file))})
			continue
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", run.command, err)
		}
		got = append(got, loaded{namedRun: run, r: r})
		if first == nil || r.Started.Before(first.Started) {
			first = &got[len(got)-1].r
		}
	}
	if first == nil {
		var absent []string
		for _, g := range got {
			absent = append(absent, fmt.Sprintf("`%s`: %s", g.command, g.absent))
		}
		return "", fmt.Errorf("none of the benchmarks has results: %s", strings.Join(absent, "; "))
	}

	var b strings.Builder
	b.WriteString("# Benchmarks\n\n")
	b.WriteString("How long the backends take to start, restart, compact and delete, next to envtest and kwok, " +
		"written by `make benchmarks` (`hack/runcheck benchmarks`) from the results the benchmark commands write with `-json`; " +
		"the other docs link here instead of repeating these numbers. " +
		"The suite's own runs (specs, wall time, cluster starts within a run) are in `docs/measured.md`.\n\n")
	fmt.Fprintf(&b, "The benchmarks ran from %s", first.Started.UTC().Format("2006-01-02 15:04 UTC"))
	if commit != "" {
		fmt.Fprintf(&b, ", the suite at commit %s", commit)
	}
	fmt.Fprintf(&b, ", on a machine with %s", m)
	if first.Load != "" {
		fmt.Fprintf(&b, ", load average %s at the start", first.Load)
	}
	b.WriteString(". Each command, as `make benchmarks` ran it, and the tool it ran:\n\n")
	measured := false
	for _, g := range got {
		switch {
		case g.absent != "":
			fmt.Fprintf(&b, "- `%s`: not run: %s.\n", g.command, g.absent)
		case g.r.NotRun != "":
			fmt.Fprintf(&b, "- `%s` (`%s`): not run: %s.\n", g.command, g.r.Tool, strings.TrimSuffix(g.r.NotRun, "."))
		default:
			measured = true
			fmt.Fprintf(&b, "- `%s` (`%s`), from %s%s.\n", g.command, g.r.Tool, g.r.Started.UTC().Format("15:04 UTC"), loadClause(g.r.Load))
		}
	}
	if !measured {
		b.WriteString("\nNothing was measured in this run: each command above says why, or that it left no results.\n")
	}
	for _, g := range got {
		if g.absent != "" || g.r.NotRun != "" {
			continue
		}
		fmt.Fprintf(&b, "\n## `%s`\n\n", g.command)
		fmt.Fprintf(&b, "%s", capitalize(strings.TrimSuffix(g.r.Title, ".")))
		if g.r.Setup != "" {
			fmt.Fprintf(&b, ": %s", strings.TrimSuffix(g.r.Setup, "."))
		}
		b.WriteString(".\n\n")
		if g.r.Error != "" {
			fmt.Fprintf(&b, "**Ended early**: %s. The table holds what it measured before.\n\n", strings.TrimSuffix(g.r.Error, "."))
		}
		b.WriteString(benchTable(g.r.Rows))
	}
	return b.String(), nil
}

// benchTable is rows as a markdown table: each row's sample count, median,
// 95th percentile (nearest rank), minimum and maximum, and its notes; a row
// not run says why, and failed samples are counted with the first error.
func benchTable(rows []benchresult.Row) string {
	var b strings.Builder
	b.WriteString("| measurement | n | p50 | p95 | min | max | notes |\n|---|--:|--:|--:|--:|--:|---|\n")
	for _, r := range rows {
		notes := r.Notes
		if r.Failed > 0 {
			notes = strings.TrimSpace(fmt.Sprintf("**%d failed, first: %s** %s", r.Failed, r.FirstError, notes))
		}
		if r.NotRun != "" {
			notes = strings.TrimSpace(fmt.Sprintf("**not run: %s** %s", r.NotRun, notes))
		}
		if len(r.Seconds) == 0 {
			fmt.Fprintf(&b, "| %s | 0 | - | - | - | - | %s |\n", cell(r.Name), cell(notes))
			continue
		}
		s := slices.Sorted(slices.Values(r.Seconds))
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s |\n", cell(r.Name), len(s),
			secs(quantile(s, 0.5)), secs(quantile(s, 0.95)), secs(s[0]), secs(s[len(s)-1]), cell(notes))
	}
	return b.String()
}

func secs(s float64) string { return fmt.Sprintf("%.2f s", s) }

// cell is s for a table cell: one line, its pipes escaped.
func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}

func loadClause(load string) string {
	if load == "" {
		return ""
	}
	return ", load average " + load
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// relPath is path relative to the working directory when it lies under
// it (the page names no machine's home), else path.
func relPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}
