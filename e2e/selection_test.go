package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// spec is an It's report with labels.
func spec(state types.SpecState, labels ...string) types.SpecReport {
	return types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeLabels: labels, State: state}
}

// TestEmptySelection: a run whose selection left no spec fails, naming what
// selected and the labels the suite has; a run with some spec selected
// passes here, even if every selected spec skipped (each says why in its
// report).
func TestEmptySelection(t *testing.T) {
	specs := []types.SpecReport{
		spec(types.SpecStateSkipped, "S1", "sync:list"),
		spec(types.SpecStateSkipped, "S2", "slow"),
		spec(types.SpecStateSkipped, "S3"),
		spec(types.SpecStateSkipped, "S10", "sample"),
		{LeafNodeType: types.NodeTypeReportAfterSuite, LeafNodeLabels: []string{"not-a-spec"}},
	}
	for _, tc := range []struct {
		name   string
		report types.Report
		want   string // "" = no error
	}{
		{
			name:   "label filter",
			report: types.Report{SuiteDescription: "conformance", SuiteConfig: types.SuiteConfig{LabelFilter: "smoke"}, PreRunStats: types.PreRunStats{TotalSpecs: 4}, SpecReports: specs},
			want:   `informer-conformance: the label filter "smoke" selects none of the 4 specs of suite "conformance", a run that would test nothing; labels that exist: S1-S3, S10, sample, slow, sync:list`,
		},
		{
			name:   "dry run",
			report: types.Report{SuiteDescription: "conformance", SuiteConfig: types.SuiteConfig{LabelFilter: "smoke", DryRun: true}, PreRunStats: types.PreRunStats{TotalSpecs: 4}, SpecReports: specs},
			want:   `the label filter "smoke" selects none of the 4 specs`,
		},
		{
			name:   "focus and skip",
			report: types.Report{SuiteDescription: "conformance", SuiteConfig: types.SuiteConfig{LabelFilter: "S1", FocusStrings: []string{"relist"}, SkipStrings: []string{"S1 "}}, PreRunStats: types.PreRunStats{TotalSpecs: 4}, SpecReports: specs},
			want:   `the label filter "S1", the focus "relist" with the skip "S1 " selects none of the 4 specs`,
		},
		{
			name:   "no spec registered",
			report: types.Report{SuiteDescription: "conformance", SuiteConfig: types.SuiteConfig{LabelFilter: "smoke"}},
			want:   `suite "conformance" has no spec: the test package registers none`,
		},
		{
			name:   "selected, all skipped",
			report: types.Report{SuiteDescription: "conformance", SuiteConfig: types.SuiteConfig{LabelFilter: "S1"}, PreRunStats: types.PreRunStats{TotalSpecs: 4, SpecsThatWillRun: 1}, SpecReports: specs},
		},
		{
			name:   "no filter",
			report: types.Report{SuiteDescription: "conformance", PreRunStats: types.PreRunStats{TotalSpecs: 4, SpecsThatWillRun: 4}, SpecReports: specs},
		},
	} {
		err := emptySelection(tc.report)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v\nwant an error containing %s", tc.name, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: the message is more than one line: %q", tc.name, err)
		}
	}
}

// TestSuiteLabels: the labels of every It, those left out by the filter
// included, and the suite's own, each once.
func TestSuiteLabels(t *testing.T) {
	r := types.Report{SuiteLabels: []string{"suite"}, SpecReports: []types.SpecReport{
		spec(types.SpecStatePassed, "S1", "fast"),
		spec(types.SpecStateSkipped, "fast", "S2"),
		{LeafNodeType: types.NodeTypeBeforeSuite, LeafNodeLabels: []string{"before"}},
	}}
	if got, want := strings.Join(suiteLabels(r), " "), "S1 S2 fast suite"; got != want {
		t.Errorf("suiteLabels = %q, want %q", got, want)
	}
}

// TestEmptySelectionFails runs a Ginkgo suite through RunSpecs
// (testdata/tinysuite, five specs that need no cluster) as a downstream
// runs its test package: built with go test -c, then run by go test's
// binary itself (one process) and by the ginkgo CLI with -procs=2, where
// every process runs the test function and only process 1 sees the
// whole report. A filter that selects nothing fails with the message
// naming the labels; one that selects specs passes; a dry run fails and
// passes alike; INFORMER_CONFORMANCE_ALLOW_EMPTY=true lets the empty one pass.
func TestEmptySelectionFails(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a test binary and the ginkgo CLI")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "tinysuite.test")
	ginkgo := filepath.Join(dir, "ginkgo")
	for _, args := range [][]string{
		{"test", "-c", "-o", bin, "./testdata/tinysuite"},
		{"build", "-o", ginkgo, "github.com/onsi/ginkgo/v2/ginkgo"},
	} {
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	const message = `informer-conformance: the label filter "smoke" selects none of the 5 specs of suite "tiny", a run that would test nothing; labels that exist: S1-S3, S5, S7, capability:none, fast, slow`
	for _, tc := range []struct {
		name     string
		cmd      []string
		allow    bool
		wantFail bool
		want     string
	}{
		{name: "go test, nothing selected", cmd: []string{bin, "-ginkgo.no-color", "-ginkgo.label-filter=smoke"}, wantFail: true, want: message},
		{name: "go test, specs selected", cmd: []string{bin, "-ginkgo.no-color", "-ginkgo.label-filter=fast"}, want: "2 Passed"},
		{name: "go test, focus selects nothing", cmd: []string{bin, "-ginkgo.no-color", "-ginkgo.focus=relist"}, wantFail: true, want: `the focus "relist" selects none of the 5 specs`},
		{name: "go test, every selected spec skips", cmd: []string{bin, "-ginkgo.no-color", "-ginkgo.label-filter=capability:none"}, want: "Will run 1 of 5 specs"},
		{name: "go test, dry run, nothing selected", cmd: []string{bin, "-ginkgo.no-color", "-ginkgo.dry-run", "-ginkgo.label-filter=smoke"}, wantFail: true, want: message},
		{name: "go test, dry run, specs selected", cmd: []string{bin, "-ginkgo.no-color", "-ginkgo.dry-run", "-ginkgo.label-filter=S1 || S5"}, want: "2 Passed"},
		{name: "go test, empty allowed", cmd: []string{bin, "-ginkgo.no-color", "-ginkgo.label-filter=smoke"}, allow: true, want: "0 Passed"},
		{name: "ginkgo -procs=2, nothing selected", cmd: []string{ginkgo, "-procs=2", "--no-color", "--label-filter=smoke", bin}, wantFail: true, want: message},
		{name: "ginkgo -procs=2, specs selected", cmd: []string{ginkgo, "-procs=2", "--no-color", "--label-filter=fast", bin}, want: "Test Suite Passed"},
		{name: "ginkgo --dry-run, nothing selected", cmd: []string{ginkgo, "--dry-run", "--no-color", "--label-filter=smoke", bin}, wantFail: true, want: message},
		{name: "ginkgo -procs=2, empty allowed", cmd: []string{ginkgo, "-procs=2", "--no-color", "--label-filter=smoke", bin}, allow: true, want: "Test Suite Passed"},
	} {
		cmd := exec.Command(tc.cmd[0], tc.cmd[1:]...)
		cmd.Dir = dir
		cmd.Env = append(withoutRunVars(os.Environ()), EnvRun+"=1", EnvBackend+"=local", "INFORMER_CONFORMANCE_ARTIFACTS="+filepath.Join(dir, "artifacts"))
		if tc.allow {
			cmd.Env = append(cmd.Env, EnvAllowEmpty+"=true")
		}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		switch {
		case err != nil && !errors.As(err, &exit):
			t.Fatalf("%s: %v", tc.name, err)
		case tc.wantFail && err == nil:
			t.Errorf("%s: exited 0, want a failure:\n%s", tc.name, out)
		case !tc.wantFail && err != nil:
			t.Errorf("%s: %v, want exit 0:\n%s", tc.name, err, out)
		case !strings.Contains(string(out), tc.want):
			t.Errorf("%s: the output lacks %q:\n%s", tc.name, tc.want, out)
		}
	}
}

// withoutRunVars is env without the variables a run reads (make test
// exports some): the child's are the test's.
func withoutRunVars(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "INFORMER_CONFORMANCE") && !strings.HasPrefix(kv, "GINKGO_") {
			out = append(out, kv)
		}
	}
	return out
}
