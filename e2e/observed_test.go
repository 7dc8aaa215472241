package e2e

import (
	"testing"
	"time"

	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
)

// TestMarkVarying: a scenario's word that its informer's sync measures the
// machine, or that servers of several versions answer it, marks just those
// observations varying.
func TestMarkVarying(t *testing.T) {
	obs := func() []report.Observation {
		return []report.Observation{
			report.Seconds(probe.StartToSynced, 3*time.Second).Of("pods"),
			report.Value("GET streaming list /api/v1/namespaces/<ns>/pods: "+probe.AnswersContentEncoding, "identity").Of("pods"),
			report.Value("GET streaming list /api/v1/namespaces/<ns>/pods: first request's query", "watch=1").Of("pods"),
		}
	}
	varies := func(os []report.Observation) (out []bool) {
		for _, o := range os {
			out = append(out, o.Varies)
		}
		return out
	}
	for _, c := range []struct {
		o    Observed
		want [3]bool
	}{
		{Observed{}, [3]bool{}},
		{Observed{SyncMeasuresLoad: true}, [3]bool{true, false, false}},
		{Observed{ServersVary: true}, [3]bool{false, true, false}},
	} {
		if got := varies(c.o.markVarying(obs())); [3]bool(got) != c.want {
			t.Errorf("SyncMeasuresLoad %t, ServersVary %t: varying %v, want %v", c.o.SyncMeasuresLoad, c.o.ServersVary, got, c.want)
		}
	}
}
