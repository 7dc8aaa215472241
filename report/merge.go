package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Merge joins the informer reports of one suite run in parts (the default
// suite split over CI jobs by label, each job one report): a spec that ran
// in one part (passed, failed, ...) keeps that result, one every part
// skipped stays skipped; the versions, gates and detector state must agree
// (the parts ran the same build), and a spec that ran in two parts is an
// error (the parts' label filters overlap). Specs come out sorted by name.
func Merge(parts []SuiteSummary) (SuiteSummary, error) {
	if len(parts) == 0 {
		return SuiteSummary{}, fmt.Errorf("no reports to merge")
	}
	out := parts[0]
	out.Specs = nil
	byName := map[string]Spec{}
	ranIn := map[string]int{}
	for i, p := range parts {
		if p.Suite != out.Suite || p.ClientGo != out.ClientGo || p.KubeAPIServer != out.KubeAPIServer || p.Etcd != out.Etcd || p.ClientGoReplacement != out.ClientGoReplacement || p.ClientGoUnknown != out.ClientGoUnknown {
			return SuiteSummary{}, fmt.Errorf("report %d is of %s, report 1 of %s: not parts of one run", i+1, Title(p), Title(out))
		}
		if !maps.Equal(gateValues(p.ClientGoGates), gateValues(out.ClientGoGates)) {
			return SuiteSummary{}, fmt.Errorf("report %d ran other client-go feature gates than report 1: not parts of one run", i+1)
		}
		if out.WatchListConsistencyDetector == "" {
			out.WatchListConsistencyDetector = p.WatchListConsistencyDetector
		}
		for _, s := range p.Specs {
			prev, seen := byName[s.Spec]
			if s.Outcome == "skipped" {
				if !seen {
					byName[s.Spec] = s
				}
				continue
			}
			if seen && prev.Outcome != "skipped" {
				return SuiteSummary{}, fmt.Errorf("%q ran in reports %d and %d: the parts' label filters overlap", s.Spec, ranIn[s.Spec], i+1)
			}
			byName[s.Spec] = s
			ranIn[s.Spec] = i + 1
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out.Specs = append(out.Specs, byName[name])
	}
	return out, nil
}

func gateValues(g map[string]Gate) map[string]bool {
	v := map[string]bool{}
	for name, gate := range g {
		v[name] = gate.Enabled
	}
	return v
}

// MergeFiles merges the informer reports of suite found in dirs (each a
// part's artifacts directory, or a parent of several) and writes the merged
// report files into out; it returns how many parts it read.
func MergeFiles(suite, out string, dirs []string) (int, error) {
	var parts []SuiteSummary
	for _, d := range dirs {
		name := filepath.Base(FilesIn(d, suite).JSON)
		var found []string
		err := filepath.WalkDir(d, func(path string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() && e.Name() == name {
				found = append(found, path)
			}
			return err
		})
		if err != nil {
			return 0, err
		}
		if len(found) == 0 {
			return 0, fmt.Errorf("no %s under %s", name, d)
		}
		for _, f := range found {
			s, err := ReadSummary(f)
			if err != nil {
				return 0, err
			}
			parts = append(parts, s)
		}
	}
	merged, err := Merge(parts)
	if err != nil {
		return 0, err
	}
	return len(parts), Write(FilesIn(out, suite), merged)
}

// ReadSummary reads an informer report's JSON (Files.JSON).
func ReadSummary(path string) (SuiteSummary, error) {
	var s SuiteSummary
	data, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
