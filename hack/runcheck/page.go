package main

// The measured page: the numbers of named runs, written from their Ginkgo
// reports, so the docs link to one generated page instead of repeating
// numbers that drift.

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// namedRun is one run a generated page names: the command that ran it
// ("make e2e", "make bench-start BENCH_N=10") and the file it left (a
// Ginkgo JSON report, a benchmark's results).
type namedRun struct {
	command, file string
}

// machine is what the page says of the machine the runs ran on.
type machine struct {
	cores  int
	memory string // "24 GiB"; "" unknown
}

// generatedPageMain is `runcheck VERB OUT 'COMMAND=FILE'...`: the page
// render makes of the runs (the last "=" splits: a command may hold its
// own, BENCH_N=10), written to OUT, with the checkout's commit and this
// machine.
func generatedPageMain(verb, file string, args []string, stdout, stderr io.Writer, render func([]namedRun, string, machine) (string, error)) int {
	usage := fmt.Sprintf("usage: runcheck %s OUT 'COMMAND=%s'...", verb, file)
	fs := flag.NewFlagSet("runcheck "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, usage) }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	args = fs.Args()
	if len(args) < 2 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var runs []namedRun
	for _, a := range args[1:] {
		i := strings.LastIndex(a, "=")
		if i <= 0 || i == len(a)-1 || strings.TrimSpace(a[:i]) == "" {
			fmt.Fprintf(stderr, "runcheck %s: %q is not COMMAND=%s\n", verb, a, file)
			return 2
		}
		runs = append(runs, namedRun{command: strings.TrimSpace(a[:i]), file: a[i+1:]})
	}
	page, err := render(runs, headCommit(), thisMachine())
	if err == nil {
		err = writePage(args[0], page)
	}
	if err != nil {
		fmt.Fprintf(stderr, "runcheck %s: %v\n", verb, err)
		return 1
	}
	fmt.Fprintf(stdout, "runcheck %s: wrote %s\n", verb, args[0])
	return 0
}

// writePage writes a generated page to path, making its directory.
func writePage(path, page string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(page), 0o644)
}

// headCommit is the checkout's commit (short), with "plus uncommitted
// changes" when tracked files differ from it; "" outside a git checkout.
func headCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	commit := strings.TrimSpace(string(out))
	var exit *exec.ExitError
	if err := exec.Command("git", "diff", "--quiet", "HEAD", "--").Run(); errors.As(err, &exit) && exit.ExitCode() == 1 {
		commit += " plus uncommitted changes"
	}
	return commit
}

// thisMachine is the machine this runs on.
func thisMachine() machine {
	return machine{cores: runtime.NumCPU(), memory: memTotal()}
}

// String is "2 cores and 24 GiB" (or "2 cores" where the memory is unknown).
func (m machine) String() string {
	if m.memory == "" {
		return fmt.Sprintf("%d cores", m.cores)
	}
	return fmt.Sprintf("%d cores and %s", m.cores, m.memory)
}

// measuredPage renders the page: how it was made (the newest report's
// date, the suite's commit, the machine), a row per run, then each run's
// slowest specs.
func measuredPage(runs []namedRun, commit string, m machine) (string, error) {
	type loaded struct {
		namedRun
		s    summary
		wall time.Duration
	}
	var got []loaded
	var missing []string
	var newest time.Time
	for _, r := range runs {
		fi, err := os.Stat(r.file)
		if err != nil {
			missing = append(missing, fmt.Sprintf("`%s` (no report at %s)", r.command, r.file))
			continue
		}
		reports, err := readReports(r.file)
		if err != nil {
			return "", err
		}
		var wall time.Duration
		for _, rep := range reports {
			wall += rep.RunTime
		}
		got = append(got, loaded{namedRun: r, s: summarize(reports), wall: wall})
		if fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
	}
	if len(got) == 0 {
		return "", fmt.Errorf("none of the runs has a report: %s", strings.Join(missing, "; "))
	}
	var b strings.Builder
	b.WriteString("# Measured\n\n")
	b.WriteString("The numbers of the suite's own runs, written by `make measured` (`hack/runcheck page`) from their Ginkgo reports; " +
		"the README and the other docs link here instead of repeating them.\n\n")
	fmt.Fprintf(&b, "Runs ended by %s", newest.UTC().Format("2006-01-02 15:04 UTC"))
	if commit != "" {
		fmt.Fprintf(&b, ", the suite at commit %s", commit)
	}
	fmt.Fprintf(&b, ", on a machine with %s.\n\n", m)
	b.WriteString("| run | passed | failed | skipped | wall time | spec time | cluster starts (p50, p95; share of spec time) |\n|---|---|---|---|---|---|---|\n")
	for _, g := range got {
		specTime, starts := g.s.specSeconds()
		startCell := "none"
		if len(starts) > 0 {
			var sum float64
			for _, s := range starts {
				sum += s
			}
			startCell = fmt.Sprintf("%d (%.1f s, %.1f s; %s)", len(starts), quantile(starts, 0.5), quantile(starts, 0.95), percent(sum, specTime))
		}
		fmt.Fprintf(&b, "| `%s` | %d | %d | %d | %s | %.0f s | %s |\n", g.command, g.s.passed, g.s.failed, g.s.skipped, minSec(g.wall), specTime, startCell)
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "\nNot in this page's runs: %s.\n", strings.Join(missing, "; "))
	}
	for _, g := range got {
		fmt.Fprintf(&b, "\n## `%s`\n\n", g.command)
		if g.s.skipped > 0 {
			b.WriteString("Skipped, and why:\n\n")
			for _, reason := range slices.Sorted(maps.Keys(g.s.skips)) {
				if reason != notSelected {
					fmt.Fprintf(&b, "- %d: %s\n", g.s.skips[reason], strings.ReplaceAll(reason, "\n", " "))
				}
			}
			b.WriteString("\n")
		}
		ran := slowestFirst(g.s.ran)
		n := min(5, len(ran))
		fmt.Fprintf(&b, "The %d slowest specs:\n\n", n)
		for _, r := range ran[:n] {
			fmt.Fprintf(&b, "- %.1f s: %s\n", r.seconds, r.text)
		}
	}
	return b.String(), nil
}

// minSec spells a duration as "3 min 57 s" (or "42 s").
func minSec(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	if s < 60 {
		return fmt.Sprintf("%d s", s)
	}
	return fmt.Sprintf("%d min %d s", s/60, s%60)
}

// memTotal is the machine's memory ("24 GiB", from /proc/meminfo), "" where
// it cannot be read.
func memTotal() string {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				return ""
			}
			return fmt.Sprintf("%.0f GiB", kb/(1<<20))
		}
	}
	return ""
}
