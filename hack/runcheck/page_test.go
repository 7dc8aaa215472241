package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/informer-conformance/informer-conformance/report/timing"
)

// TestMeasuredPage: a row per run with a report (counts, the suites' wall
// time, spec time, cluster starts), the runs without one named, the
// machine and commit said; no report at all is an error.
func TestMeasuredPage(t *testing.T) {
	dir := t.TempDir()
	r := suite("conformance", "!slow",
		timed("S1 a", types.SpecStatePassed, 10, "", timing.ClusterStart, 2.0),
		timed("S2 b", types.SpecStateFailed, 30, "", timing.ClusterStart, 4.0),
		spec("S3 c", types.SpecStateSkipped, lacks),
	)
	r.RunTime = 237 * time.Second
	data, err := json.Marshal([]types.Report{r})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "report.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	page, err := measuredPage([]namedRun{{"make e2e", path}, {"make e2e-long", filepath.Join(dir, "long", "report.json")}}, "abc1234", machine{cores: 2, memory: "24 GiB"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		", the suite at commit abc1234, on a machine with 2 cores and 24 GiB.",
		"| `make e2e` | 1 | 1 | 1 | 3 min 57 s | 40 s | 2 (2.0 s, 4.0 s; 15%) |\n",
		"Not in this page's runs: `make e2e-long` (no report at ",
		"- 1: " + lacks + "\n",
		"- 30.0 s: S2 b\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if _, err := measuredPage([]namedRun{{"make e2e-long", filepath.Join(dir, "none.json")}}, "", machine{cores: 2}); err == nil {
		t.Error("no report at all, yet a page")
	}
}
