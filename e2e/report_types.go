package e2e

import "github.com/informer-conformance/informer-conformance/report"

// The report's data types live in package report (plain Go, no test
// framework: hack/matrix and other readers import it); these names keep
// them where the specs and the harness use them.
type (
	SuiteSummary     = report.SuiteSummary
	Numbers          = report.Numbers
	Gate             = report.Gate
	Timeline         = report.Timeline
	TimelineFault    = report.TimelineFault
	InformerTimeline = report.InformerTimeline
	TimelineRequest  = report.TimelineRequest
	TimelineEvent    = report.TimelineEvent
	TimelineReinit   = report.TimelineReinit
	Bound            = report.Bound
)

// Counts is report.Counts: a count per key, sorted by key, or "none".
func Counts[K ~string](m map[K]int) string { return report.Counts(m) }

// LabelNegativeControl is report.LabelNegativeControl: the label of a spec
// run against a deliberately broken client, which passes only if the
// scenario's assertions fail.
const LabelNegativeControl = report.LabelNegativeControl
