package report

import (
	"fmt"
	"html"
	"maps"
	"math"
	"slices"
	"strings"
)

// The SVG timeline of one spec (TimelineSVG): a row per fault window, then
// per informer its requests as bars (stacked where they overlap), dials,
// handler events, re-initialisations with their causes, the sync and each
// convergence; then the bounds the spec asserted. Fault windows are also
// bands across every row. With more than aggregateAbove informers (the
// relist storm's 50) the informers are drawn together: requests in flight
// and handler events per time slice, re-initialisations by cause.
const (
	svgWidth       = 1100.0
	svgLabelWidth  = 190.0
	svgRow         = 16.0
	aggregateAbove = 8
	aggregateSlots = 120
)

// Colours by request kind and by event kind (the legend of the report).
var (
	requestColours = map[string]string{"list": "#3b7dd8", "streaming list": "#8a4fd1", "watch": "#2aa198", "discovery": "#999999", "consistency check": "#c9a227"}
	eventColours   = map[string]string{"Add": "#2e9e44", "Update": "#3b7dd8", "Delete": "#d33", "Delete (tombstone)": "#a0522d", "Update (UID changed)": "#e67e00"}
)

type svgBuilder struct {
	b     strings.Builder
	y     float64
	scale float64 // px per ms
	endMs float64
}

func (s *svgBuilder) x(ms float64) float64 {
	return svgLabelWidth + math.Max(0, math.Min(ms, s.endMs))*s.scale
}

func (s *svgBuilder) label(text string) {
	fmt.Fprintf(&s.b, `<text class="lane" x="4" y="%.1f">%s</text>`, s.y+svgRow-4, esc(text))
}

func esc(s string) string { return html.EscapeString(s) }

// TimelineSVG draws t (see the constants above); "" for a spec without one.
func TimelineSVG(t *Timeline) string {
	if t == nil {
		return ""
	}
	end := t.EndMs
	for _, in := range t.Informers {
		for _, r := range in.Requests {
			end = math.Max(end, r.EndMs)
		}
	}
	if end <= 0 {
		end = 1
	}
	s := &svgBuilder{endMs: end, scale: (svgWidth - svgLabelWidth - 10) / end}
	s.y = 22 // below the axis
	for _, f := range t.Faults {
		s.label(f.Kind)
		s.fault(f, s.y, svgRow-2)
		s.y += svgRow
	}
	if len(t.Informers) > aggregateAbove {
		s.aggregate(t.Informers)
	} else {
		for _, in := range t.Informers {
			s.informer(in)
		}
	}
	for _, b := range t.Bounds {
		s.bound(b)
	}
	height := s.y + 6
	body := s.b.String()
	// Fault bands behind everything, over the full height.
	var bands strings.Builder
	for _, f := range t.Faults {
		x1, x2 := s.x(f.StartMs), s.x(faultEnd(f, end))
		fmt.Fprintf(&bands, `<rect class="band" x="%.1f" y="16" width="%.1f" height="%.1f"/>`, x1, math.Max(x2-x1, 1), height-16)
	}
	var out strings.Builder
	fmt.Fprintf(&out, `<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`, svgWidth, height, svgWidth, height)
	out.WriteString(axis(s, end))
	out.WriteString(bands.String())
	out.WriteString(body)
	out.WriteString(`</svg>`)
	return out.String()
}

func faultEnd(f TimelineFault, end float64) float64 {
	if f.EndMs < 0 {
		return end
	}
	return f.EndMs
}

func axis(s *svgBuilder, end float64) string {
	var b strings.Builder
	step := niceStep(end / 10)
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="16" x2="%.1f" y2="16"/>`, svgLabelWidth, s.x(end))
	for t := 0.0; t <= end; t += step {
		fmt.Fprintf(&b, `<line class="tick" x1="%.1f" y1="13" x2="%.1f" y2="19"/><text class="tick" x="%.1f" y="11">%s</text>`, s.x(t), s.x(t), s.x(t), seconds(t))
	}
	return b.String()
}

// niceStep rounds d (ms) up to 1, 2 or 5 times a power of ten.
func niceStep(d float64) float64 {
	if d <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(d)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= d {
			return m * p
		}
	}
	return 10 * p
}

func seconds(ms float64) string {
	if ms >= 10000 || ms == 0 || math.Mod(ms, 1000) == 0 {
		return fmt.Sprintf("%.0f s", ms/1000)
	}
	return fmt.Sprintf("%.1f s", ms/1000)
}

func (s *svgBuilder) fault(f TimelineFault, y, h float64) {
	x1, x2 := s.x(f.StartMs), s.x(faultEnd(f, s.endMs))
	open := ""
	if f.EndMs < 0 {
		open = ", still in force at the end"
	}
	fmt.Fprintf(&s.b, `<rect class="fault" data-kind="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>`,
		esc(f.Kind), x1, y+1, math.Max(x2-x1, 2), h,
		esc(fmt.Sprintf("%s %s: %s to %s%s", f.Kind, f.Detail, seconds(f.StartMs), seconds(faultEnd(f, s.endMs)), open)))
}

func (s *svgBuilder) informer(in InformerTimeline) {
	// Requests: each into the first sub-row free at its start.
	reqs := slices.Concat(in.Requests, in.Checks)
	var rowEnds []float64
	rows := make([]int, len(reqs))
	for i, r := range reqs {
		e := r.EndMs
		if e < 0 {
			e = s.endMs
		}
		placed := false
		for j, re := range rowEnds {
			if r.StartMs >= re {
				rows[i], rowEnds[j], placed = j, e, true
				break
			}
		}
		if !placed {
			rows[i] = len(rowEnds)
			rowEnds = append(rowEnds, e)
		}
	}
	s.label("informer " + in.Informer)
	top := s.y
	// Marks row: dials, events, re-initialisations, sync, convergence.
	for _, d := range in.DialsMs {
		x := s.x(d)
		fmt.Fprintf(&s.b, `<path class="dial" d="M%.1f %.1f l-3 -6 h6 z"><title>dial at %s</title></path>`, x, top+svgRow-2, seconds(d))
	}
	for _, e := range in.Events {
		fmt.Fprintf(&s.b, `<line class="event" data-kind="%s" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"><title>%s at %s</title></line>`,
			esc(e.Kind), s.x(e.AtMs), top+2, s.x(e.AtMs), top+svgRow-8, eventColours[e.Kind], esc(e.Kind), seconds(e.AtMs))
	}
	if in.SyncedMs != nil {
		x := s.x(*in.SyncedMs)
		fmt.Fprintf(&s.b, `<circle class="synced" cx="%.1f" cy="%.1f" r="3.5"><title>synced at %s</title></circle>`, x, top+svgRow/2, seconds(*in.SyncedMs))
	}
	for _, c := range in.Converged {
		fmt.Fprintf(&s.b, `<line class="converged" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"><title>converged at %s</title></line>`, s.x(c), top, s.x(c), top+svgRow*float64(1+max(len(rowEnds), 1)), seconds(c))
	}
	s.y += svgRow
	for i, r := range reqs {
		s.request(r, s.y+float64(rows[i])*svgRow)
	}
	// Re-initialisations over their requests.
	for _, ri := range in.Reinits {
		row := 0
		for i, r := range reqs {
			if r.ID == ri.Request && r.Kind != KindConsistencyCheck {
				row = rows[i]
			}
		}
		x, y := s.x(ri.AtMs), s.y+float64(row)*svgRow+svgRow/2
		fmt.Fprintf(&s.b, `<path class="reinit" data-cause="%s" d="M%.1f %.1f l5 5 l-5 5 l-5 -5 z"><title>re-initialisation #%d at %s: %s</title></path>`,
			esc(ri.Cause), x, y-5, ri.Request, seconds(ri.AtMs), esc(ri.Cause))
	}
	s.y += svgRow * float64(max(len(rowEnds), 1))
}

func (s *svgBuilder) request(r TimelineRequest, y float64) {
	e := r.EndMs
	if e < 0 {
		e = s.endMs
	}
	x1, x2 := s.x(r.StartMs), s.x(e)
	class := "req"
	if r.Status >= 400 || (r.Ended != "" && r.Ended != "open" && r.Ended != EndedByServer) {
		class += " failed"
	}
	status := "no response"
	if r.Status != 0 {
		status = fmt.Sprint(r.Status)
	}
	ended := r.Ended
	if ended == "" {
		ended = "ended"
	}
	fmt.Fprintf(&s.b, `<rect class="%s" data-kind="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>#%d %s %s to %s: %s, %d events, %s</title></rect>`,
		class, esc(r.Kind), x1, y+3, math.Max(x2-x1, 2), svgRow-6, requestColours[r.Kind], r.ID, esc(r.Kind), seconds(r.StartMs), seconds(e), status, r.Events, esc(ended))
}

func (s *svgBuilder) bound(b Bound) {
	s.label(b.What)
	y := s.y + svgRow/2
	class := "bound"
	if !b.Within {
		class += " missed"
	}
	fmt.Fprintf(&s.b, `<g class="%s"><line class="limit" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><line class="took" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><circle cx="%.1f" cy="%.1f" r="3.5"/><title>%s: %.2f s of %.0f s: %s</title></g>`,
		class, s.x(b.FromMs), y, s.x(b.FromMs+b.BoundSeconds*1000), y, s.x(b.FromMs), y, s.x(b.AtMs), y, s.x(b.AtMs), y, esc(b.What), b.Seconds(), b.BoundSeconds, esc(b.Verdict()))
	s.y += svgRow
}

// aggregate draws many informers as three rows: requests in flight per
// time slice (a bar per slice, its height the count), handler events per
// slice, and re-initialisations by cause per slice.
func (s *svgBuilder) aggregate(ins []InformerTimeline) {
	slot := s.endMs / aggregateSlots
	inFlight := make([]int, aggregateSlots+1)
	events := make([]int, aggregateSlots+1)
	reinits := make([]map[string]int, aggregateSlots+1)
	idx := func(ms float64) int { return int(math.Max(0, math.Min(ms/slot, aggregateSlots))) }
	total := map[string]int{}
	for _, in := range ins {
		for _, r := range in.Requests {
			e := r.EndMs
			if e < 0 {
				e = s.endMs
			}
			for i := idx(r.StartMs); i <= idx(e); i++ {
				inFlight[i]++
			}
		}
		for _, e := range in.Events {
			events[idx(e.AtMs)]++
		}
		for _, ri := range in.Reinits {
			i := idx(ri.AtMs)
			if reinits[i] == nil {
				reinits[i] = map[string]int{}
			}
			reinits[i][ri.Cause]++
			total[ri.Cause]++
		}
	}
	histogram := func(label, class string, counts []int) {
		s.label(label)
		peak := slices.Max(counts)
		for i, c := range counts {
			if c == 0 {
				continue
			}
			h := (svgRow*2 - 4) * float64(c) / float64(peak)
			fmt.Fprintf(&s.b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%d at %s</title></rect>`,
				class, s.x(float64(i)*slot), s.y+svgRow*2-2-h, math.Max(slot*s.scale-0.5, 1), h, c, seconds(float64(i)*slot))
		}
		s.y += svgRow * 2
	}
	histogram(fmt.Sprintf("%d informers: requests open", len(ins)), "agg-req", inFlight)
	histogram("handler events", "agg-event", events)
	s.label(fmt.Sprintf("re-initialisations (%d)", sumCounts(total)))
	for i, m := range reinits {
		if m == nil {
			continue
		}
		var parts []string
		n := 0
		for _, c := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, fmt.Sprintf("%s: %d", c, m[c]))
			n += m[c]
		}
		fmt.Fprintf(&s.b, `<path class="reinit" data-cause="%s" d="M%.1f %.1f l5 5 l-5 5 l-5 -5 z"><title>%d re-initialisations at %s: %s</title></path>`,
			esc(strings.Join(slices.Sorted(maps.Keys(m)), ",")), s.x(float64(i)*slot), s.y+3, n, seconds(float64(i)*slot), esc(strings.Join(parts, ", ")))
	}
	s.y += svgRow
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
