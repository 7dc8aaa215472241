package report

import (
	"slices"
	"strings"
)

// Fleet is the observations of the informers of a fleet (informers a spec
// starts alike, S12's fifty each with its own connection) as one set, the
// informer named name: per What, the counts summed, the longest time and
// the largest size, every value and error text of any member once (sorted,
// ErrorTextSeparator between), varying when it varies in any member. A
// difference between members is kept (two values where they disagree);
// fifty copies of one observation are not, which compare would otherwise
// list or count fifty times.
func Fleet(name string, members ...[]Observation) []Observation {
	var out []Observation
	at := map[string]int{}
	for _, obs := range members {
		for _, o := range obs {
			i, seen := at[o.What]
			if !seen {
				o.Informer = name
				if o.Number != nil {
					n := *o.Number
					o.Number = &n
				}
				at[o.What] = len(out)
				out = append(out, o)
				continue
			}
			m := &out[i]
			m.Varies = m.Varies || o.Varies
			switch {
			case m.Number != nil && o.Number != nil && m.NoiseClass() == Count:
				*m.Number += *o.Number
			case m.Number != nil && o.Number != nil:
				*m.Number = max(*m.Number, *o.Number)
			default:
				m.Value = unionOf(m.Value, o.Value)
			}
		}
	}
	return out
}

// unionOf is the parts of a and b (values joined by ErrorTextSeparator, as
// the probe joins several values and ErrorTexts several texts), each once,
// sorted.
func unionOf(a, b string) string {
	var parts []string
	for _, v := range []string{a, b} {
		if v != "" {
			parts = append(parts, strings.Split(v, ErrorTextSeparator)...)
		}
	}
	slices.Sort(parts)
	return strings.Join(slices.Compact(parts), ErrorTextSeparator)
}
