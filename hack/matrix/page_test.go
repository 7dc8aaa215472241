package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/informer-conformance/informer-conformance/report/known"
)

// TestVerdictPageAndDataInStep: the verdict page in the tree and the
// verdict data the suite ships (report/known/known.json) come from the
// same run and say the same: the page names the data's commit and server,
// every entry the run saw has its finding on the page with the same
// upstream change, and every finding on the page is an entry of the data.
// A `make verdicts` writes both; an edit of one alone fails here.
func TestVerdictPageAndDataInStep(t *testing.T) {
	data := knownData()
	raw, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(data.Run.Page)))
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	run := regexp.MustCompile(`\*\*Run\*\*: the suite at commit ([^,]+), against kube-apiserver ([^,]+),`).FindStringSubmatch(page)
	if run == nil {
		t.Fatalf("%s does not name its run (**Run**: the suite at commit ..., against kube-apiserver ...)", data.Run.Page)
	}
	if run[1] != data.Run.Commit || run[2] != data.Run.KubeAPIServer {
		t.Errorf("%s is of commit %s and kube-apiserver %s, the verdict data of %s and %s: render both from one run (make verdicts, or -render)", data.Run.Page, run[1], run[2], data.Run.Commit, data.Run.KubeAPIServer)
	}
	findings := page[strings.Index(page, "\n## Findings\n"):]
	findings = findings[:strings.Index(findings[1:], "\n## ")+1]
	heading := regexp.MustCompile(`(?m)^### (.+)\n\n\*\*([^*]+)\*\*\. Upstream: (.+)\.$`)
	onPage := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(findings, -1) {
		onPage[m[1]+"\x00"+m[3]] = true
		found := false
		for _, e := range data.Entries {
			if entryHeading(e) == m[1] && e.Upstream == m[3] && e.Kind == m[2] {
				found = true
			}
		}
		if !found {
			t.Errorf("the page's finding %q (%s, upstream %q) is no entry of the verdict data", m[1], m[2], m[3])
		}
	}
	if len(onPage) == 0 {
		t.Fatalf("no finding parsed from the page's Findings section")
	}
	for _, e := range data.Entries {
		if len(e.Seen) > 0 && !onPage[entryHeading(e)+"\x00"+e.Upstream] {
			t.Errorf("the verdict data's entry %q was seen on %v, yet the page has no finding of it", e.Spec, e.Seen)
		}
	}
}

// entryHeading is the heading of e's finding on the page.
func entryHeading(e known.Entry) string {
	return verdict{SpecContains: e.Spec, Upstream: e.Upstream, entry: e}.heading()
}
