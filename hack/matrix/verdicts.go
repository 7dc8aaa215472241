package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/semver"

	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/report/known"
)

// The verdict run's defaults: the client-go minors (CLIENT_GO overrides)
// and the label filter (VERDICT_LABELS overrides).
const (
	defaultVerdictMinors = "v0.31 v0.32 v0.33 v0.34 v0.35 v0.36 v0.37 " + nextMinor
	defaultVerdictLabels = "!long && !extra-stack"
	// defaultVerdictKubeSteps and defaultVerdictEtcdSteps are the servers
	// of the page's server section (VERDICT_KUBE_STEPS, VERDICT_ETCD_STEPS
	// override; empty or none leaves a part out): the pinned patches of
	// the supported kube-apiserver minors before the default
	// (cluster/binaries pinnedReleases), the etcd minors before the
	// default with their newest patch the proxy serves.
	defaultVerdictKubeSteps = "v1.33.13 v1.34.4 v1.35.4 v1.36.3"
	defaultVerdictEtcdSteps = "v3.5.35 v3.6.16"
	// defaultVerdictGateLabels is the gate columns' (VERDICT_GATE_LABELS
	// overrides): the specs whose outcome a gate changes.
	defaultVerdictGateLabels = "release-sensitive && !extra-stack"
)

// verdictGateSets are the gate sets -verdicts runs on the newest patch of
// each minor besides its defaults, each where it applies (a client-go
// without the gate, or with it locked, lists the column as not applicable):
// each switches off one of the informer changes the release-sensitive
// specs tell apart.
var verdictGateSets = []gateSet{
	{{Name: "InOrderInformers", Enabled: false}},
	{{Name: "InOrderInformersBatchProcess", Enabled: false}},
	{{Name: "AtomicFIFO", Enabled: false}},
	{{Name: "UnlockWhileProcessingFIFO", Enabled: false}},
	// Either of these alone keeps a small relist atomic (S17): both off is
	// the queue of v0.33/v0.34.
	{{Name: "AtomicFIFO", Enabled: false}, {Name: "InOrderInformersBatchProcess", Enabled: false}},
}

// firstPatchesOf is the -verdicts plan's choice of minors whose first patch
// runs, from VERDICT_FIRST_PATCHES: empty or "all" for every minor, "none"
// for none, else the minors listed (v0.31 v0.32).
func firstPatchesOf(spec string) func(minor string) bool {
	switch strings.TrimSpace(spec) {
	case "", "all":
		return nil
	case "none":
		return func(string) bool { return false }
	}
	want := map[string]bool{}
	for _, m := range strings.FieldsFunc(spec, func(r rune) bool { return r == ' ' || r == ',' }) {
		if !strings.HasPrefix(m, "v") {
			m = "v" + m
		}
		want[semver.MajorMinor(m)] = true
	}
	return func(minor string) bool { return want[minor] }
}

// columnsSentence says which columns a verdict run plans.
func columnsSentence(defaultGatesOnly bool) string {
	if defaultGatesOnly {
		return "Columns: each client-go version named (a patch named stands for itself), with its default feature gates (VERDICT_GATES=none). "
	}
	return "Columns: the newest patch of each client-go minor with its default feature gates, and with each of " + verdictGateSetsString() +
		" where that client-go has the gate and does not lock it; the first patch of each minor with its defaults. "
}

// verdictGateSetsString spells verdictGateSets for messages.
func verdictGateSetsString() string {
	var s []string
	for _, g := range verdictGateSets {
		s = append(s, g.String())
	}
	return strings.Join(s, ", ")
}

// verdict explains a spec failing on some columns: a change client-go made
// on purpose (documented in a release note or a PR), or a known
// regression. The verdict document looks every failing (spec, column) up
// here; a failure no entry explains is "unexplained" and fails the run.
type verdict struct {
	// SpecContains is a substring of the Ginkgo spec text.
	SpecContains string
	// Applies says whether the entry explains the spec failing on a column
	// (its client-go version, vX.Y.Z, and gate set).
	Applies func(clientGo string, gates gateSet) bool
	// Upstream names the PR, issue or release note.
	Upstream string
	// Kind is "documented change" or "regression".
	Kind string
	// Why is what the spec sees, and why that client-go does it.
	Why string
	// Run, when set, says whether the entry applies to a column run at the
	// suite's commit (empty: not recorded); suite defects use it.
	Run func(commit string) bool
	// entry is the verdict data's entry it comes from.
	entry known.Entry
}

// matches says whether the entry is about spec: it holds SpecContains or
// one of the entry's other substrings (known.Entry.Also).
func (v verdict) matches(spec string) bool {
	return known.Entry{Spec: v.SpecContains, Also: v.entry.Also}.Matches(spec)
}

// heading is the entry's heading under Findings: the spec text it is
// about, or, for an entry about the specs of several scenarios, the
// change's title.
func (v verdict) heading() string {
	if len(v.entry.Also) > 0 {
		return v.title()
	}
	return v.SpecContains
}

// suiteDefectKind is the Kind of an entry that explains a failure by a
// defect of this suite, fixed since the run (known.KindSuiteDefect).
const suiteDefectKind = known.KindSuiteDefect

// verdicts are the explanations of client-go's behaviour in the verdict
// data (package report/known, known.json: what the suite ships and a
// downstream's run reads at run time): its changes and regressions.
var verdicts = clientGoVerdicts(knownData())

// clientGoVerdicts is data's client-go entries as the table looks them up.
func clientGoVerdicts(data known.Data) []verdict {
	var out []verdict
	for _, e := range data.Entries {
		if e.Kind == suiteDefectKind {
			continue
		}
		out = append(out, verdict{SpecContains: e.Spec, Kind: e.Kind, Upstream: e.Upstream, Why: e.Why, entry: e,
			Applies: func(clientGo string, gates gateSet) bool { return e.Applies(clientGo, gates.disables) }})
	}
	return out
}

// withSuiteDefects is table and the verdict data's suite defects (failures
// a verdict run traced to this suite), each applying only to a column run
// at a commit its fix does not reach (fixed(commit, fix): whether commit
// contains fix), so a run after the fix that fails the same way is
// unexplained again.
func withSuiteDefects(table []verdict, fixed func(commit, fix string) bool) []verdict {
	return withDefectsOf(knownData(), table, fixed)
}

// withDefectsOf is withSuiteDefects with data's suite defects.
func withDefectsOf(data known.Data, table []verdict, fixed func(commit, fix string) bool) []verdict {
	out := slices.Clone(table)
	for _, e := range data.Entries {
		if e.Kind != suiteDefectKind {
			continue
		}
		out = append(out, verdict{
			SpecContains: e.Spec,
			Applies:      func(string, gateSet) bool { return true },
			Kind:         suiteDefectKind,
			Upstream:     e.Upstream,
			Why:          e.Why,
			entry:        e,
			Run:          func(commit string) bool { return commit != "" && !fixed(commit, e.FixedBySuite) },
		})
	}
	return out
}

// knownData is the verdict data, which the tests of the binary check.
func knownData() known.Data {
	d, err := known.Load()
	if err != nil {
		panic(err) // known's own tests refuse bad data first
	}
	return d
}

// isControlName says whether a spec's text names a negative control ("S18
// ... fails when the queue stays locked ..."): for columns whose cells do
// not record it (cell.Control, from runs before they did).
func isControlName(spec string) bool {
	return strings.Contains(spec, " fails when ") || strings.Contains(spec, " fails with ")
}

// disables says whether the set switches the gate off.
func (g gateSet) disables(name string) bool {
	for _, v := range g {
		if v.Name == name {
			return !v.Enabled
		}
	}
	return false
}

// explain is the entries of table that explain spec failing on col.
func explain(table []verdict, spec string, col column) []verdict {
	var out []verdict
	for _, v := range table {
		// A column without a server ran the pinned default.
		if !v.entry.HoldsOn(cmp.Or(col.Kube, binaries.DefaultKubeVersion)) {
			continue // of other servers than the column's
		}
		if (col.Cells[spec].Control || isControlName(spec)) && v.Kind != suiteDefectKind && v.entry.KubeAPIServer == nil {
			// A control tests the suite against a broken client, not
			// client-go; an entry of the server's behaviour (a kube-apiserver
			// range) explains it as it explains the spec: the server takes
			// away what the broken client needs to break.
			continue
		}
		if v.matches(spec) && v.Applies(col.ClientGo, col.Gates) && (v.Run == nil || v.Run(col.Commit)) {
			out = append(out, v)
		}
	}
	return out
}

// verdictPlan is the columns of a verdict run, from the client-go versions
// the proxy lists: per minor wanted (v0.33; a patch, v0.33.5, stands for
// its minor's newest) its first patch (vX.Y.0, or the oldest release
// listed) with its default gates, then its newest patch with its defaults
// and with each gate set; each against every server (kube-apiserver and
// etcd versions). Gate
// sets are planned whether or not they apply: runPlan lists the ones that
// do not as not applicable.
func verdictPlan(listed, minors []string, gateSets []gateSet, srvs []server, firstPatches func(minor string) bool) ([]column, error) {
	if len(srvs) == 0 {
		srvs = []server{{}}
	}
	type versionGates struct {
		version string
		gates   gateSet
	}
	var plan []versionGates
	seen := map[string]bool{}
	for _, w := range minors {
		if w == nextMinor {
			// The next minor's newest pre-release, with its defaults: what
			// it will change, before it ships.
			next := newestPrerelease(listed)
			if next == "" {
				return nil, fmt.Errorf("%q: the module proxy serves no pre-release of a client-go minor newer than its newest release", nextMinor)
			}
			if !seen[next] {
				seen[next] = true
				plan = append(plan, versionGates{next, nil})
			}
			continue
		}
		w, err := clientGoVersion(w)
		if err != nil {
			return nil, err
		}
		minor := semver.MajorMinor(w)
		releases := releasesOf(listed, minor)
		newest := w
		if !isPatch(w) {
			if len(releases) == 0 {
				return nil, fmt.Errorf("the module proxy serves no release of k8s.io/client-go %s", w)
			}
			newest = releases[len(releases)-1]
		}
		first := newest
		if len(releases) > 0 && semver.Compare(releases[0], newest) < 0 {
			first = releases[0]
		}
		if seen[newest] {
			continue
		}
		seen[newest] = true
		if first != newest && (firstPatches == nil || firstPatches(minor)) {
			plan = append(plan, versionGates{first, nil})
		}
		plan = append(plan, versionGates{newest, nil})
		for _, g := range gateSets {
			plan = append(plan, versionGates{newest, g})
		}
	}
	var cols []column
	for _, p := range plan {
		for _, s := range srvs {
			cols = append(cols, column{ClientGo: p.version, Kube: s.Kube, Etcd: s.Etcd, Gates: p.gates})
		}
	}
	return cols, nil
}

// verdictSteps is a server-step variable's versions: its default when
// unset, none when empty or "none".
func verdictSteps(name, def string) []string {
	v, ok := os.LookupEnv(name)
	if !ok {
		v = def
	}
	if strings.TrimSpace(v) == "none" {
		return nil
	}
	return fields(v)
}

// stepServers are the servers of a verdict run's server section: each
// kube-apiserver version on the default etcd, each etcd version under the
// default kube-apiserver.
func stepServers(kube, etcd []string) []server {
	var s []server
	for _, k := range kube {
		s = append(s, server{Kube: k})
	}
	for _, e := range etcd {
		s = append(s, server{Etcd: e})
	}
	return s
}

// withServerSteps appends to a verdict plan its newest client-go release
// (not a pre-release) with default gates against each of steps: with that
// release's column against the default server, the page's server section
// judges each step between them (serverSteps), as an upgrade step is.
func withServerSteps(plan []column, steps []server) []column {
	newest := ""
	for _, c := range plan {
		if semver.Prerelease(c.ClientGo) == "" && semver.Compare(c.ClientGo, newest) > 0 {
			newest = c.ClientGo
		}
	}
	if newest == "" {
		return plan
	}
	for _, s := range steps {
		plan = append(plan, column{ClientGo: newest, Kube: s.Kube, Etcd: s.Etcd, ServerStep: true})
	}
	return plan
}

// verdictRun is what the verdict document's header says of its run.
type verdictRun struct {
	Date    time.Time
	Cores   int
	Labels  string
	Command string
	// DefaultGatesOnly: the run planned no gate sets (VERDICT_GATES=none).
	DefaultGatesOnly bool
	// Catalogue are the scenario IDs of docs/scenarios.md (S1 ... S34):
	// the header names those the run did not run.
	Catalogue []string
	// Fixed says whether the suite at a column's commit has a fix
	// (gitContains): the verdict data's noise rules apply before it.
	Fixed func(commit, fix string) bool
}

// verdictCommand is the command that plans the same columns again (the
// flags as they took effect, environment defaults included).
func verdictCommand(cfg config) string {
	var env []string
	if cfg.defaultGatesOnly {
		env = append(env, "VERDICT_GATES=none")
	}
	if cfg.firstPatches != "" {
		env = append(env, "VERDICT_FIRST_PATCHES="+shellQuote(cfg.firstPatches))
	}
	if cfg.gateLabels != "" && cfg.gateLabels != defaultVerdictGateLabels {
		env = append(env, "VERDICT_GATE_LABELS="+shellQuote(cfg.gateLabels))
	}
	if k := strings.Join(cfg.stepKube, " "); k != defaultVerdictKubeSteps {
		env = append(env, "VERDICT_KUBE_STEPS="+shellQuote(cmp.Or(k, "none")))
	}
	if e := strings.Join(cfg.stepEtcd, " "); e != defaultVerdictEtcdSteps {
		env = append(env, "VERDICT_ETCD_STEPS="+shellQuote(cmp.Or(e, "none")))
	}
	cmd := append(env, "go run ./hack/matrix -verdicts", "-client-go "+shellQuote(strings.Join(cfg.clientGo, " ")))
	if kube := slices.DeleteFunc(slices.Clone(cfg.kube), func(k string) bool { return k == "" }); len(kube) > 0 {
		cmd = append(cmd, "-kube "+shellQuote(strings.Join(kube, " ")))
	}
	if etcd := slices.DeleteFunc(slices.Clone(cfg.etcd), func(e string) bool { return e == "" }); len(etcd) > 0 {
		cmd = append(cmd, "-etcd "+shellQuote(strings.Join(etcd, " ")))
	}
	cmd = append(cmd, "-label-filter "+shellQuote(cfg.labels), fmt.Sprintf("-procs %d", cfg.procs))
	if cfg.suites != "./suites/conformance" {
		cmd = append(cmd, "-suites "+shellQuote(cfg.suites))
	}
	return strings.Join(cmd, " ")
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// failing says whether a spec outcome is a failure (not passed, skipped or
// pending), as the suite's own report counts it.
func failing(outcome string) bool {
	return outcome != "passed" && outcome != "skipped" && outcome != "pending"
}

// mdCell makes s one markdown table cell: one line, pipes escaped.
func mdCell(s string) string {
	s = strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(s), "\n", " / ")), " ")
	return strings.ReplaceAll(s, "|", "\\|")
}

// verdictDoc renders the verdict document (markdown): how it was produced;
// a row per column with its counts and failing specs; the findings, each
// failing (spec, column) with the entries of table that explain it or
// "unexplained"; the entries that applied to a spec that passed; the
// columns not applicable and those that errored. It also returns the
// problems that fail the run: columns that errored (or failed with no
// failing spec) and unexplained failures.
func verdictDoc(run verdictRun, cols []column, table []verdict) (string, []string) {
	t := tallyVerdicts(cols, table)
	n := noise{Seconds: 2, Ratio: 0.5, fixed: run.Fixed}
	steps := judgeSteps(cols, table, n)
	var b strings.Builder
	writeVerdictHeader(&b, run, cols, t)
	writeStepVerdicts(&b, steps)
	writeFindings(&b, t.findings)
	writeUpgradeSteps(&b, steps)
	writeServerSteps(&b, cols, table, n)
	writeVerdictColumns(&b, cols)
	writeSkew(&b, cols)
	if len(t.unseen) > 0 {
		b.WriteString("## Explained but not seen\n\nAn entry of the verdict data (report/known/known.json) applies, yet the spec passed: a spec that no longer tells the versions apart, a race it lost, or an entry that claims too much. Per entry, the columns and the specs that passed there.\n\n")
		writeGrouped(&b, t.unseen, "###", false)
	}
	writeVerdictList(&b, "Not applicable", "Columns not run: their gate set names a gate their client-go lacks, or asks a locked gate for the other value.", t.notApplicable)
	writeVerdictList(&b, "Errored", "Columns that did not run or did not report; these fail the run.", t.errored)
	return strings.TrimRight(b.String(), "\n") + "\n", t.problems
}

// finding is one failing (spec, column): the column, the spec's failure
// message and the entries of the table that explain it (none: unexplained).
type finding struct {
	col      column
	failure  string
	verdicts []verdict
}

// verdictTally is what the verdict document says of the columns, gathered
// in column order: the findings by spec, the lines of its lists, the
// problems that fail the run, and the counts of its summary.
type verdictTally struct {
	findings                                 map[string][]finding // by spec
	problems, notApplicable, errored         []string
	unseen                                   map[string][]finding // by spec: passed though an entry applies
	ran, failures, unexplained, suiteDefects int
}

// tallyVerdicts looks every column up in table.
func tallyVerdicts(cols []column, table []verdict) verdictTally {
	t := verdictTally{findings: map[string][]finding{}, unseen: map[string][]finding{}}
	for _, c := range cols {
		switch {
		case c.NotApplicable != "":
			t.notApplicable = append(t.notApplicable, fmt.Sprintf("%s: not applicable: %s", c.name(), c.NotApplicable))
			continue
		case c.Error != "":
			t.errored = append(t.errored, fmt.Sprintf("%s: %s", c.name(), c.Error))
			t.problems = append(t.problems, fmt.Sprintf("%s errored: %s", c.name(), c.Error))
			continue
		}
		t.ran++
		if failed := t.addSpecs(c, table); !c.Passed && failed == 0 {
			why := fmt.Sprintf("%s: the suite failed, yet no spec failed (a failure outside the specs: see the column's ginkgo.log)", c.name())
			t.errored = append(t.errored, why)
			t.problems = append(t.problems, why)
		}
	}
	return t
}

// addSpecs tallies the specs of a column that ran, in spec order: a
// failing spec is a finding (and a problem if no entry of table explains
// it), a spec that passed though an entry applies is unseen. It returns
// how many specs of the column failed.
func (t *verdictTally) addSpecs(c column, table []verdict) int {
	failed := 0
	for _, spec := range slices.Sorted(maps.Keys(c.Cells)) {
		cl := c.Cells[spec]
		switch {
		case failing(cl.Outcome):
			failed++
			t.failures++
			vs := explain(table, spec, c)
			if slices.ContainsFunc(vs, func(v verdict) bool { return v.Kind == suiteDefectKind }) {
				t.suiteDefects++
			}
			if len(vs) == 0 {
				t.unexplained++
				t.problems = append(t.problems, fmt.Sprintf("%s: %s %s, and no entry of the verdict data explains it", c.name(), spec, cl.Outcome))
			}
			t.findings[spec] = append(t.findings[spec], finding{col: c, failure: cl.Failure, verdicts: vs})
		case cl.Outcome == "passed":
			for _, v := range explain(table, spec, c) {
				if v.Kind == suiteDefectKind {
					continue // a flaw that showed once, not a claim about client-go
				}
				t.unseen[spec] = append(t.unseen[spec], finding{col: c, verdicts: []verdict{v}})
			}
		}
	}
	return failed
}

// writeVerdictHeader writes the document's title, how it was produced,
// how to read it, and the summary counts.
func writeVerdictHeader(b *strings.Builder, run verdictRun, cols []column, t verdictTally) {
	b.WriteString("# client-go releases: what each release changes for informers\n\n")
	commits := shortCommits(cols)
	at := ""
	if len(commits) > 0 {
		at = " from the suite at commit " + strings.Join(commits, ", ")
	}
	servers := kubeVersions(cols)
	fmt.Fprintf(b, "**Run**: the suite at commit %s, against kube-apiserver %s, label filter `%s`. %s\n\n",
		orDash(strings.Join(commits, ", ")), orDash(strings.Join(servers, ", ")), run.Labels, scenariosSentence(cols, run.Catalogue))
	if s := serverStepsSentence(cols); s != "" {
		b.WriteString(s + "\n\n")
	}
	fmt.Fprintf(b, "Produced %s%s on a machine with %d cores by\n\n```\n%s\n```\n\n",
		run.Date.UTC().Format("2006-01-02 15:04 UTC"), at, run.Cores, run.Command)
	b.WriteString("(`make verdicts` runs it with the Makefile's CLIENT_GO, KUBE_VERSIONS, VERDICT_LABELS and GINKGO_PROCS.) " +
		columnsSentence(run.DefaultGatesOnly) +
		"A failing spec that an entry of the verdict data (report/known/known.json) explains (a documented change or a known regression) is a finding, " +
		"not a failure of the run: the run exits non-zero only if a column errored or a failing spec is unexplained.\n\n")
	fmt.Fprintf(b, "%d columns: %d ran, %d not applicable, %d errored. %d failing (spec, column): %d explained, %d unexplained.",
		len(cols), t.ran, len(t.notApplicable), len(cols)-t.ran-len(t.notApplicable), t.failures, t.failures-t.unexplained, t.unexplained)
	if t.suiteDefects > 0 {
		fmt.Fprintf(b, " Of the explained, %d by a defect of this suite that the run found and that is fixed since (%q under Findings), not by client-go.", t.suiteDefects, suiteDefectKind)
	}
	b.WriteString("\n\n")
}

// writeVerdictColumns writes the Columns section: a row per column with
// its counts and failing specs, or why it did not run.
func writeVerdictColumns(b *strings.Builder, cols []column) {
	b.WriteString("## Columns\n\n| client-go | kube-apiserver | etcd | gates | passed | failed | skipped | seconds | failing specs |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cols {
		name := c.ClientGo
		if c.Toolchain != "" {
			name += " (built with " + c.Toolchain + ")"
		}
		if len(c.Raised) > 0 {
			name += " (raised: " + strings.Join(c.Raised, "; ") + ")"
		}
		if len(c.Skipped) > 0 {
			name += " (" + skippedNote(c.Skipped) + ")"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |", name, orDash(c.Kube), orDash(c.Etcd), c.Gates)
		switch {
		case c.NotApplicable != "":
			fmt.Fprintf(b, " - | - | - | - | not applicable: %s |\n", mdCell(c.NotApplicable))
			continue
		case c.Error != "":
			fmt.Fprintf(b, " - | - | - | - | error: %s |\n", mdCell(c.Error))
			continue
		}
		passed, skipped, failed := countOutcomes(c)
		fmt.Fprintf(b, " %d | %d | %d | %.0f | %s |\n", passed, len(failed), skipped, c.Seconds, mdCell(byScenario(failed)))
	}
}

// countOutcomes counts a column's specs that passed and those skipped (or
// pending), and lists those that failed, in spec order.
func countOutcomes(c column) (passed, skipped int, failed []string) {
	for _, spec := range slices.Sorted(maps.Keys(c.Cells)) {
		switch o := c.Cells[spec].Outcome; {
		case o == "passed":
			passed++
		case !failing(o):
			skipped++
		default:
			failed = append(failed, spec)
		}
	}
	return passed, skipped, failed
}

// writeFindings writes the Findings section: per entry of the table that
// explains a failure, once, its kind, upstream change and why, then the
// columns it was seen on with the specs that failed there; then each
// unexplained (spec, column) with its failure message.
func writeFindings(b *strings.Builder, findings map[string][]finding) {
	b.WriteString("\n## Findings\n\n")
	if len(findings) == 0 {
		b.WriteString("No spec failed in any column that ran.\n\n")
		return
	}
	b.WriteString("Each explanation once (an entry of the verdict data (report/known/known.json)), then where it was seen: the columns, each with the specs that failed there.\n\n")
	writeGrouped(b, findings, "###", true)
}

// writeGrouped writes findings grouped by the entry that explains them: a
// heading (level) per entry with, when full, its kind, upstream change and
// why, then its columns, each with its specs; then, under "Unexplained",
// the findings no entry explains.
func writeGrouped(b *strings.Builder, findings map[string][]finding, level string, full bool) {
	type seen struct {
		v     verdict
		specs map[string][]string // by column name, in column order below
		cols  []string
	}
	var groups []*seen
	byEntry := map[string]*seen{}
	var unexplained []string
	for _, spec := range slices.Sorted(maps.Keys(findings)) {
		for _, f := range findings[spec] {
			if len(f.verdicts) == 0 {
				line := fmt.Sprintf("- %s on %s: no entry of the verdict data explains it; a person must look", spec, f.col.name())
				if f.failure != "" {
					line += fmt.Sprintf(" (failure: %s)", mdCell(f.failure))
				}
				unexplained = append(unexplained, line+".")
				continue
			}
			for _, v := range f.verdicts {
				key := v.SpecContains + "\x00" + v.Upstream
				g := byEntry[key]
				if g == nil {
					g = &seen{v: v, specs: map[string][]string{}}
					byEntry[key] = g
					groups = append(groups, g)
				}
				name := f.col.name()
				if _, ok := g.specs[name]; !ok {
					g.cols = append(g.cols, name)
				}
				listed := spec // in full where the specs do not all begin with SpecContains
				if len(v.entry.Also) == 0 {
					listed = strings.TrimSpace(strings.TrimPrefix(spec, v.SpecContains))
				}
				g.specs[name] = append(g.specs[name], listed)
			}
		}
	}
	// Client-go's explanations by scenario number, then the suite's defects.
	slices.SortStableFunc(groups, func(x, y *seen) int {
		dx, dy := x.v.Kind == suiteDefectKind, y.v.Kind == suiteDefectKind
		if dx != dy {
			return map[bool]int{true: 1, false: -1}[dx]
		}
		return scenarioNumber(x.v.SpecContains) - scenarioNumber(y.v.SpecContains)
	})
	for _, g := range groups {
		fmt.Fprintf(b, "%s %s\n\n", level, g.v.heading())
		if full {
			fmt.Fprintf(b, "**%s**. Upstream: %s.\n\n%s.\n\n", g.v.Kind, g.v.Upstream, upperFirst(g.v.Why))
		}
		slices.SortStableFunc(g.cols, func(x, y string) int { return semver.Compare(strings.Fields(x)[1], strings.Fields(y)[1]) })
		// The words every failing spec shares after the entry's text, once.
		var all []string
		for _, c := range g.cols {
			all = append(all, g.specs[c]...)
		}
		prefix := commonWordPrefix(all)
		if len(g.v.entry.Also) > 0 {
			prefix = "" // the specs do not all begin with SpecContains
		}
		if prefix != "" {
			sep := " "
			if strings.ContainsAny(prefix[:1], ",;:") {
				sep = ""
			}
			fmt.Fprintf(b, "%s: %s%s%s …\n\n", map[bool]string{true: "Failing", false: "Passing"}[full], g.v.SpecContains, sep, prefix)
		}
		if len(g.cols) > 3 {
			fmt.Fprintf(b, "<details><summary>%d columns</summary>\n\n", len(g.cols))
		}
		for _, c := range g.cols {
			var specs []string
			for _, sp := range g.specs[c] {
				if sp = strings.TrimLeft(strings.TrimSpace(strings.TrimPrefix(sp, prefix)), ",: "); sp != "" && !slices.Contains(specs, sp) {
					specs = append(specs, sp)
				}
			}
			if len(specs) == 0 {
				fmt.Fprintf(b, "- %s\n", c)
				continue
			}
			fmt.Fprintf(b, "- %s: %s\n", c, strings.Join(specs, "; "))
		}
		if len(g.cols) > 3 {
			b.WriteString("\n</details>\n")
		}
		b.WriteString("\n")
	}
	if len(unexplained) > 0 {
		b.WriteString("### Unexplained\n\n" + strings.Join(unexplained, "\n") + "\n\n")
	}
}

// scenarioNumber is N of a spec text starting "SN " (S16 ...), else 0.
func scenarioNumber(spec string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(strings.Fields(spec + " S0")[0], "S"))
	return n
}

// commonWordPrefix is the words all of specs start with, when there are
// two or more ("" otherwise, or when one spec is all prefix).
func commonWordPrefix(specs []string) string {
	if len(specs) < 2 {
		return ""
	}
	words := strings.Fields(specs[0])
	n := len(words)
	for _, sp := range specs[1:] {
		w := strings.Fields(sp)
		i := 0
		for i < n && i < len(w) && w[i] == words[i] {
			i++
		}
		n = i
	}
	for _, sp := range specs {
		if len(strings.Fields(sp)) == n {
			n-- // leave every spec a word of its own
		}
	}
	for n > 0 && strings.Trim(words[n-1], ",;:") == "" {
		n-- // no trailing punctuation
	}
	if n <= 0 {
		return ""
	}
	return strings.Join(words[:n], " ")
}

// upperFirst is s with its first letter upper case.
func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// writeVerdictList writes a section of the document listing items, or
// nothing if there are none.
func writeVerdictList(b *strings.Builder, title, intro string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "## %s\n\n%s\n\n", title, intro)
	for _, it := range items {
		fmt.Fprintf(b, "- %s\n", it)
	}
	b.WriteString("\n")
}

// orDash is s, or "-" if empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// byScenario counts specs by scenario: "S16 ×4, S17 ×2" (the specs
// themselves are under Findings).
func byScenario(specs []string) string {
	counts := map[string]int{}
	var order []string
	for _, s := range specs {
		sc := scenarioOf(s)
		if counts[sc] == 0 {
			order = append(order, sc)
		}
		counts[sc]++
	}
	slices.SortFunc(order, func(a, b string) int { return scenarioNumber(a) - scenarioNumber(b) })
	var parts []string
	for _, sc := range order {
		if counts[sc] == 1 {
			parts = append(parts, sc)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", sc, counts[sc]))
	}
	return strings.Join(parts, ", ")
}

// serverStepsSentence names the servers of the page's server section
// (withServerSteps), "" when the run has none.
func serverStepsSentence(cols []column) string {
	var cg string
	var srvs []string
	for _, c := range cols {
		if !c.ServerStep {
			continue
		}
		cg = c.ClientGo
		switch {
		case c.NotApplicable != "" || c.Error != "":
			srvs = append(srvs, c.name()+" (did not run)")
		case c.Kube != "" && c.Etcd != "":
			srvs = append(srvs, "kube-apiserver "+c.Kube+" on etcd "+c.Etcd)
		default:
			srvs = append(srvs, "kube-apiserver "+orDash(c.Kube))
		}
	}
	if len(srvs) == 0 {
		return ""
	}
	return fmt.Sprintf("**Server section**: client-go %s with its default gates also against %s, each step to the next server judged under \"What each server step changes\".", cg, strings.Join(srvs, ", "))
}

// kubeVersions are the kube-apiserver versions of the columns that ran.
func kubeVersions(cols []column) []string {
	var out []string
	for _, c := range cols {
		if c.Kube != "" && !c.ServerStep && !slices.Contains(out, c.Kube) {
			out = append(out, c.Kube)
		}
	}
	slices.SortFunc(out, semver.Compare)
	return out
}

// ranScenarios are the scenarios of which a spec ran (passed or failed) in
// some column.
func ranScenarios(cols []column) map[string]bool {
	ran := map[string]bool{}
	for _, c := range cols {
		for spec, cl := range c.Cells {
			if cl.Outcome == "passed" || failing(cl.Outcome) {
				ran[scenarioOf(spec)] = true
			}
		}
	}
	return ran
}

// scenariosSentence names the catalogue's scenarios the run covered and
// those it did not run (not in the suite at its commit, or only specs its
// label filter leaves out), so that "passed everywhere" is never read into
// "never ran".
func scenariosSentence(cols []column, catalogue []string) string {
	if len(catalogue) == 0 {
		return ""
	}
	ran := ranScenarios(cols)
	var in, out []string
	for _, id := range catalogue {
		if ran[id] {
			in = append(in, id)
		} else {
			out = append(out, id)
		}
	}
	s := fmt.Sprintf("Scenarios run: %s.", orDash(idRanges(in)))
	if len(out) > 0 {
		s += fmt.Sprintf(" **Scenarios not run: %s** (not in the suite at its commit, or only specs its label filter leaves out): nothing here says how they behave.", idRanges(out))
	}
	return s
}

// idRanges spells scenario IDs with runs joined: "S1-S24, S26-S29".
func idRanges(ids []string) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && scenarioNumber(ids[j+1]) == scenarioNumber(ids[j])+1 {
			j++
		}
		if j > i {
			parts = append(parts, ids[i]+"-"+ids[j])
		} else {
			parts = append(parts, ids[i])
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// catalogueIDs are the scenario IDs of docs/scenarios.md under root, in
// order: its "## S<N> title" headings.
func catalogueIDs(root string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(root, "docs", "scenarios.md"))
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, line := range strings.Split(string(data), "\n") {
		if m := catalogueHeading.FindStringSubmatch(line); m != nil {
			ids = append(ids, m[1])
		}
	}
	return ids, nil
}

// catalogueHeading is a scenario's heading in docs/scenarios.md.
var catalogueHeading = regexp.MustCompile(`^## (S[0-9]+) `)

// writeKnownData rewrites the verdict data at path with what the run
// learned: the run (commit, server, client-go versions, labels, page) and
// each entry's Seen columns (where it explained a failure); the entries'
// explanations and the changes stay as they are written.
func writeKnownData(path string, cfg config, cols []column, table []verdict, page string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	data, err := known.Parse(raw)
	if err != nil {
		return err
	}
	data.Run = knownRun(cfg, cols, page)
	seen := map[string][]string{}
	t := tallyVerdicts(cols, table)
	for _, spec := range slices.Sorted(maps.Keys(t.findings)) {
		for _, f := range t.findings[spec] {
			for _, v := range f.verdicts {
				k := v.SpecContains + "\x00" + v.Upstream
				if name := seenName(f.col); !slices.Contains(seen[k], name) {
					seen[k] = append(seen[k], name)
				}
			}
		}
	}
	for i, e := range data.Entries {
		s := seen[e.Spec+"\x00"+e.Upstream]
		slices.SortFunc(s, func(a, b string) int { return semver.Compare(strings.Fields(a)[0], strings.Fields(b)[0]) })
		data.Entries[i].Seen = s
	}
	if err := data.Check(); err != nil {
		return err
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(data); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// knownRun is the run cols are as the verdict data names it.
func knownRun(cfg config, cols []column, page string) known.Run {
	r := known.Run{Commit: strings.Join(shortCommits(cols), ", "), Labels: cfg.labels, Page: page}
	if r.Commit == "" {
		r.Commit = cfg.commit
	}
	if kube := kubeVersions(cols); len(kube) > 0 {
		r.KubeAPIServer = kube[len(kube)-1]
	}
	for _, c := range cols {
		if c.Error == "" && c.NotApplicable == "" && !slices.Contains(r.ClientGo, c.ClientGo) {
			r.ClientGo = append(r.ClientGo, c.ClientGo)
		}
	}
	slices.SortFunc(r.ClientGo, semver.Compare)
	return r
}

// seenName is a column as the verdict data's Seen names it: "v0.35.10
// default", "v0.36.6 AtomicFIFO=false", a server step's with its server
// ("v0.37.2 default on kube-apiserver v1.33.13, etcd v3.7.3").
func seenName(c column) string {
	n := c.ClientGo + " " + c.Gates.String()
	if c.ServerStep {
		// Seen on another server than the run's: say which.
		n += " on kube-apiserver " + orDash(c.Kube) + ", etcd " + orDash(c.Etcd)
	}
	return n
}
