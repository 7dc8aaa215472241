// Command runcheck checks a Ginkgo run from outside it, for make e2e and
// make downstream:
//
//	runcheck filter EXPR          parse a label filter as Ginkgo does; its error alone if it does not parse
//	runcheck report REPORT.json   sum up the run's JSON report (all suites): counts, and why specs were
//	                              skipped, grouped; fails when no spec passed in any suite
//	runcheck ran REPORT.json      the same summary; fails only when no spec ran (passed or failed) in any
//	                              suite: the selection was empty or every selected spec skipped. For a
//	                              gate that judges failures elsewhere (the reusable workflow compares
//	                              them with the base branch's)
//	runcheck labels REPORT.json   list each suite's spec labels (from a --dry-run report: Ginkgo's own
//	                              `ginkgo labels` reads only literal Label("...") arguments)
//	runcheck page OUT 'COMMAND=REPORT.json'...
//	                              write the measured page (docs/measured.md): each run's counts, wall
//	                              time, cluster starts and slowest specs, with the machine and commit
//	runcheck benchmarks OUT 'COMMAND=RESULTS.json'...
//	                              write the benchmarks page (docs/benchmarks.md) from the results the
//	                              benchmark commands write with -json (package benchresult): a table
//	                              per command, with the machine, its load, the date and the commit; a
//	                              command without results, or that could not run here, named as not run
//
// Exit status: 0 fine, 1 the check failed, 2 usage or an unreadable report.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/informer-conformance/informer-conformance/report"
	"github.com/informer-conformance/informer-conformance/report/timing"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "page" {
		os.Exit(generatedPageMain("page", "REPORT.json", os.Args[2:], os.Stdout, os.Stderr, measuredPage))
	}
	if len(os.Args) > 1 && os.Args[1] == "benchmarks" {
		os.Exit(generatedPageMain("benchmarks", "RESULTS.json", os.Args[2:], os.Stdout, os.Stderr, benchmarksPage))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = "usage: runcheck filter EXPR | report REPORT.json | ran REPORT.json | labels REPORT.json | merge SUITE OUT DIR... | page OUT 'COMMAND=REPORT.json'... | benchmarks OUT 'COMMAND=RESULTS.json'..."

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) >= 4 && args[0] == "merge" {
		// The informer reports of a run split over jobs, joined.
		n, err := report.MergeFiles(args[1], args[2], args[3:])
		if err != nil {
			fmt.Fprintf(stderr, "runcheck: merge: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "runcheck: merged %d %s reports into %s\n", n, args[1], report.FilesIn(args[2], args[1]).HTML)
		return 0
	}
	if len(args) != 2 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	switch args[0] {
	case "filter":
		if err := checkFilter(args[1]); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		return 0
	case "report", "ran", "labels":
		reports, err := readReports(args[1])
		if err != nil {
			fmt.Fprintf(stderr, "runcheck: %v\n", err)
			return 2
		}
		if args[0] == "labels" {
			fmt.Fprint(stdout, labels(reports))
			return 0
		}
		s := summarize(reports)
		fmt.Fprint(stdout, s.String())
		check := s.Err
		if args[0] == "ran" {
			check = s.ErrNoneRan
		}
		if err := check(); err != nil {
			fmt.Fprintf(stderr, "runcheck: %v\n", err)
			return 1
		}
		return 0
	}
	fmt.Fprintln(stderr, usage)
	return 2
}

// markup is Ginkgo's formatter markup ({{red}}, {{/}}) in an error message.
var markup = regexp.MustCompile(`{{[a-z/-]*}}`)

// checkFilter parses expr as a Ginkgo label filter.
func checkFilter(expr string) error {
	_, err := types.ParseLabelFilter(expr)
	var g types.GinkgoError
	switch {
	case errors.As(err, &g): // its Error() is coloured for a terminal
		return fmt.Errorf("label filter %q does not parse: %s: %s", expr, g.Heading, strings.Join(strings.Fields(markup.ReplaceAllString(g.Message, "")), " "))
	case err != nil:
		return fmt.Errorf("label filter %q does not parse: %v", expr, err)
	}
	return nil
}

// readReports reads a Ginkgo JSON report: one report per suite.
func readReports(path string) ([]types.Report, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no report at %s: Ginkgo ended before writing it (see its output above)", path)
	}
	if err != nil {
		return nil, err
	}
	var reports []types.Report
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return reports, nil
}

// notSelected stands for specs skipped without a reason: the label filter
// or focus left them out, or the run ended before them.
const notSelected = "not selected by the label filter or focus, or never reached"

// summary counts the specs (It nodes) of every suite of a run.
type summary struct {
	suites                          []string
	filters                         []string
	passed, failed, skipped, others int
	// interrupted: stopped by another spec's failure (--fail-fast), not
	// failed on their own.
	interrupted int
	skips       map[string]int // why, by reason (notSelected for none)
	dryRun      bool
	// detector counts the specs that ran with a streaming-list informer by
	// what their detectorNote said ("on", "off (...)").
	detector map[string]int
	// ran are the specs that ran (passed or failed), with their phases.
	ran []ranSpec
	// clusterFrom counts the specs' own clusters by where they came from
	// (report.Spec's ClusterFrom).
	clusterFrom map[string]int
	// labels are the labels of every spec, those not selected too, and
	// the suites' own: what a filter that selects nothing could have named.
	labels []string
}

// ranSpec is a spec that ran: its time and where it went (report.Spec's
// Time, by phase).
type ranSpec struct {
	text    string
	seconds float64
	phases  map[string]float64
}

// detectorNote is the report entry of a spec whose informers stream their
// lists, saying whether client-go's watch-list consistency detector checked
// them (package report: runcheck does not link client-go).
const detectorNote = report.DetectorNote

func summarize(reports []types.Report) summary {
	s := summary{skips: map[string]int{}, detector: map[string]int{}, clusterFrom: map[string]int{}}
	for _, r := range reports {
		s.suites = append(s.suites, r.SuiteDescription)
		if f := r.SuiteConfig.LabelFilter; f != "" && !slices.Contains(s.filters, f) {
			s.filters = append(s.filters, f)
		}
		s.dryRun = s.dryRun || r.SuiteConfig.DryRun
		s.labels = append(s.labels, r.SuiteLabels...)
		for _, sp := range r.SpecReports {
			if sp.LeafNodeType != types.NodeTypeIt {
				continue
			}
			s.labels = append(s.labels, sp.Labels()...)
			if sp.State.Is(types.SpecStatePassed | types.SpecStateFailureStates) {
				rs := ranSpec{text: sp.FullText(), seconds: sp.RunTime.Seconds(), phases: map[string]float64{}}
				counted := false
				for _, e := range sp.ReportEntries {
					switch {
					case e.Name == report.SpecEntry:
						if d, ok := report.DecodeSpec(e.Value.GetRawValue(), e.Value.AsJSON); ok {
							if d.Detector != "" && !counted {
								s.detector[d.Detector]++
								counted = true
							}
							for name, secs := range d.Time {
								rs.phases[name] += secs
							}
							if d.ClusterFrom != "" {
								s.clusterFrom[d.ClusterFrom]++
							}
						}
					}
				}
				s.ran = append(s.ran, rs)
			}
			switch {
			case sp.State.Is(types.SpecStatePassed):
				s.passed++
			case sp.State.Is(types.SpecStateInterrupted):
				s.interrupted++
			case sp.State.Is(types.SpecStateFailureStates):
				s.failed++
			case sp.State.Is(types.SpecStateSkipped):
				reason := strings.TrimSpace(sp.Failure.Message)
				if reason == "" {
					reason = notSelected
				} else {
					s.skipped++
				}
				s.skips[reason]++
			default: // pending
				s.others++
			}
		}
	}
	slices.Sort(s.labels)
	s.labels = slices.Compact(s.labels)
	return s
}

func (s summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "runcheck: specs of %s: %d passed, %d failed, %d skipped", s.suiteNames(), s.passed, s.failed, s.skipped)
	if n := s.skips[notSelected]; n > 0 {
		fmt.Fprintf(&b, ", %d not run", n)
	}
	if s.interrupted > 0 {
		fmt.Fprintf(&b, ", %d interrupted by another spec's failure (not failures of their own)", s.interrupted)
	}
	if s.others > 0 {
		fmt.Fprintf(&b, ", %d pending", s.others)
	}
	b.WriteString("\n")
	reasons := slices.SortedFunc(maps.Keys(s.skips), func(a, c string) int {
		if (a == notSelected) != (c == notSelected) { // the reasons first
			if a == notSelected {
				return 1
			}
			return -1
		}
		if s.skips[a] != s.skips[c] {
			return s.skips[c] - s.skips[a]
		}
		return strings.Compare(a, c)
	})
	for _, r := range reasons {
		what := "skipped"
		if r == notSelected {
			what = "not run"
		}
		fmt.Fprintf(&b, "  %4d %s: %s\n", s.skips[r], what, strings.ReplaceAll(r, "\n", " "))
	}
	for _, state := range slices.Sorted(maps.Keys(s.detector)) {
		fmt.Fprintf(&b, "runcheck: %s %s in %d streaming-list %s\n", detectorNote, state, s.detector[state], plural(s.detector[state], "spec"))
	}
	b.WriteString(s.timeString())
	return b.String()
}

// slowest is how many of the slowest specs the summary lists.
const slowest = 10

// timeString says where the specs' time went: the total, each phase's
// share (the cluster starts first), and the slowest specs with their
// phases. Empty when no spec ran.
func (s summary) timeString() string {
	if len(s.ran) == 0 {
		return ""
	}
	total, starts := s.specSeconds()
	phases := map[string]float64{}
	for _, r := range s.ran {
		for name, sec := range r.phases {
			phases[name] += sec
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "runcheck: time: %d %s ran for %.0f s in all; cluster starts: %d", len(s.ran), plural(len(s.ran), "spec"), total, len(starts))
	if len(starts) > 0 {
		fmt.Fprintf(&b, " (p50 %.1f s, p95 %.1f s)", quantile(starts, 0.5), quantile(starts, 0.95))
	}
	if len(s.clusterFrom) > 0 {
		var from []string
		for _, how := range slices.Sorted(maps.Keys(s.clusterFrom)) {
			from = append(from, fmt.Sprintf("%d %s", s.clusterFrom[how], how))
		}
		fmt.Fprintf(&b, "; the specs' own clusters: %s", strings.Join(from, ", "))
	}
	names := slices.SortedFunc(maps.Keys(phases), func(x, y string) int {
		if (x == timing.ClusterStart) != (y == timing.ClusterStart) {
			if x == timing.ClusterStart {
				return -1
			}
			return 1
		}
		if phases[x] != phases[y] {
			if phases[x] > phases[y] {
				return -1
			}
			return 1
		}
		return strings.Compare(x, y)
	})
	for _, n := range names {
		fmt.Fprintf(&b, "; %s %.0f s (%s)", n, phases[n], percent(phases[n], total))
	}
	b.WriteString("\n")
	ran := slowestFirst(s.ran)
	fmt.Fprintf(&b, "runcheck: the %d slowest specs:\n", min(slowest, len(ran)))
	for _, r := range ran[:min(slowest, len(ran))] {
		var parts []string
		rest := r.seconds
		for _, n := range slices.Sorted(maps.Keys(r.phases)) {
			parts = append(parts, fmt.Sprintf("%s %.1f s", n, r.phases[n]))
			rest -= r.phases[n]
		}
		parts = append(parts, fmt.Sprintf("the rest %.1f s", max(rest, 0)))
		fmt.Fprintf(&b, "  %6.1f s  %s (%s)\n", r.seconds, r.text, strings.Join(parts, ", "))
	}
	return b.String()
}

// specSeconds is the time the specs that ran took in all, and each one's
// cluster start, sorted.
func (s summary) specSeconds() (total float64, starts []float64) {
	for _, r := range s.ran {
		total += r.seconds
		if sec, ok := r.phases[timing.ClusterStart]; ok {
			starts = append(starts, sec)
		}
	}
	slices.Sort(starts)
	return total, starts
}

// slowestFirst is a copy of ran, the slowest first (then by text).
func slowestFirst(ran []ranSpec) []ranSpec {
	out := slices.Clone(ran)
	slices.SortStableFunc(out, func(x, y ranSpec) int {
		switch {
		case x.seconds > y.seconds:
			return -1
		case x.seconds < y.seconds:
			return 1
		}
		return strings.Compare(x.text, y.text)
	})
	return out
}

// quantile is the q-quantile of sorted (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func percent(part, total float64) string {
	if total <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*part/total)
}

// Err fails a run in which no spec passed in any suite.
func (s summary) Err() error {
	if s.passed > 0 || s.dryRun {
		return nil
	}
	return fmt.Errorf("no spec passed in any suite: %s; a run that tests nothing fails", s.whyNothing())
}

// ErrNoneRan fails a run in which no spec ran, passed or failed, in any
// suite: one that tested nothing.
func (s summary) ErrNoneRan() error {
	if len(s.ran) > 0 || s.dryRun {
		return nil
	}
	return fmt.Errorf("no spec ran in any suite: %s; a run that tests nothing fails", s.whyNothing())
}

// whyNothing says why no spec passed.
func (s summary) whyNothing() string {
	switch {
	case len(s.suites) == 0:
		return "the report holds no suite"
	case s.passed+s.failed+s.skipped+s.interrupted+s.others == 0 && len(s.filters) > 0:
		return fmt.Sprintf("the label filter %s selects no spec (labels that exist: %s)", strings.Join(quote(s.filters), ", "), report.LabelList(s.labels))
	case s.passed+s.failed+s.skipped+s.interrupted+s.others == 0:
		return "no spec was selected"
	case s.failed == 0 && s.skipped > 0:
		return "every selected spec skipped (reasons above)"
	}
	return "none passed"
}

func quote(ss []string) []string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%q", s))
	}
	return out
}

// labels lists each suite's spec labels with the number of specs carrying
// each, sorted.
func labels(reports []types.Report) string {
	var b strings.Builder
	for _, r := range reports {
		count := map[string]int{}
		for _, sp := range r.SpecReports {
			if sp.LeafNodeType != types.NodeTypeIt {
				continue
			}
			for _, l := range sp.Labels() {
				count[l]++
			}
		}
		for _, l := range r.SuiteLabels {
			count[l] += 0
		}
		fmt.Fprintf(&b, "%s:\n", r.SuiteDescription)
		for _, l := range slices.Sorted(maps.Keys(count)) {
			fmt.Fprintf(&b, "  %-30s %d %s\n", l, count[l], plural(count[l], "spec"))
		}
	}
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// suiteNames names the suites, each once; a suite that never started
// (another's failure under --fail-fast) has no description and is not
// named.
func (s summary) suiteNames() string {
	var names []string
	for _, d := range s.suites {
		if d != "" && !slices.Contains(names, d) {
			names = append(names, d)
		}
	}
	if len(names) == 0 {
		return "no named suite"
	}
	return strings.Join(names, ", ")
}
