package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/semver"

	"github.com/informer-conformance/informer-conformance/report/known"
)

// skewMain is `matrix skew -doc PATH -command CMD MATRIX.JSON`: the
// version-skew document of a matrix run over several kube-apiserver
// versions, naming its run (the command given, the suite's commit, the
// date of matrix.json and this machine's cores), then the skew table,
// then the failing specs of each column.
func skewMain(args []string) int {
	fset := flag.NewFlagSet("matrix skew", flag.ContinueOnError)
	doc := fset.String("doc", "docs/version-skew.md", "the document to write")
	command := fset.String("command", "", "the command that ran the matrix, as the document names it")
	if err := fset.Parse(args); err != nil || fset.NArg() != 1 || *command == "" {
		fmt.Fprintln(fset.Output(), "usage: matrix skew -doc PATH -command 'make matrix ...' MATRIX.JSON")
		return 2
	}
	data, err := os.ReadFile(fset.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "matrix skew:", err)
		return 1
	}
	var cols []column
	if err := json.Unmarshal(data, &cols); err != nil {
		fmt.Fprintln(os.Stderr, "matrix skew:", fset.Arg(0), err)
		return 1
	}
	fi, err := os.Stat(fset.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "matrix skew:", err)
		return 1
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "matrix skew:", err)
		return 1
	}
	var b strings.Builder
	writeSkewDoc(&b, cols, withSuiteDefects(verdicts, gitContains(root)), *command, fi.ModTime(), runtime.NumCPU())
	err = os.MkdirAll(filepath.Dir(*doc), 0o755)
	if err == nil {
		err = os.WriteFile(*doc, []byte(b.String()), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "matrix skew:", err)
		return 1
	}
	step("version skew: %s", *doc)
	return 0
}

// writeSkewDoc writes the version-skew document: how it was produced, the
// table, what each server step changed, and per column the specs that
// failed with their first line and the entry of table (the verdicts and
// the suite's own defects) that explains it.
func writeSkewDoc(b *strings.Builder, cols []column, table []verdict, command string, date time.Time, cores int) {
	commits := shortCommits(cols)
	b.WriteString("# Version skew: client-go against kube-apiserver and etcd\n\n")
	fmt.Fprintf(b, "Produced %s", date.UTC().Format("2006-01-02 15:04 UTC"))
	if len(commits) > 0 {
		fmt.Fprintf(b, " from the suite at commit %s", strings.Join(commits, ", "))
	}
	fmt.Fprintf(b, " on a machine with %d cores, by\n\n```\n%s\n```\n", cores, command)
	writeSkew(b, cols)
	writeServerSteps(b, cols, table, noise{Seconds: 2, Ratio: 0.5})
	b.WriteString("\n## Failing specs per column\n\nEach with the entry of the verdict data (report/known/known.json) that explains it: the client-go's on that client-go whatever the server, the server's on the kube-apiserver versions it names, or the defect of this suite it is (fixed since the run): a failure no entry explains may be the server version's.\n\n")
	for _, c := range cols {
		if c.NotApplicable != "" || len(c.Gates) > 0 {
			continue
		}
		if c.Error != "" {
			fmt.Fprintf(b, "- %s: did not run: %s\n", c.name(), mdCell(c.Error))
			continue
		}
		_, _, failed := countOutcomes(c)
		if len(failed) == 0 {
			fmt.Fprintf(b, "- %s: none\n", c.name())
			continue
		}
		fmt.Fprintf(b, "- %s:\n", c.name())
		for _, f := range failed {
			why := "**no entry of the verdict data explains it on this client-go: the server's doing, or unknown**"
			if vs := explain(table, f, c); len(vs) > 0 {
				why = fmt.Sprintf("the client-go's (%s: %s)", vs[0].Kind, vs[0].Upstream)
				if r := vs[0].entry.KubeAPIServer; r != nil {
					why = fmt.Sprintf("the server's, on kube-apiserver %s (%s: %s)", r, vs[0].Kind, vs[0].Upstream)
				}
				if vs[0].Kind == suiteDefectKind {
					why = fmt.Sprintf("a defect of this suite, neither the client-go's nor the server's (%s: %s)", vs[0].Upstream, vs[0].Why)
				}
			}
			fmt.Fprintf(b, "  - %s: %s; failure: %s\n", f, why, mdCell(c.Cells[f].Failure))
		}
	}
}

// writeSkew writes the skew table of a run with more than one server: a
// row per client-go version, a column per kube-apiserver version (and etcd
// version, when the run has several), each cell the default-gate column's
// passed and failed specs, the scenarios that failed, and the skew (the
// client's minor minus the server's: client-go supports a server one minor
// older or newer,
// https://github.com/kubernetes/client-go#compatibility-client-go---kubernetes-clusters).
// It writes nothing when the run has one server.
func writeSkew(b *strings.Builder, cols []column) {
	type key struct {
		clientGo string
		srv      server
	}
	cells := map[key]column{}
	clients, srvs, etcds := map[string]bool{}, map[server]bool{}, map[string]bool{}
	for _, c := range cols {
		if len(c.Gates) > 0 || c.NotApplicable != "" || c.Kube == "" {
			continue
		}
		s := c.server()
		cells[key{c.ClientGo, s}] = c
		clients[c.ClientGo], srvs[s], etcds[c.Etcd] = true, true, true
	}
	if len(srvs) < 2 {
		return
	}
	rows := slices.SortedFunc(maps.Keys(clients), semver.Compare)
	// On the verdict page, the releases but the one of its server
	// section ran against one server: no skew to show.
	stepped := map[string]bool{}
	for _, c := range cols {
		if c.ServerStep {
			stepped[c.ClientGo] = true
		}
	}
	if len(stepped) > 0 {
		rows = slices.DeleteFunc(rows, func(cg string) bool { return !stepped[cg] })
	}
	heads := slices.SortedFunc(maps.Keys(srvs), compareServers)
	what := "a column per kube-apiserver version"
	if len(etcds) > 1 {
		what = "a column per kube-apiserver and etcd version"
	}
	b.WriteString("\n## Version skew\n\nA row per client-go version, " + what + " (default gates): specs passed / failed, " +
		"the scenarios that failed, and the skew in brackets (client minor minus server minor; client-go supports a server " +
		"one minor older or newer, and a client newer than its cluster is the common production case).\n\n| client-go |")
	for _, h := range heads {
		fmt.Fprintf(b, " kube-apiserver %s", h.Kube)
		if len(etcds) > 1 {
			fmt.Fprintf(b, ", etcd %s", orDash(h.Etcd))
		}
		b.WriteString(" |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(heads)) + "\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s |", r)
		for _, h := range heads {
			c, ok := cells[key{r, h}]
			if !ok {
				b.WriteString(" - |")
				continue
			}
			fmt.Fprintf(b, " %s (%s) |", skewCell(c), skewOf(r, h.Kube))
		}
		b.WriteString("\n")
	}
}

// skewCell is a column's counts and failing scenarios, or why it did not run.
func skewCell(c column) string {
	if c.Error != "" {
		return "did not run"
	}
	passed, _, failed := countOutcomes(c)
	s := fmt.Sprintf("%d / %d", passed, len(failed))
	var ids []string
	for _, f := range failed {
		if id := strings.Fields(f)[0]; !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		s += ": " + strings.Join(ids, ", ")
	}
	return s
}

// skewOf is client-go's minor (v0.37.2: 37) minus kube-apiserver's
// (v1.36.3: 36), signed: "+1", "0", "-2".
func skewOf(clientGo, kube string) string {
	minor := func(v string) int {
		parts := strings.Split(strings.TrimPrefix(semver.MajorMinor(v), "v"), ".")
		if len(parts) < 2 {
			return 0
		}
		n, _ := strconv.Atoi(parts[1])
		return n
	}
	d := minor(clientGo) - minor(kube)
	if d > 0 {
		return fmt.Sprintf("+%d", d)
	}
	return strconv.Itoa(d)
}

// shortCommits are the suite's commits the columns ran at, abbreviated,
// each once, in column order.
func shortCommits(cols []column) []string {
	var commits []string
	for _, c := range cols {
		if short := c.Commit[:min(len(c.Commit), 7)]; short != "" && !slices.Contains(commits, short) {
			commits = append(commits, short)
		}
	}
	return commits
}

// explainServerChange is the known server changes (the verdict data's,
// report/known) that explain a sentence of the step of component
// (kube-apiserver or etcd) from one version to the other.
func explainServerChange(sentence, component, from, to string) []knownChange {
	return knownData().ExplainObservation(sentence, component, from, to)
}

// serverSteps pairs, per client-go version, the default-gate columns that
// ran with reports against servers one component apart: each kube-apiserver
// version with the next on the same etcd, each etcd version with the next
// under the same kube-apiserver.
func serverSteps(cols []column) []upgradeStep {
	byClient := map[string][]column{}
	for _, c := range cols {
		if len(c.Gates) == 0 && c.Error == "" && c.NotApplicable == "" && c.Dir != "" && c.Kube != "" {
			byClient[c.ClientGo] = append(byClient[c.ClientGo], c)
		}
	}
	var steps []upgradeStep
	adjacent := func(cs []column, component string, same, varies func(column) string, what func(column) string) {
		groups := map[string][]column{}
		for _, c := range cs {
			groups[same(c)] = append(groups[same(c)], c)
		}
		for _, k := range slices.SortedFunc(maps.Keys(groups), semver.Compare) {
			g := groups[k]
			slices.SortFunc(g, func(a, b column) int { return semver.Compare(varies(a), varies(b)) })
			for i := 1; i < len(g); i++ {
				if varies(g[i-1]) != varies(g[i]) {
					steps = append(steps, upgradeStep{from: g[i-1], to: g[i], component: component, what: what(g[i])})
				}
			}
		}
	}
	kube := func(c column) string { return c.Kube }
	etcd := func(c column) string { return c.Etcd }
	for _, cg := range slices.SortedFunc(maps.Keys(byClient), semver.Compare) {
		adjacent(byClient[cg], known.ComponentKubeAPIServer, etcd, kube, func(c column) string {
			if c.Etcd == "" {
				return "client-go " + c.ClientGo
			}
			return "client-go " + c.ClientGo + ", etcd " + c.Etcd
		})
		adjacent(byClient[cg], known.ComponentEtcd, kube, etcd, func(c column) string {
			return "client-go " + c.ClientGo + ", kube-apiserver " + c.Kube
		})
	}
	return steps
}

// writeServerSteps writes, per server step (serverSteps), what changed for
// the same client-go, judged as an upgrade step is (table: the verdict
// data's spec entries): a line each, then each step's changes; nothing when
// the columns ran against one server.
func writeServerSteps(b *strings.Builder, cols []column, table []verdict, n noise) {
	var steps []stepJudgement
	for _, s := range serverSteps(cols) {
		steps = append(steps, judgeStep(s, table, n))
	}
	if len(steps) == 0 {
		return
	}
	b.WriteString("\n## What each server step changes\n\n")
	b.WriteString("The same client-go against two servers one component apart (a kube-apiserver version and the next on the same etcd, " +
		"an etcd version and the next under the same kube-apiserver), judged as an upgrade step is: an outcome or an observation that " +
		"changed with a known upstream change (the verdict data, report/known/known.json) is a behaviour change, a flip of a behaviour " +
		"known on both sides or an observation that varies between runs is noise (one run a column), breaks names the specs no known " +
		"change explains.\n\n| step | verdict |\n|---|---|\n")
	for _, j := range steps {
		fmt.Fprintf(b, "| %s | %s |\n", j.step.heading(), mdCell(j.verdict()))
	}
	b.WriteString("\n")
	for _, j := range steps {
		j.write(b)
	}
}
