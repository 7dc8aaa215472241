// Package downstream tests the reusable workflow's scripts (run.sh, gate.sh)
// on a suite that needs no cluster.
package downstream

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmptySelectionFailsTheSideAndTheGate: run.sh runs a downstream-shaped
// package (e2e/testdata/tinysuite: e2e.RunSpecs, five specs that need no
// cluster) through the ginkgo CLI in two processes, as the workflow's side
// job does. A label filter that selects no spec fails the side's job,
// saying so in its summary, and the gate fails too, with the labels that
// exist in its summary; one that selects specs passes both (the control).
func TestEmptySelectionFailsTheSideAndTheGate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the tools, the ginkgo CLI and a test binary")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		filter   string
		wantFail bool
		side     string // in the side's output and job summary
		gate     string // in the gate's summary
	}{
		{filter: "smoke", wantFail: true,
			side: `the label filter "smoke" selects no spec (labels that exist: S1-S3, S5, S7, capability:none, fast, slow)`,
			gate: "**Verdict: blocks**: no spec ran on the head"},
		{filter: "fast", side: "run.sh: ran 0", gate: "**Verdict: passes**: every spec that ran on the head passed"},
	} {
		dir := t.TempDir()
		out := filepath.Join(dir, "head")
		stepSummary := filepath.Join(dir, "side.md")
		run := exec.Command(filepath.Join(root, "hack/downstream/run.sh"), root, "./e2e/testdata/tinysuite", out)
		run.Env = append(withoutRunVars(os.Environ()), "LABEL_FILTER="+tc.filter, "PROCS=2", "GITHUB_STEP_SUMMARY="+stepSummary)
		sideOut, err := run.CombinedOutput()
		if (err != nil) != tc.wantFail {
			t.Errorf("filter %q: run.sh: %v (want a failure: %t)\n%s", tc.filter, err, tc.wantFail, sideOut)
		}
		if !strings.Contains(string(sideOut), tc.side) {
			t.Errorf("filter %q: run.sh's output lacks %q:\n%s", tc.filter, tc.side, sideOut)
		}
		if status, _ := os.ReadFile(filepath.Join(out, "status")); !strings.HasPrefix(string(status), "ran ") {
			t.Errorf("filter %q: run.sh recorded %q, want ran N", tc.filter, status)
		}
		if tc.wantFail {
			if got, _ := os.ReadFile(stepSummary); !strings.Contains(string(got), "**Failed:** no spec ran in any suite: "+tc.side) {
				t.Errorf("filter %q: the side's job summary %q lacks the reason", tc.filter, got)
			}
		}
		summary := filepath.Join(dir, "gate.md")
		gate := exec.Command(filepath.Join(root, "hack/downstream/gate.sh"), out)
		gate.Env = append(os.Environ(), "SUMMARY="+summary)
		gateOut, err := gate.CombinedOutput()
		if (err != nil) != tc.wantFail {
			t.Errorf("filter %q: gate.sh: %v (want a failure: %t)\n%s", tc.filter, err, tc.wantFail, gateOut)
		}
		got, _ := os.ReadFile(summary)
		if !strings.Contains(string(got), tc.gate) || tc.wantFail && !strings.Contains(string(got), tc.side) {
			t.Errorf("filter %q: the gate's summary lacks %q:\n%s", tc.filter, tc.gate, got)
		}
	}
}

// withoutRunVars is env without the variables a run reads (make test
// exports some): run.sh sets the child's.
func withoutRunVars(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "INFORMER_CONFORMANCE") && !strings.HasPrefix(kv, "GINKGO_") && !strings.HasPrefix(kv, "LABEL_FILTER=") && !strings.HasPrefix(kv, "GITHUB_STEP_SUMMARY=") {
			out = append(out, kv)
		}
	}
	return out
}
