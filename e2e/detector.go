package e2e

import (
	"k8s.io/client-go/features"

	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
)

// DetectorNote names the report entry of every spec whose informers stream
// their lists: whether client-go's watch-list consistency detector checked
// them ("on", or "off" and why; probe.DetectorState). The detector compares
// each streaming list with a LIST at its resourceVersion; a report fails
// the spec, naming the detector and the informer (probe.DetectorReported).
const DetectorNote = report.DetectorNote

// noteDetector records the detector's state in the Env's spec
// (report.Spec's Detector), once, when its
// informers stream their lists (client-go's WatchListClient gate on as the
// informer is built: the spec's sync mode, or the gate's default).
func (e *Env) noteDetector() {
	if e.detectorNoted || !features.FeatureGates().Enabled(features.WatchListClient) {
		return
	}
	e.detectorNoted = true
	state := probe.DetectorState()
	e.data.set(func(d *report.Spec) { d.Detector = state })
}
