package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/informer-conformance/informer-conformance/report"
)

func observedSpec(name string, obs ...report.Observation) report.Spec {
	s := spec(name, "passed", 0, nil)
	s.Observations = obs
	return s
}

func TestCompareObservations(t *testing.T) {
	root := t.TempDir()
	accept := func(v string) report.Observation {
		return report.Value("GET list /api/v1/namespaces/<ns>/pods: Accept", v).Of("pods")
	}
	synced := func(s float64) report.Observation {
		return report.Seconds("start to synced", time.Duration(s*float64(time.Second))).Of("pods")
	}
	adds := func(n float64) report.Observation {
		return report.Calls("handler calls: Add", int(n)).Of("pods")
	}
	transforms := func(v string) report.Observation { return report.Value("transform calls per object", v).Of("pods") }
	base := writeRun(t, root, "base", "v0.33.0",
		observedSpec("S1 restart", accept("protobuf"), synced(0.1), adds(5)),
		observedSpec("S3 timeout", accept("protobuf"), synced(0.1), adds(5)),
		observedSpec("S19 transform", accept("protobuf"), transforms("1"), adds(5)),
	)
	head := writeRun(t, root, "head", "v0.34.0",
		observedSpec("S1 restart", accept("JSON"), synced(0.2), adds(6)),
		observedSpec("S3 timeout", accept("JSON"), synced(3.5), adds(10)),
		observedSpec("S19 transform", accept("protobuf"), transforms("1, 2"), adds(5),
			report.Value("watch error handler", "Expired: too old resource version: N (N)").Of("pods")),
	)
	b, _ := loadSide(base)
	h, _ := loadSide(head)
	n := noise{Seconds: 2, Ratio: 0.5}
	c := compareRuns(b, h, n)
	if c.changed() {
		t.Errorf("no outcome changed, compare says one did: %v", c.outcomes)
	}
	text := c.text(b, h, n, false)
	for _, want := range []string{
		`- informer pods: GET list /api/v1/namespaces/<ns>/pods: Accept changed from "protobuf" to "JSON" (2 specs: S1 restart; S3 timeout)`,
		`- S19 transform: informer pods: transform calls per object changed from "1" to "1, 2"`,
		`- S19 transform: informer pods: watch error handler appeared: "Expired: too old resource version: N (N)"`,
		`- S3 timeout: informer pods: start to synced moved from 0.10 s to 3.50 s`,
		`- S3 timeout: informer pods: handler calls: Add moved from 5 calls to 10 calls`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("comparison lacks %q:\n%s", want, text)
		}
	}
	for _, noisy := range []string{"S1 restart: informer pods: start to synced", "S1 restart: informer pods: handler calls"} {
		if strings.Contains(text, noisy) {
			t.Errorf("%q is within the noise, yet listed:\n%s", noisy, text)
		}
	}
}

// Memory (report.UnitMiB) moves when it moves by more than 4 MiB and half
// of BASE's: S34's streaming-list peak with a stripping transform dropping
// at v0.34.3 is listed, a LIST's peak spreading as it does from run to run
// is not.
func TestCompareMemoryObservations(t *testing.T) {
	root := t.TempDir()
	peak := func(what string, n float64) report.Observation {
		return report.MiB("peak live heap during the sync, "+what, n)
	}
	base := writeRun(t, root, "base", "v0.34.2", observedSpec("S34 memory", peak("stripped", 37.1), peak("whole", 64.4)))
	head := writeRun(t, root, "head", "v0.34.3", observedSpec("S34 memory", peak("stripped", 6.5), peak("whole", 78)))
	b, _ := loadSide(base)
	h, _ := loadSide(head)
	n := noise{Seconds: 2, Ratio: 0.5}
	text := compareRuns(b, h, n).text(b, h, n, false)
	if want := "- S34 memory: peak live heap during the sync, stripped moved from 37.1 MiB to 6.5 MiB"; !strings.Contains(text, want) {
		t.Errorf("comparison lacks %q:\n%s", want, text)
	}
	if strings.Contains(text, "during the sync, whole") {
		t.Errorf("a peak within the noise is listed:\n%s", text)
	}
}

// A series whose runs saw different values shows no change when the other
// side saw one of them; one that appears in only some runs neither.
func TestCompareObservationsSeries(t *testing.T) {
	root := t.TempDir()
	v := func(s string) report.Observation { return report.Value("watch statuses", s).Of("pods") }
	writeRun(t, root+"/base", "1", "v0.33.0", observedSpec("S1", v("200")))
	writeRun(t, root+"/base", "2", "v0.33.0", observedSpec("S1", v("200, then ERROR event 410 Expired")))
	writeRun(t, root+"/head", "1", "v0.34.0", observedSpec("S1", v("200"), report.Value("watch error handler", "EOF").Of("pods")))
	writeRun(t, root+"/head", "2", "v0.34.0", observedSpec("S1", v("200")))
	b, err := loadSide(root + "/base")
	if err != nil {
		t.Fatal(err)
	}
	h, _ := loadSide(root + "/head")
	if cs, _ := compareObservations(b, h, noise{Seconds: 2, Ratio: 0.5}); len(cs) != 0 {
		t.Errorf("runs that disagree among themselves: no change, compare says %v", cs)
	}
}

// TestVaryingObservationsNeedSeries: an observation that varies between
// runs of the same code (statuses under a fault) is counted, not listed,
// between single runs; between series it is listed when the values lie
// apart.
func TestVaryingObservationsNeedSeries(t *testing.T) {
	root := t.TempDir()
	st := func(v string) report.Observation {
		return report.Value("GET watch: statuses", v).Of("pods").Varying()
	}
	b1 := writeRun(t, root, "b1", "v0.36.6", observedSpec("S1", st("200")))
	h1 := writeRun(t, root, "h1", "v0.37.2", observedSpec("S1", st("200 | 403")))
	b, _ := loadSide(b1)
	h, _ := loadSide(h1)
	c := compareRuns(b, h, noise{Seconds: 2, Ratio: 0.5})
	if len(c.observations) != 0 || c.varyingObservations != 1 {
		t.Errorf("single runs: listed %v, counted %d; want none listed, 1 counted", c.observations, c.varyingObservations)
	}
	if text := c.text(b, h, noise{Seconds: 2, Ratio: 0.5}, false); !strings.Contains(text, "1 observations that vary between runs") {
		t.Errorf("the count is not said:\n%s", text)
	}
	for i := range 2 {
		writeRun(t, root+"/bs", fmt.Sprint(i), "v0.36.6", observedSpec("S1", st("200")))
		writeRun(t, root+"/hs", fmt.Sprint(i), "v0.37.2", observedSpec("S1", st("200 | 403")))
	}
	bs, _ := loadSide(root + "/bs")
	hs, _ := loadSide(root + "/hs")
	if cs, n := compareObservations(bs, hs, noise{Seconds: 2, Ratio: 0.5}); len(cs) != 1 || n != 0 {
		t.Errorf("series: listed %v, counted %d; want the change listed", cs, n)
	}
}

// TestControlsObservationsNotCompared: a negative control's observations
// are its broken client's: a change there is not listed (the spec beside
// it, no control, is).
func TestControlsObservationsNotCompared(t *testing.T) {
	root := t.TempDir()
	obs := func(v string) report.Observation { return report.Value("statuses", v).Of("pods") }
	control := func(v string) report.Spec {
		s := observedSpec("S1 fails when broken", obs(v))
		s.Labels = []string{report.LabelNegativeControl}
		return s
	}
	base := writeRun(t, root, "base", "v0.36.6", control("200"), observedSpec("S1 sound", obs("200")))
	head := writeRun(t, root, "head", "v0.37.2", control("200, 410"), observedSpec("S1 sound", obs("200, 410")))
	b, h := loadSides(t, base, head)
	changes, _ := compareObservations(b, h, noise{Seconds: 2, Ratio: 0.5})
	if len(changes) != 1 || strings.Join(changes[0].specs, ",") != "S1 sound" {
		t.Errorf("changes %+v, want one, of the sound spec only", changes)
	}
}

// TestCompareErrorTexts: the stable text of a class of errors the watch
// error handler got (report.ErrorTexts) that changed is listed with one
// run a side; a class that comes in one run and not the other is the
// fault's timing, counted with what varies; texts the sides share are no
// change.
func TestCompareErrorTexts(t *testing.T) {
	root := t.TempDir()
	expired := func(texts ...string) report.Observation {
		return report.ErrorTexts("watch error handler: Expired", texts).Of("pods")
	}
	refused := report.ErrorTexts("watch error handler: list connection refused", []string{"failed to list *v1.Pod: Get <url>: dial tcp <addr>: connect: connection refused"}).Of("pods")
	base := writeRun(t, root, "base", "v0.36.6",
		observedSpec("S5 compaction", expired("too old resource version: N (N)")),
		observedSpec("S9 refused", refused),
		observedSpec("S1 restart", expired("too old resource version: N (N)", "watch chan error: etcdserver: mvcc: required revision has been compacted")),
	)
	head := writeRun(t, root, "head", "v0.37.2",
		observedSpec("S5 compaction", expired("The resourceVersion for the provided watch is too old.")),
		observedSpec("S9 refused"),
		observedSpec("S1 restart", expired("too old resource version: N (N)")),
	)
	b, h := loadSides(t, base, head)
	changes, varying := compareObservations(b, h, noise{Seconds: 2, Ratio: 0.5})
	if len(changes) != 1 || changes[0].specs[0] != "S5 compaction" ||
		!strings.Contains(changes[0].sentence, `the error text changed (its stable part, addresses, numbers and names masked) from "too old resource version: N (N)" to "The resourceVersion for the provided watch is too old."`) {
		t.Errorf("changes %+v, want S5's changed text alone", changes)
	}
	if varying != 1 {
		t.Errorf("%d varying, want 1: S9's refused connections, gone in HEAD's one run", varying)
	}
	// Between series, a class gone from every run of one side is listed.
	for i := range 2 {
		writeRun(t, root+"/bs", fmt.Sprint(i), "v0.36.6", observedSpec("S9 refused", refused))
		writeRun(t, root+"/hs", fmt.Sprint(i), "v0.37.2", observedSpec("S9 refused"))
	}
	bs, hs := loadSides(t, root+"/bs", root+"/hs")
	if cs, n := compareObservations(bs, hs, noise{Seconds: 2, Ratio: 0.5}); len(cs) != 1 || n != 0 || !strings.Contains(cs[0].sentence, "disappeared") {
		t.Errorf("series: listed %+v, counted %d; want the class's disappearance listed", cs, n)
	}
}

// TestCompareOccasionalObservations: what the client asks for in a
// request a fault brings or not (a relist's watch) is listed when its value
// changed with one run a side, counted as noise when only one side had
// the request; a report from before marked that Accept varying and still
// compares so (acceptOccasional); one marked varying (servers of two
// versions) is noise with one run a side.
func TestCompareOccasionalObservations(t *testing.T) {
	root := t.TempDir()
	accept := func(v string) report.Observation {
		return report.Value("GET watch: first request's Accept", v).Of("pods").Occasionally()
	}
	legacy := func(v string) report.Observation {
		return report.Value("GET watch: first request's Accept", v).Of("pods").Varying()
	}
	types := func(v string) report.Observation {
		return report.Value("GET watch: Content-Type of 2xx answers", v).Of("pods").Occasionally().Varying()
	}
	side := func(name, version string, obs ...report.Observation) runSpecs {
		r, err := loadSide(writeRun(t, root, name, version, observedSpec("S1", obs...)))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	n := noise{Seconds: 2, Ratio: 0.5}
	for _, c := range []struct {
		name       string
		base, head runSpecs
		listed     int
		counted    int
	}{
		{"value changed", side("b1", "v0.31.14", accept("JSON, */*")), side("h1", "v0.32.13", accept("protobuf, JSON")), 1, 0},
		{"a report from before", side("b2", "v0.31.14", legacy("JSON, */*")), side("h2", "v0.32.13", legacy("protobuf, JSON")), 1, 0},
		{"same value", side("b3", "v0.31.14", accept("JSON, */*")), side("h3", "v0.32.13", accept("JSON, */*")), 0, 0},
		{"request on one side only", side("b4", "v0.31.14"), side("h4", "v0.32.13", accept("protobuf, JSON")), 0, 1},
		{"marked varying too", side("b5", "v0.31.14", types("JSON")), side("h5", "v0.32.13", types("protobuf")), 0, 1},
	} {
		cs, counted := compareObservations(c.base, c.head, n)
		if len(cs) != c.listed || counted != c.counted {
			t.Errorf("%s: listed %v, counted %d; want %d listed, %d counted", c.name, cs, counted, c.listed, c.counted)
		}
	}
}
