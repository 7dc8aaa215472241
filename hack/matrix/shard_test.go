package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// shardColumns is a plan of four columns as they came out: two client-go
// versions, two gate sets, one not applicable.
func shardColumns() []column {
	gates := gateSet{{Name: "AtomicFIFO", Enabled: false}}
	return []column{
		{ClientGo: "v0.35.4", Kube: "v1.36.3", Passed: true, Seconds: 61.25, Cells: map[string]cell{
			"S8 resync":  {Outcome: "passed", ByCause: map[string]int{}},
			"S1 restart": {Outcome: "passed", Reinits: 1, ByCause: map[string]int{"410 Gone": 1}},
		}},
		{ClientGo: "v0.35.4", Kube: "v1.36.3", Gates: gates, Seconds: 58.5, Cells: map[string]cell{
			"S8 resync":  {Outcome: "passed", ByCause: map[string]int{}},
			"S1 restart": {Outcome: "failed", Reinits: 2, ByCause: map[string]int{"410 Gone": 2}, Failure: "one re-initialisation"},
		}},
		{ClientGo: "v0.36.6", Kube: "v1.36.3", Passed: true, Seconds: 60, Cells: map[string]cell{
			"S8 resync":  {Outcome: "passed", ByCause: map[string]int{}},
			"S1 restart": {Outcome: "passed", Reinits: 1, ByCause: map[string]int{"410 Gone": 1}},
		}},
		{ClientGo: "v0.36.6", Gates: gates, NotApplicable: "client-go v0.36.6 locks AtomicFIFO"},
	}
}

// defaultKubePlan is the plan of cols as a run with the default
// kube-apiserver records it.
func defaultKubePlan(cols []column) []planned {
	plan := plannedOf(cols)
	for i := range plan {
		plan[i].Kube = ""
	}
	return plan
}

// writeShards writes the columns' files as n machines would, each into a
// directory of its own, and returns the directories.
func writeShards(t *testing.T, cols []column, n int, labels func(index int) string) []string {
	t.Helper()
	root := t.TempDir()
	plan := defaultKubePlan(cols)
	var dirs []string
	for s := range n {
		dir := filepath.Join(root, "shard", string(rune('a'+s)))
		sh := shard{i: s, n: n}
		for i, c := range cols {
			if !sh.has(cols, i) {
				continue
			}
			if err := writeColumnFile(dir, columnFile{Index: i, Plan: plan, Labels: labels(i), Suites: "./suites/conformance", Column: c}); err != nil {
				t.Fatal(err)
			}
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	got := map[string][]byte{}
	for _, f := range []string{"matrix.md", "matrix.html", "matrix.json"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		got[f] = data
	}
	return got
}

// TestMergeIsTheSingleMachineMatrix: the shards' column files, merged, give
// the bytes one machine writes from the same columns.
func TestMergeIsTheSingleMachineMatrix(t *testing.T) {
	cols := shardColumns()
	single := t.TempDir()
	if err := writeMatrix(single, cols); err != nil {
		t.Fatal(err)
	}
	want := readAll(t, single)
	for _, n := range []int{1, 2, 4} {
		dirs := writeShards(t, cols, n, func(int) string { return "!slow" })
		out := t.TempDir()
		err := merge(out, dirs, checkPassed)
		if err == nil || !strings.Contains(err.Error(), "not every version passed") {
			t.Errorf("%d shards: merge = %v, want the failing column's verdict", n, err)
		}
		got := readAll(t, out)
		for f := range want {
			if !bytes.Equal(got[f], want[f]) {
				t.Errorf("%d shards: merged %s differs from one machine's:\n%s\n---\n%s", n, f, got[f], want[f])
			}
		}
	}
}

func TestMergeNamesMissingAndOtherSpecSets(t *testing.T) {
	cols := shardColumns()
	dirs := writeShards(t, cols, 4, func(i int) string {
		if i == 2 {
			return "smoke"
		}
		return "!slow"
	})
	out := t.TempDir()
	// Shard 1 (column 1) never arrived.
	if err := merge(out, []string{dirs[0], dirs[2], dirs[3]}, checkRan); err == nil {
		t.Fatal("merge with a missing column passed")
	}
	md := string(readAll(t, out)["matrix.md"])
	for _, want := range []string{
		"client-go v0.35.4 / AtomicFIFO=false did not run: missing: no machine's column file holds it",
		`client-go v0.36.6 / kube-apiserver v1.36.3 did not run: ran another spec set (label filter "smoke"`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("merged table lacks %q:\n%s", want, md)
		}
	}
}

func TestMergeRefusesWhatDoesNotJoin(t *testing.T) {
	cols := shardColumns()
	dirs := writeShards(t, cols, 2, func(int) string { return "!slow" })
	if err := merge(t.TempDir(), []string{dirs[0], dirs[0]}, checkPassed); err == nil || !strings.Contains(err.Error(), "two column files for column 0") {
		t.Errorf("the same shard twice = %v", err)
	}
	other := writeShards(t, cols[:3], 1, func(int) string { return "!slow" })
	if err := merge(t.TempDir(), []string{dirs[0], other[0]}, checkPassed); err == nil || !strings.Contains(err.Error(), "different plans") {
		t.Errorf("shards of two plans = %v", err)
	}
	if err := merge(t.TempDir(), []string{t.TempDir()}, checkPassed); err == nil || !strings.Contains(err.Error(), "no column files") {
		t.Errorf("an empty directory = %v", err)
	}
}

func TestParseShard(t *testing.T) {
	for in, want := range map[string]shard{"": {}, "0/1": {i: 0, n: 1}, "2/7": {i: 2, n: 7}} {
		if got, err := parseShard(in); err != nil || got != want {
			t.Errorf("parseShard(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"7/7", "-1/3", "1", "a/b", "0/0"} {
		if _, err := parseShard(bad); err == nil {
			t.Errorf("parseShard(%q) accepted", bad)
		}
	}
	s := shard{i: 1, n: 3}
	plan := make([]column, 7)
	var got []int
	for i := range 7 {
		plan[i] = column{ClientGo: fmt.Sprintf("v0.3%d.0", i)}
		if s.has(plan, i) {
			got = append(got, i)
		}
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 4 {
		t.Errorf("shard 1/3 of 7 columns runs %v, want [1 4]", got)
	}
	// By version: every column of a version in one shard.
	byVersion, err := parseShardBy(shard{i: 1, n: 2}, "version")
	if err != nil {
		t.Fatal(err)
	}
	plan = []column{{ClientGo: "v0.31.0"}, {ClientGo: "v0.31.14"}, {ClientGo: "v0.31.14", Gates: gateSet{{Name: "A"}}}, {ClientGo: "v0.32.0"}, {ClientGo: "v0.32.13"}, {ClientGo: "v0.32.13", Gates: gateSet{{Name: "A"}}}}
	runs := func(sh shard, plan []column) string {
		var got []int
		for i := range plan {
			if sh.has(plan, i) {
				got = append(got, i)
			}
		}
		return fmt.Sprint(got)
	}
	if got := runs(byVersion, plan); got != "[1 2 4 5]" {
		t.Errorf("shard 1/2 by version runs %v, want [1 2 4 5] (v0.31.14 and v0.32.13 with their gate columns)", got)
	}
	// A verdict run's server steps are a version of their own, the last:
	// the other versions keep their shards, N+1 shards run them alone.
	stepped := append(slices.Clone(plan), column{ClientGo: "v0.32.13", Kube: "v1.35.4", ServerStep: true})
	if got := runs(byVersion, stepped); got != "[1 2 4 5]" {
		t.Errorf("shard 1/2 by version of a plan with server steps runs %v, want [1 2 4 5]", got)
	}
	if last := (shard{i: 4, n: 5, byVersion: true}); !last.has(stepped, 6) || last.has(stepped, 4) {
		t.Error("shard 4/5 by version does not run the server steps alone")
	}
	if _, err := parseShardBy(shard{i: 0, n: 2}, "machine"); err == nil {
		t.Error("parseShardBy accepted machine")
	}
}

// TestMergeRealShards: column files of a real run in two shards (two
// processes, two checkouts, two artifact directories: client-go v0.35.10
// and v0.36.6, gate sets default and AtomicFIFO=false, label filter
// `resync && sync:streaming-list && !extra-stack && !negative-control`,
// 2026-11-26) merge into the table one machine wrote running all four
// columns (testdata/real/single-machine-matrix.md).
func TestMergeRealShards(t *testing.T) {
	out := t.TempDir()
	if err := merge(out, []string{"testdata/real/shard0", "testdata/real/shard1"}, checkPassed); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/real/single-machine-matrix.md")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, out)["matrix.md"]; !bytes.Equal(got, want) {
		t.Errorf("merged real shards:\n%s\nwant (one machine):\n%s", got, want)
	}
	if err := merge(t.TempDir(), []string{"testdata/real/shard0"}, checkPassed); err == nil || !strings.Contains(err.Error(), "not every version passed") {
		t.Errorf("one shard alone = %v, want the missing columns to fail the merge", err)
	}
}

// TestMergeJoinsANewerPrerelease: a shard planned before the next minor's
// newer pre-release was published (and not running that column) joins the
// shards planned after; two different minors, or a release, do not.
func TestMergeJoinsANewerPrerelease(t *testing.T) {
	cols := append(shardColumns(), column{ClientGo: "v0.38.0-beta.0", Kube: "v1.36.3", Passed: true, Cells: map[string]cell{
		"S8 resync": {Outcome: "passed", ByCause: map[string]int{}},
	}})
	dirs := writeShards(t, cols, 2, func(int) string { return "!slow" })
	older := slices.Clone(cols)
	older[4].ClientGo = "v0.38.0-alpha.2"
	// Shard 0 of 2 runs columns 0, 2 and 4: planned with the alpha, it
	// holds 0 and 2 only (its next column is run by a later shard).
	plan := defaultKubePlan(older)
	dir := filepath.Join(t.TempDir(), "early")
	for _, i := range []int{0, 2} {
		if err := writeColumnFile(dir, columnFile{Index: i, Plan: plan, Labels: "!slow", Suites: "./suites/conformance", Column: older[i]}); err != nil {
			t.Fatal(err)
		}
	}
	// dirs[1] holds 1 and 3; the beta's column 4 comes from a third shard
	// planned like dirs[1].
	late := filepath.Join(t.TempDir(), "late")
	if err := writeColumnFile(late, columnFile{Index: 4, Plan: defaultKubePlan(cols), Labels: "!slow", Suites: "./suites/conformance", Column: cols[4]}); err != nil {
		t.Fatal(err)
	}
	if err := merge(t.TempDir(), []string{dir, dirs[1], late}, checkRan); err != nil {
		t.Errorf("an earlier pre-release in a shard that did not run it = %v", err)
	}
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"v0.38.0-alpha.2", "v0.38.0-beta.0", true},
		{"v0.38.0-alpha.2", "v0.39.0-alpha.1", false},
		{"v0.37.2", "v0.37.3", false},
		{"v0.38.0-rc.0", "v0.38.0", false},
	} {
		if got := samePlanned(planned{ClientGo: c.a}, planned{ClientGo: c.b}); got != c.want {
			t.Errorf("samePlanned(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestMergeJoinsServerSteps: the shards of a verdict run planned without
// server steps join a shard that runs them (the same plan with the steps
// appended); a shard whose plan appends other columns does not.
func TestMergeJoinsServerSteps(t *testing.T) {
	cols := shardColumns()
	dirs := writeShards(t, cols, 2, func(int) string { return "!slow" })
	stepped := append(slices.Clone(cols), column{ClientGo: "v0.36.6", Kube: "v1.35.4", ServerStep: true, Passed: true, Cells: map[string]cell{
		"S8 resync": {Outcome: "passed", ByCause: map[string]int{}},
	}})
	plan := defaultKubePlan(stepped)
	plan[4].Kube = "v1.35.4"
	steps := filepath.Join(t.TempDir(), "steps")
	if err := writeColumnFile(steps, columnFile{Index: 4, Plan: plan, Labels: "!slow", Suites: "./suites/conformance", Column: stepped[4]}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := merge(out, append(slices.Clone(dirs), steps), checkRan); err != nil {
		t.Fatalf("merge of a run's shards and its server steps: %v", err)
	}
	if md := string(readAll(t, out)["matrix.md"]); !strings.Contains(md, "client-go v0.36.6 / kube-apiserver v1.35.4") {
		t.Errorf("merged table lacks the server step's column:\n%s", md)
	}
	plan[4].ServerStep = false
	if err := writeColumnFile(steps, columnFile{Index: 4, Plan: plan, Labels: "!slow", Suites: "./suites/conformance", Column: stepped[4]}); err != nil {
		t.Fatal(err)
	}
	if err := merge(t.TempDir(), append(slices.Clone(dirs), steps), checkRan); err == nil || !strings.Contains(err.Error(), "different plans") {
		t.Errorf("a plan that appends a column other than a server step = %v", err)
	}
}
