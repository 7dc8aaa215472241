package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func part(specs ...Spec) SuiteSummary {
	return SuiteSummary{Suite: "conformance", ClientGo: "v0.36.6", KubeAPIServer: "v1.36.3",
		ClientGoGates: map[string]Gate{"WatchListClient": {Enabled: true, Default: true}}, Specs: specs}
}

func TestMergeParts(t *testing.T) {
	a := part(Spec{Spec: "S1 restart", Outcome: "passed"}, Spec{Spec: "S8 resync", Outcome: "skipped"}, Spec{Spec: "S9 sync", Outcome: "skipped"})
	b := part(Spec{Spec: "S1 restart", Outcome: "skipped"}, Spec{Spec: "S8 resync", Outcome: "failed", Failure: "x"}, Spec{Spec: "S9 sync", Outcome: "skipped"})
	m, err := Merge([]SuiteSummary{a, b})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range m.Specs {
		got[s.Spec] = s.Outcome
	}
	want := map[string]string{"S1 restart": "passed", "S8 resync": "failed", "S9 sync": "skipped"}
	if len(got) != len(want) {
		t.Fatalf("merged %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if _, err := Merge([]SuiteSummary{a, a}); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("a spec run in two parts = %v", err)
	}
	other := part()
	other.ClientGo = "v0.35.10"
	if _, err := Merge([]SuiteSummary{a, other}); err == nil || !strings.Contains(err.Error(), "not parts of one run") {
		t.Errorf("two client-go versions = %v", err)
	}
	etcd := part()
	etcd.Etcd = "v3.5.35"
	if _, err := Merge([]SuiteSummary{a, etcd}); err == nil || !strings.Contains(err.Error(), "not parts of one run") {
		t.Errorf("two etcd versions = %v", err)
	}
	unknown := part()
	unknown.ClientGo, unknown.ClientGoUnknown = "", "go.mod file not found"
	if _, err := Merge([]SuiteSummary{a, unknown}); err == nil || !strings.Contains(err.Error(), "not parts of one run") {
		t.Errorf("a known and an unknown client-go version = %v", err)
	}
	gates := part()
	gates.ClientGoGates = map[string]Gate{"WatchListClient": {Enabled: false, Default: true}}
	if _, err := Merge([]SuiteSummary{a, gates}); err == nil {
		t.Error("two gate values merged")
	}
}

func TestMergeFilesWritesTheReport(t *testing.T) {
	root := t.TempDir()
	for i, p := range []SuiteSummary{
		part(Spec{Spec: "S1 restart", Outcome: "passed"}, Spec{Spec: "S8 resync", Outcome: "skipped"}),
		part(Spec{Spec: "S1 restart", Outcome: "skipped"}, Spec{Spec: "S8 resync", Outcome: "passed"}),
	} {
		if err := Write(FilesIn(filepath.Join(root, "parts", string(rune('a'+i))), "conformance"), p); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(root, "merged")
	n, err := MergeFiles("conformance", out, []string{filepath.Join(root, "parts")})
	if err != nil || n != 2 {
		t.Fatalf("MergeFiles = %d, %v", n, err)
	}
	data, err := os.ReadFile(FilesIn(out, "conformance").JSON)
	if err != nil {
		t.Fatal(err)
	}
	var m SuiteSummary
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Specs) != 2 || m.Specs[0].Outcome != "passed" || m.Specs[1].Outcome != "passed" {
		t.Errorf("merged specs %+v", m.Specs)
	}
	for _, f := range []string{FilesIn(out, "conformance").HTML, FilesIn(out, "conformance").Summary} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	if _, err := MergeFiles("conformance", out, []string{t.TempDir()}); err == nil {
		t.Error("a directory without reports merged")
	}
}
