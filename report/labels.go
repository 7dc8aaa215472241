package report

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// scenarioLabel is a scenario's label (S1, S34).
var scenarioLabel = regexp.MustCompile(`^S([0-9]+)$`)

// LabelList writes a suite's labels on one line, for a message saying
// which exist (e2e.RunSpecs's and runcheck's, when a label filter selects
// no spec): the scenario labels first, in number order, three or more
// consecutive ones as a range (S1-S34), then the others as given (sorted);
// "none" for none.
func LabelList(labels []string) string {
	var nums []int
	var rest []string
	for _, l := range labels {
		if m := scenarioLabel.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			nums = append(nums, n)
			continue
		}
		rest = append(rest, l)
	}
	slices.Sort(nums)
	nums = slices.Compact(nums)
	var out []string
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
			j++
		}
		if j-i < 2 {
			j = i
			out = append(out, fmt.Sprintf("S%d", nums[i]))
		} else {
			out = append(out, fmt.Sprintf("S%d-S%d", nums[i], nums[j]))
		}
		i = j + 1
	}
	out = append(out, rest...)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
