package main

import (
	"strings"
	"testing"
)

func TestMarkdownTableAndDifferences(t *testing.T) {
	cols := []column{
		{ClientGo: "v0.32.13", Kube: "v1.36.3", Cells: map[string]cell{
			"S3 mid-frame": {Outcome: "failed", Reinits: 1, ByCause: map[string]int{"500 InternalError": 1}, Failure: "re-initialisations by cause"},
			"S8 resync":    {Outcome: "passed"},
			"S1 restart":   {Outcome: "skipped"},
			"S9 sync":      {Outcome: "passed", Reinits: 1, ByCause: map[string]int{"transport error": 1}},
		}},
		{ClientGo: "v0.36.6", Kube: "v1.36.3", Cells: map[string]cell{
			"S3 mid-frame": {Outcome: "passed", ByCause: map[string]int{}},
			"S8 resync":    {Outcome: "passed"},
			"S1 restart":   {Outcome: "skipped"},
			"S9 sync":      {Outcome: "passed", Reinits: 2, ByCause: map[string]int{"transport error": 2}},
		}},
		{ClientGo: "v0.99.0", Error: "no report"},
	}
	md := markdown(cols)
	for _, want := range []string{
		"| S3 mid-frame | **FAIL** r=1 | pass r=0 | did not run |",
		"| S8 resync | pass r=0 | pass r=0 | did not run |",
		"- client-go v0.99.0 did not run: no report",
		"## Outcomes that differ between versions\n\n- S3 mid-frame: v0.32.13: failed, re-initialisations 500 InternalError: 1 (re-initialisations by cause); v0.36.6: passed, re-initialisations none;",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "S1 restart") {
		t.Errorf("a spec skipped in every column (filtered out) has a row:\n%s", md)
	}
	if !strings.Contains(md, "## Same outcome, other re-initialisations") || !strings.Contains(md, "- S9 sync: v0.32.13: passed, re-initialisations transport error: 1;") {
		t.Errorf("S9's other count of re-initialisations is not listed apart:\n%s", md)
	}
	if strings.Contains(md, "- S8 resync:") {
		t.Errorf("S8 is the same everywhere, yet listed as a difference:\n%s", md)
	}
}

func TestDifferencesNameTheKubeAPIServerWhenItVaries(t *testing.T) {
	cols := []column{
		{ClientGo: "v0.36.6", Kube: "v1.35.4", Cells: map[string]cell{"S1 restart": {Outcome: "passed", Reinits: 1, ByCause: map[string]int{"410 Gone": 1}}}},
		{ClientGo: "v0.36.6", Kube: "v1.36.3", Cells: map[string]cell{"S1 restart": {Outcome: "passed", Reinits: 1, ByCause: map[string]int{"other status": 1}}}},
	}
	md := markdown(cols)
	want := "- S1 restart: v0.36.6 / kube-apiserver v1.35.4: passed, re-initialisations 410 Gone: 1; v0.36.6 / kube-apiserver v1.36.3: passed, re-initialisations other status: 1;"
	if !strings.Contains(md, want) {
		t.Errorf("differences lack %q:\n%s", want, md)
	}
}
