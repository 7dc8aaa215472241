package report

import (
	"slices"
	"testing"
)

// TestLabelList: scenario labels first, in number order, three or more
// consecutive ones as a range; the others sorted after them.
func TestLabelList(t *testing.T) {
	for _, tc := range []struct {
		labels []string
		want   string
	}{
		{nil, "none"},
		{[]string{"slow", "S2", "S1", "S3", "S4", "S10", "S12", "S11", "S13", "S7", "S8", "capability:ha"}, "S1-S4, S7, S8, S10-S13, capability:ha, slow"},
		{[]string{"S1", "S1", "S01x", "s2"}, "S1, S01x, s2"},
	} {
		if got := LabelList(sortedSet(tc.labels)); got != tc.want {
			t.Errorf("LabelList(%q) = %q, want %q", tc.labels, got, tc.want)
		}
	}
}

func sortedSet(labels []string) []string {
	out := slices.Clone(labels)
	slices.Sort(out)
	return slices.Compact(out)
}
