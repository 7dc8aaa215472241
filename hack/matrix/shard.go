package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/informer-conformance/informer-conformance/report"

	"golang.org/x/mod/semver"
)

// A matrix over several machines: each runs a share of the planned columns
// (-shard I/N: the columns whose index in the plan is I modulo N; -shard
// N/N... is an error) and writes every column it plans, run or not
// applicable, as a column file (columns/NNN.json under -out). `matrix merge
// -out DIR IN...` joins the column files found under the IN directories, from
// any number of machines, into the matrix.md, matrix.html and matrix.json
// one machine running every column writes (the same bytes for the same
// columns: one machine writes its own column files and renders from the
// columns in memory, which the files hold exactly). A planned column no file
// holds, or one that ran another label filter or suite, is named in the
// merged table as a column that did not run, with why; two files for one
// column, or files of different plans, are an error.

// columnFile is one column as a machine writes it and merge reads it.
type columnFile struct {
	// Index is the column's place in the plan; Plan is every planned
	// column (versions and gates, before it ran), in order, so a merge
	// can name the missing.
	Index int       `json:"index"`
	Plan  []planned `json:"plan"`
	// Labels and Suites are what the column ran: columns of other spec
	// sets do not compare.
	Labels string `json:"labelFilter"`
	Suites string `json:"suites"`
	Column column `json:"column"`
}

// columnsDir is where a run writes its column files, under its -out.
const columnsDir = "columns"

// shard is -shard I/N; the zero value is every column. byVersion
// (-shard-by version) shares out client-go versions instead of columns:
// a shard runs every column of the versions whose index among the plan's
// versions (in plan order) is I modulo N, so that it builds the suite
// against each of its versions once (a build costs minutes; a verdict
// plan has up to six columns per version).
type shard struct {
	i, n      int
	byVersion bool
}

func parseShard(s string) (shard, error) {
	if s == "" {
		return shard{}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return shard{}, fmt.Errorf("-shard %q: want I/N with 0 <= I < N (the columns whose index in the plan is I modulo N)", s)
	}
	return shard{i: i, n: n}, nil
}

// has says whether the shard runs the plan's column index.
func (s shard) has(plan []column, index int) bool {
	if s.n == 0 {
		return true
	}
	if !s.byVersion {
		return index%s.n == s.i
	}
	var versions []string
	for _, c := range plan {
		if !slices.Contains(versions, c.shardVersion()) {
			versions = append(versions, c.shardVersion())
		}
	}
	return slices.Index(versions, plan[index].shardVersion())%s.n == s.i
}

// shardVersion is what -shard-by version shares out the column by: its
// client-go version; a verdict run's server steps (appended to its plan)
// are a version of their own, the last, so that a run planned without them
// keeps its shards and one shard can run the steps alone.
func (c column) shardVersion() string {
	if c.ServerStep {
		return c.ClientGo + " server steps"
	}
	return c.ClientGo
}

func (s shard) String() string {
	if s.n == 0 {
		return "every column"
	}
	if s.byVersion {
		return fmt.Sprintf("shard %d/%d of the client-go versions", s.i, s.n)
	}
	return fmt.Sprintf("shard %d/%d", s.i, s.n)
}

// parseShardBy sets how sh shares out the plan: "column" (or empty) or
// "version".
func parseShardBy(sh shard, by string) (shard, error) {
	switch by {
	case "", "column":
		return sh, nil
	case "version":
		sh.byVersion = true
		return sh, nil
	}
	return sh, fmt.Errorf("-shard-by %q: want column or version", by)
}

// planned is a column as planned: what it runs, not what it found.
type planned struct {
	ClientGo string  `json:"clientGo"`
	Kube     string  `json:"kubeAPIServer,omitempty"`
	Etcd     string  `json:"etcd,omitempty"`
	Gates    gateSet `json:"gates,omitempty"`
	// ServerStep: the column is of the verdict page's server section.
	ServerStep bool `json:"serverStep,omitempty"`
}

func (p planned) column() column {
	return column{ClientGo: p.ClientGo, Kube: p.Kube, Etcd: p.Etcd, Gates: p.Gates, ServerStep: p.ServerStep}
}

// samePlanned says whether two shards planned the same column: the same
// name, or, for the next minor's column, pre-releases of the same minor (a
// newer one published while a sharded run was under way: the column is
// whatever the shard that ran it ran, and only that shard's file holds it).
func samePlanned(a, b planned) bool {
	if a.column().name() == b.column().name() {
		return true
	}
	pre := semver.Prerelease(a.ClientGo) != "" && semver.Prerelease(b.ClientGo) != ""
	return pre && semver.MajorMinor(a.ClientGo) == semver.MajorMinor(b.ClientGo) &&
		a.Kube == b.Kube && a.Etcd == b.Etcd && a.Gates.String() == b.Gates.String()
}

// plannedOf is the plan as its column files record it.
func plannedOf(plan []column) []planned {
	ps := make([]planned, len(plan))
	for i, c := range plan {
		ps[i] = planned{ClientGo: c.ClientGo, Kube: c.Kube, Etcd: c.Etcd, Gates: c.Gates, ServerStep: c.ServerStep}
	}
	return ps
}

// planString names a plan's columns, in errors.
func planString(ps []planned) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.column().name()
	}
	return strings.Join(names, "; ")
}

// writeColumnFile writes f to out/columns/NNN.json.
func writeColumnFile(out string, f columnFile) error {
	dir := filepath.Join(out, columnsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fmt.Sprintf("%03d.json", f.Index)), append(data, '\n'), 0o644)
}

// readColumnFiles reads every columns/*.json under dirs.
func readColumnFiles(dirs []string) ([]columnFile, error) {
	var files []columnFile
	for _, d := range dirs {
		found := 0
		err := filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() || filepath.Base(filepath.Dir(path)) != columnsDir || filepath.Ext(path) != ".json" {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var f columnFile
			if err := json.Unmarshal(data, &f); err != nil {
				return fmt.Errorf("column file %s: %w", path, err)
			}
			if len(f.Plan) == 0 || f.Index < 0 || f.Index >= len(f.Plan) {
				return fmt.Errorf("column file %s: index %d outside its plan of %d columns", path, f.Index, len(f.Plan))
			}
			files = append(files, f)
			found++
			return nil
		})
		if err != nil {
			return nil, err
		}
		if found == 0 {
			return nil, fmt.Errorf("no column files (%s/*.json) under %s", columnsDir, d)
		}
	}
	return files, nil
}

// planOfRun says whether a shard's plan is the run's: the same columns,
// or the run's without the server steps it appends.
func planOfRun(p, run []planned) bool {
	if len(p) > len(run) || !slices.EqualFunc(p, run[:len(p)], samePlanned) {
		return false
	}
	return !slices.ContainsFunc(run[len(p):], func(q planned) bool { return !q.ServerStep })
}

// mergeColumns puts column files back into their plan: the columns in plan
// order, each planned column no file holds an Error naming it missing,
// each column that ran another label filter or suite than the plan's first
// file an Error naming what it ran (its cells dropped: they do not
// compare). It returns the label filter the merged columns ran.
func mergeColumns(files []columnFile) ([]column, string, error) {
	if len(files) == 0 {
		return nil, "", errors.New("no column files")
	}
	slices.SortFunc(files, func(a, b columnFile) int { return a.Index - b.Index })
	// The reference is the longest plan: a verdict run's server steps
	// (withServerSteps) come after its other columns, so the shards of a
	// run planned without them join one that runs them.
	ref := slices.MaxFunc(files, func(a, b columnFile) int { return len(a.Plan) - len(b.Plan) })
	byIndex := map[int]columnFile{}
	for _, f := range files {
		if !planOfRun(f.Plan, ref.Plan) {
			return nil, "", fmt.Errorf("column files of different plans: %q and %q (run every shard with the same flags)", planString(ref.Plan), planString(f.Plan))
		}
		if _, dup := byIndex[f.Index]; dup {
			return nil, "", fmt.Errorf("two column files for column %d (%s)", f.Index, f.Plan[f.Index].column().name())
		}
		if p := f.Plan[f.Index]; f.Column.ClientGo != p.ClientGo || f.Column.Gates.String() != p.Gates.String() {
			return nil, "", fmt.Errorf("column file %d holds %s, its plan says %s", f.Index, f.Column.name(), p.column().name())
		}
		byIndex[f.Index] = f
	}
	cols := make([]column, 0, len(ref.Plan))
	for i, p := range ref.Plan {
		f, ok := byIndex[i]
		switch {
		case !ok:
			c := p.column()
			c.Error = "missing: no machine's column file holds it (its shard did not run, or its files were not gathered)"
			cols = append(cols, c)
		case f.Labels != ref.Labels || f.Suites != ref.Suites:
			c := f.Column
			c.Error = fmt.Sprintf("ran another spec set (label filter %q, suites %s) than the other columns (%q, %s): not compared", f.Labels, f.Suites, ref.Labels, ref.Suites)
			c.Cells, c.Passed = nil, false
			cols = append(cols, c)
		default:
			cols = append(cols, f.Column)
		}
	}
	return cols, ref.Labels, nil
}

// mergeMain is `matrix merge [-out DIR] IN...`: the shards' column files
// under each IN joined into OUT's matrix.md, matrix.html and matrix.json.
// It exits 1 if a column is missing, ran another spec set, or did not pass
// (with -verdicts: only if one did not run).
func mergeMain(args []string) int {
	fset := flag.NewFlagSet("matrix merge", flag.ContinueOnError)
	out := fset.String("out", filepath.Join(report.ArtifactsRoot(), "matrix"), "where the merged matrix goes")
	verdicts := fset.Bool("verdicts", false, "the shards are a -verdicts run's: fail only if a column did not run (then -verdicts -render OUT/matrix.json writes the document)")
	fset.Usage = func() {
		fmt.Fprintln(fset.Output(), "usage: matrix merge [-out DIR] IN...: join the column files (IN/**/columns/*.json) of sharded runs")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		return 2
	}
	if fset.NArg() == 0 {
		fset.Usage()
		return 2
	}
	check := checkPassed
	if *verdicts {
		check = checkRan
	}
	if err := merge(*out, fset.Args(), check); err != nil {
		fmt.Fprintln(os.Stderr, "matrix merge:", err)
		return 1
	}
	return 0
}

func merge(out string, in []string, check func([]column) error) error {
	files, err := readColumnFiles(in)
	if err != nil {
		return err
	}
	cols, labels, err := mergeColumns(files)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	step("merged %d column files of %d planned columns (label filter %q) from %s", len(files), len(cols), labels, strings.Join(in, ", "))
	if err := writeMatrix(out, cols); err != nil {
		return err
	}
	return check(cols)
}
