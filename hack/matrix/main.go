// Command matrix runs the conformance suite once per client-go version
// (k8s.io/api and k8s.io/apimachinery aligned with it) and, optionally, per
// kube-apiserver version, and prints one table: a row per spec, a column per
// version, each cell the outcome and the spec's re-initialisations.
//
//	go run ./hack/matrix -client-go "v0.31 v0.33 v0.35 v0.37" [-kube "v1.35.4 v1.36.3"] [-gates "default; AtomicFIFO=false"] [-label-filter '!slow']
//
// -gates adds a column per set of client-go feature gates (semicolon
// separated; a set is comma separated Name=true|false, "default" for none),
// set through client-go's KUBE_FEATURE_<Name> environment variables; each
// column's report states every gate's value, and a gate the column's
// client-go does not have makes the column an error, not a silent default.
//
// A minor version (v0.33) means its newest patch on the module proxy. Each
// client-go version gets a go.mod of its own, generated from this module's
// direct requirements and resolved afresh by `go mod tidy` (downgrading one
// go.mod in place leaves newer indirect modules behind that older
// apimachinery does not compile with); the suite is built with
// `-modfile`, so the source tree is the same for every column.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"

	"github.com/informer-conformance/informer-conformance/report"
)

// The modules that move together.
var k8sModules = []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/client-go"}

func main() {
	clientGo := flag.String("client-go", os.Getenv("CLIENT_GO"), "client-go versions, space or comma separated (v0.33 = newest v0.33.x); empty = go.mod's")
	kube := flag.String("kube", os.Getenv("KUBE_VERSIONS"), "kube-apiserver versions; empty = the pinned default")
	gates := flag.String("gates", os.Getenv("GATES"), `client-go feature gate sets, ";" separated, each "Name=false,Other=true" or "default"; empty = defaults only`)
	labels := flag.String("label-filter", envOr("LABEL_FILTER", "!slow"), "ginkgo label filter")
	procs := flag.Int("procs", 4, "ginkgo parallel processes")
	out := flag.String("out", filepath.Join(envOr(report.EnvArtifacts, "_artifacts"), "matrix"), "output directory")
	suites := flag.String("suites", "./suites/conformance", "suite packages")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	gateSets, err := parseGateSets(*gates)
	if err != nil {
		fmt.Fprintln(os.Stderr, "matrix:", err)
		os.Exit(2)
	}
	if err := run(ctx, config{clientGo: fields(*clientGo), kube: fields(*kube), gates: gateSets, labels: *labels, procs: *procs, out: *out, suites: *suites}); err != nil {
		fmt.Fprintln(os.Stderr, "matrix:", err)
		os.Exit(1)
	}
}

type config struct {
	clientGo, kube []string
	gates          []gateSet
	labels         string
	procs          int
	out, suites    string
}

// column is one run: a client-go version against a kube-apiserver version.
type column struct {
	ClientGo string  `json:"clientGo"`
	Kube     string  `json:"kubeAPIServer"`
	Gates    gateSet `json:"gates,omitempty"`
	// Error says why the suite did not run or did not report (a version that
	// does not resolve or compile): every cell of the column is empty.
	Error   string               `json:"error,omitempty"`
	Passed  bool                 `json:"passed"`
	Seconds float64              `json:"seconds"`
	Cells   map[string]cell      `json:"cells"`
	Suite   *report.SuiteSummary `json:"-"`
}

func (c column) name() string {
	n := "client-go " + c.ClientGo
	if c.Kube != "" {
		n += " / kube-apiserver " + c.Kube
	}
	if len(c.Gates) > 0 {
		n += " / " + c.Gates.String()
	}
	return n
}

type cell struct {
	Outcome string         `json:"outcome"`
	Reinits int            `json:"reinitialisations"`
	ByCause map[string]int `json:"byCause,omitempty"`
	Failure string         `json:"failure,omitempty"`
}

func run(ctx context.Context, cfg config) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return err
	}
	pinned, err := requiredVersion(gomod, "k8s.io/client-go")
	if err != nil {
		return err
	}
	if len(cfg.clientGo) == 0 {
		cfg.clientGo = []string{pinned}
	}
	if len(cfg.kube) == 0 {
		cfg.kube = []string{""}
	}
	if len(cfg.gates) == 0 {
		cfg.gates = []gateSet{nil}
	}
	out, err := filepath.Abs(cfg.out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	versions, err := resolve(ctx, root, cfg.clientGo)
	if err != nil {
		return err
	}
	for _, k := range cfg.kube {
		step("kube-apiserver %s: building or finding the binaries", orDefault(k))
		if err := goCmd(ctx, root, nil, os.Stderr, "run", "./hack/build-binaries", "-kube-version", k); err != nil {
			return fmt.Errorf("binaries for kube-apiserver %s: %w", orDefault(k), err)
		}
	}

	var cols []column
	for _, v := range versions {
		modfilePath := ""
		var prepErr error
		if v != pinned {
			step("client-go %s: resolving its module graph", v)
			modfilePath, prepErr = writeModfile(ctx, root, gomod, v, filepath.Join(out, "modfiles"))
		}
		for _, k := range cfg.kube {
			for _, g := range cfg.gates {
				col := column{ClientGo: v, Kube: k, Gates: g}
				if prepErr != nil {
					col.Error = prepErr.Error()
				} else {
					col = runColumn(ctx, root, cfg, out, modfilePath, col)
				}
				cols = append(cols, col)
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
	}
	table := markdown(cols)
	if err := os.WriteFile(filepath.Join(out, "matrix.md"), []byte(table), 0o644); err != nil {
		return err
	}
	page, err := htmlMatrix(cols)
	if err != nil {
		return fmt.Errorf("matrix.html: %w", err)
	}
	if err := os.WriteFile(filepath.Join(out, "matrix.html"), page, 0o644); err != nil {
		return err
	}
	data, _ := json.MarshalIndent(cols, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "matrix.json"), data, 0o644); err != nil {
		return err
	}
	fmt.Print(table)
	step("table: %s (and matrix.html)", filepath.Join(out, "matrix.md"))
	for _, c := range cols {
		if !c.Passed {
			return errors.New("not every version passed: see the table")
		}
	}
	return nil
}

// runColumn runs the suite once and reads the informer report it wrote.
func runColumn(ctx context.Context, root string, cfg config, out, modfilePath string, col column) column {
	dir := filepath.Join(out, report.SafeName(strings.TrimSpace(col.ClientGo+"_"+col.Kube+"_"+col.Gates.String())))
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		col.Error = err.Error()
		return col
	}
	logPath := filepath.Join(dir, "ginkgo.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		col.Error = err.Error()
		return col
	}
	defer logFile.Close()
	env := []string{report.EnvArtifacts + "=" + dir}
	if col.Kube != "" {
		env = append(env, "KUBE_VERSION="+col.Kube)
	}
	if modfilePath != "" {
		env = append(env, "GOFLAGS=-modfile="+modfilePath)
	}
	env = append(env, col.Gates.env()...)
	step("%s: running %s (label filter %q); log %s", col.name(), cfg.suites, cfg.labels, logPath)
	start := time.Now()
	// Ginkgo's own progress goes to the log; a line per finished spec to
	// the terminal, so a long column is never silent.
	w := io.MultiWriter(logFile, &specTicker{prefix: "  " + col.name() + ": "})
	runErr := goCmd(ctx, root, env, w, "tool", "ginkgo", fmt.Sprintf("-procs=%d", cfg.procs), "--no-color",
		"--label-filter="+cfg.labels, "--json-report=report.json", "--output-dir="+dir, cfg.suites)
	col.Seconds = time.Since(start).Seconds()

	suiteName := filepath.Base(cfg.suites)
	jsonPath := report.FilesIn(dir, suiteName).JSON
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		col.Error = fmt.Sprintf("no report (%v); the suite's last words: %s", runErr, tail(logPath, 6))
		return col
	}
	var s report.SuiteSummary
	if err := json.Unmarshal(data, &s); err != nil {
		col.Error = fmt.Sprintf("read %s: %v", jsonPath, err)
		return col
	}
	if s.ClientGo != "" && s.ClientGo != col.ClientGo {
		col.Error = fmt.Sprintf("the suite ran with client-go %s, not %s", s.ClientGo, col.ClientGo)
		return col
	}
	if col.Kube == "" {
		col.Kube = s.KubeAPIServer
	}
	if err := col.Gates.check(s.ClientGoGates); err != nil {
		col.Error = fmt.Sprintf("client-go %s: %v", col.ClientGo, err)
		return col
	}
	col.Cells = map[string]cell{}
	col.Passed = runErr == nil
	for _, sp := range s.Specs {
		c := cell{Outcome: sp.Outcome, ByCause: map[string]int{}}
		for _, n := range sp.Informers {
			for cause, k := range n.Reinitialisations {
				c.Reinits += k
				c.ByCause[string(cause)] += k
			}
		}
		if sp.Failure != "" {
			c.Failure = firstLine(sp.Failure)
		}
		col.Cells[sp.Spec] = c
	}
	step("%s: %s in %.0fs", col.name(), map[bool]string{true: "passed", false: "FAILED"}[col.Passed], col.Seconds)
	return col
}

// grid is the matrix both renderings (markdown, HTML) draw: a row per spec
// that ran somewhere, a cell per column, and the specs whose columns differ.
type grid struct {
	cols []column
	rows []gridRow
	// outcomeDiffers: the outcome changes between columns; causesDiffer: the
	// same outcome, other re-initialisations by cause.
	outcomeDiffers, causesDiffer []gridRow
	// notRun: the columns that did not run, with why.
	notRun []string
}

type gridRow struct {
	Spec  string
	Cells []gridCell
}

type gridCell struct {
	// Kind is "pass", "fail", "skipped", "missing" (the column has no such
	// spec) or "did-not-run" (the column did not run).
	Kind    string
	Reinits int
	// Label names the column in a difference: its client-go version, and its
	// kube-apiserver version and gates when these vary.
	Label, Outcome, ByCause, Failure string
}

func (c gridCell) ran() bool { return c.Kind == "pass" || c.Kind == "fail" }

// newGrid computes the matrix: the rows in spec order, a spec skipped in
// every column (filtered out by labels) left out.
func newGrid(cols []column) grid {
	g := grid{cols: cols}
	specs := map[string]bool{}
	for _, c := range cols {
		for s := range c.Cells {
			specs[s] = true
		}
	}
	// Name a column by its client-go version alone unless the columns also
	// differ in kube-apiserver version or gates.
	kube, gates := map[string]bool{}, map[string]bool{}
	for _, c := range cols {
		if c.Error == "" {
			kube[c.Kube] = true
			gates[c.Gates.String()] = true
		}
	}
	label := func(c column) string {
		l := c.ClientGo
		if len(kube) > 1 {
			l += " / kube-apiserver " + c.Kube
		}
		if len(gates) > 1 {
			l += " / " + c.Gates.String()
		}
		return l
	}
	for _, s := range slices.Sorted(maps.Keys(specs)) {
		if skippedEverywhere(cols, s) {
			continue
		}
		row := gridRow{Spec: s}
		outcomes, reinits := map[string]bool{}, map[string]bool{}
		for _, c := range cols {
			cl, ok := c.Cells[s]
			gc := gridCell{Label: label(c), Outcome: cl.Outcome, Reinits: cl.Reinits, ByCause: report.Counts(cl.ByCause), Failure: cl.Failure}
			switch {
			case c.Error != "":
				gc.Kind = "did-not-run"
			case !ok:
				gc.Kind = "missing"
			case cl.Outcome == "skipped":
				gc.Kind = "skipped"
			case cl.Outcome == "passed":
				gc.Kind = "pass"
			default:
				gc.Kind = "fail"
			}
			if gc.ran() {
				outcomes[cl.Outcome] = true
				reinits[gc.ByCause] = true
			}
			row.Cells = append(row.Cells, gc)
		}
		g.rows = append(g.rows, row)
		switch {
		case len(outcomes) > 1:
			g.outcomeDiffers = append(g.outcomeDiffers, row)
		case len(reinits) > 1:
			g.causesDiffer = append(g.causesDiffer, row)
		}
	}
	for _, c := range cols {
		if c.Error != "" {
			g.notRun = append(g.notRun, c.name()+" did not run: "+c.Error)
		}
	}
	return g
}

const (
	outcomeDiffersTitle = "Outcomes that differ between versions"
	causesDifferTitle   = "Same outcome, other re-initialisations (specs that allow several causes, e.g. a restart's races, can differ from run to run: rerun before calling it a change)"
)

// markdown is the table: rows = specs, columns = versions; then the specs
// whose outcome or re-initialisations differ between versions.
func markdown(cols []column) string {
	g := newGrid(cols)
	var b strings.Builder
	b.WriteString("# client-go version matrix\n\nCells: outcome, re-initialisations (all informers of the spec) `r=N`.\n\n| spec |")
	for _, c := range cols {
		fmt.Fprintf(&b, " %s |", c.name())
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(cols)) + "\n")
	for _, r := range g.rows {
		fmt.Fprintf(&b, "| %s |", r.Spec)
		for _, c := range r.Cells {
			switch c.Kind {
			case "did-not-run":
				b.WriteString(" did not run |")
			case "missing":
				b.WriteString(" - |")
			case "skipped":
				b.WriteString(" skipped |")
			default:
				fmt.Fprintf(&b, " %s r=%d |", map[bool]string{true: "pass", false: "**FAIL**"}[c.Kind == "pass"], c.Reinits)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	for _, n := range g.notRun {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	differences(&b, outcomeDiffersTitle, g.outcomeDiffers)
	differences(&b, causesDifferTitle, g.causesDiffer)
	return b.String()
}

func differences(b *strings.Builder, title string, rows []gridRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## %s\n\n", title)
	for _, r := range rows {
		fmt.Fprintf(b, "- %s:", r.Spec)
		for _, c := range r.Cells {
			if c.ran() {
				fmt.Fprintf(b, " %s: %s, re-initialisations %s", c.Label, c.Outcome, c.ByCause)
				if c.Failure != "" {
					fmt.Fprintf(b, " (%s)", c.Failure)
				}
				b.WriteString(";")
			}
		}
		b.WriteString("\n")
	}
}

func skippedEverywhere(cols []column, spec string) bool {
	for _, c := range cols {
		if cl, ok := c.Cells[spec]; ok && cl.Outcome != "skipped" {
			return false
		}
	}
	return true
}

// resolve turns minor versions into the newest patch the proxy serves.
func resolve(ctx context.Context, root string, want []string) ([]string, error) {
	var listed []string
	var out []string
	for _, v := range want {
		if !strings.HasPrefix(v, "v") {
			v = "v" + v
		}
		if !semver.IsValid(v) {
			return nil, fmt.Errorf("client-go version %q is not a version like v0.33 or v0.33.13", v)
		}
		if semver.Canonical(v) == v && strings.Count(v, ".") == 2 {
			out = append(out, v)
			continue
		}
		if listed == nil {
			var buf bytes.Buffer
			if err := goCmd(ctx, root, nil, &buf, "list", "-m", "-versions", "k8s.io/client-go"); err != nil {
				return nil, fmt.Errorf("list client-go versions: %w", err)
			}
			listed = strings.Fields(buf.String())
		}
		best := ""
		for _, l := range listed {
			if semver.MajorMinor(l) == v && semver.Prerelease(l) == "" && semver.Compare(l, best) > 0 {
				best = l
			}
		}
		if best == "" {
			return nil, fmt.Errorf("the module proxy serves no release of k8s.io/client-go %s", v)
		}
		out = append(out, best)
	}
	return out, nil
}

// writeModfile writes go.<version>.mod: this module's direct requirements
// with the k8s.io modules at version, resolved by go mod tidy.
func writeModfile(ctx context.Context, root string, gomod []byte, version, dir string) (string, error) {
	f, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		return "", err
	}
	for _, r := range slices.Clone(f.Require) {
		if r.Indirect {
			if err := f.DropRequire(r.Mod.Path); err != nil {
				return "", err
			}
		}
	}
	for _, m := range k8sModules {
		if err := f.AddRequire(m, version); err != nil {
			return "", err
		}
	}
	f.Cleanup()
	data, err := f.Format()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "go."+version+".mod")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", err
	}
	_ = os.Remove(strings.TrimSuffix(path, ".mod") + ".sum")
	var buf bytes.Buffer
	if err := goCmd(ctx, root, nil, &buf, "mod", "tidy", "-modfile="+path); err != nil {
		return "", fmt.Errorf("resolve modules for client-go %s: %w: %s", version, err, lastLines(buf.String(), 6))
	}
	return path, nil
}

func goCmd(ctx context.Context, dir string, env []string, out io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

func moduleRoot() (string, error) {
	var buf bytes.Buffer
	if err := goCmd(context.Background(), ".", nil, &buf, "env", "GOMOD"); err != nil {
		return "", err
	}
	gomod := strings.TrimSpace(buf.String())
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("run from inside the informer-conformance module")
	}
	return filepath.Dir(gomod), nil
}

func requiredVersion(gomod []byte, path string) (string, error) {
	f, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == path {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("go.mod does not require %s", path)
}

// specTicker prints one line per spec Ginkgo reports as done (succinct
// mode prints a mark per spec; the names come at the end).
type specTicker struct {
	prefix string
	n      int
}

func (t *specTicker) Write(p []byte) (int, error) {
	for _, r := range string(p) {
		if r == '•' {
			t.n++
			fmt.Fprintf(os.Stderr, "%s%d specs done\n", t.prefix, t.n)
		}
	}
	return len(p), nil
}

func step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[matrix %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
}

func envOr(k, def string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return def
}

func orDefault(k string) string {
	if k == "" {
		return "(pinned default)"
	}
	return k
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.ReplaceAll(s, "|", "\\|")
}

func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	return lastLines(string(data), n)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

// gateSet is one column's client-go feature gates, in the order given.
type gateSet []gateValue

type gateValue struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
}

var gateName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// parseGateSets reads -gates: sets separated by ";", each "default" (or
// empty) or comma separated Name=true|false.
func parseGateSets(s string) ([]gateSet, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var sets []gateSet
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" || part == "default" {
			sets = append(sets, nil)
			continue
		}
		var set gateSet
		seen := map[string]bool{}
		for _, kv := range strings.Split(part, ",") {
			name, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || !gateName.MatchString(name) || (value != "true" && value != "false") {
				return nil, fmt.Errorf("gate set %q: %q is not Name=true or Name=false", part, kv)
			}
			if seen[name] {
				return nil, fmt.Errorf("gate set %q: %s given twice", part, name)
			}
			seen[name] = true
			set = append(set, gateValue{Name: name, Enabled: value == "true"})
		}
		sets = append(sets, set)
	}
	return sets, nil
}

// String is "default" or the set as given ("AtomicFIFO=false,...").
func (g gateSet) String() string {
	if len(g) == 0 {
		return "default"
	}
	var parts []string
	for _, v := range g {
		parts = append(parts, fmt.Sprintf("%s=%t", v.Name, v.Enabled))
	}
	return strings.Join(parts, ",")
}

// env sets the gates the way client-go reads them (features/envvar.go:
// KUBE_FEATURE_<Name>, read once per process).
func (g gateSet) env() []string {
	var env []string
	for _, v := range g {
		env = append(env, fmt.Sprintf("KUBE_FEATURE_%s=%t", v.Name, v.Enabled))
	}
	return env
}

// check compares the set with the gates a run's report states: a gate the
// client-go does not have, or one that did not take the value asked, is an
// error (client-go ignores unknown KUBE_FEATURE_ variables, and a locked
// gate keeps its default).
func (g gateSet) check(reported map[string]report.Gate) error {
	for _, v := range g {
		r, ok := reported[v.Name]
		switch {
		case !ok:
			return fmt.Errorf("has no feature gate %s (its gates: %s)", v.Name, strings.Join(slices.Sorted(maps.Keys(reported)), ", "))
		case r.Enabled != v.Enabled:
			return fmt.Errorf("feature gate %s stayed %t (locked to its default?), not %t as asked", v.Name, r.Enabled, v.Enabled)
		}
	}
	return nil
}
