package known

import (
	"strings"
	"testing"
)

func TestEmbeddedDataLoads(t *testing.T) {
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Entries) == 0 || d.Run.Commit == "" {
		t.Fatalf("embedded data has no entries or no run: %+v", d.Run)
	}
}

func gatesOff(names ...string) func(string) bool {
	return func(g string) bool {
		for _, n := range names {
			if n == g {
				return true
			}
		}
		return false
	}
}

// The entries' conditions as the verdict page states them: S17 holds
// until both its changes are present, either one switched off by a gate
// brings it back.
func TestExplainByVersionAndGates(t *testing.T) {
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	const s17 = "S17 what a handler sees of the store during a relist every handler call of a relist after a 410 sees a store the server once had LIST+WATCH"
	const s18 = "S18 a consumer slower than the events the watch keeps being read, stays open, and nothing is lost or relisted LIST+WATCH"
	for _, c := range []struct {
		spec, clientGo string
		off            []string
		known          bool
	}{
		{s17, "v0.33.0", nil, true},
		{s17, "v0.34.13", nil, true},
		{s17, "v0.35.10", nil, false},
		{s17, "v0.35.10", []string{"InOrderInformersBatchProcess"}, true},
		{s17, "v0.36.6", []string{"InOrderInformersBatchProcess"}, false},
		{s17, "v0.36.6", []string{"AtomicFIFO", "InOrderInformersBatchProcess"}, true},
		{s18, "v0.35.10", nil, true},
		{s18, "v0.36.6", nil, false},
		{s18, "v0.37.2", []string{"UnlockWhileProcessingFIFO"}, true},
		{"S99 no such spec", "v0.33.0", nil, false},
	} {
		v := d.Explain(Subject{Spec: c.spec, ClientGo: c.clientGo, GateOff: gatesOff(c.off...)})
		if v.Known != c.known {
			t.Errorf("%.30s on %s, off %v: known %t, want %t (%s)", c.spec, c.clientGo, c.off, v.Known, c.known, v.Line())
		}
	}
}

func TestExplainLine(t *testing.T) {
	d, _ := Load()
	v := d.Explain(Subject{Spec: "S18 a consumer slower than the events the watch keeps being read LIST+WATCH", ClientGo: "v0.33.0"})
	line := v.Line()
	for _, want := range []string{"known for client-go v0.33.0", "PR #136008", "changed in client-go v0.36.0", "https://github.com/kubernetes/kubernetes/pull/136008"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
}

// Outside the data: never a wrong explanation.
func TestExplainUnexplained(t *testing.T) {
	d, _ := Load()
	const s18 = "S18 a consumer slower than the events the watch keeps being read LIST+WATCH"
	for _, c := range []struct {
		name string
		s    Subject
		want string
	}{
		{"newer than the data", Subject{Spec: s18, ClientGo: "v0.39.0"}, "no verdict data for client-go v0.39.0"},
		{"older than the data", Subject{Spec: s18, ClientGo: "v0.30.2"}, "no verdict data for client-go v0.30.2"},
		{"a pseudo-version", Subject{Spec: s18, ClientGo: "v0.0.0-20261101000000-abcdefabcdef"}, "no verdict data"},
		{"unknown", Subject{Spec: s18}, "not known"},
		{"not a version", Subject{Spec: s18, ClientGo: "master"}, "no release version"},
		{"a control", Subject{Spec: "S18 a consumer slower than the events fails when the queue stays locked", ClientGo: "v0.33.0", Control: true}, "negative control"},
		{"a suite defect never explains a run", Subject{Spec: "S30 handlers added and removed while resyncs fire x", ClientGo: "v0.33.0"}, "no known behaviour"},
	} {
		v := d.Explain(c.s)
		if v.Known || !strings.Contains(v.Line(), c.want) {
			t.Errorf("%s: %s, want unexplained with %q", c.name, v.Line(), c.want)
		}
	}
}

func TestReplacedClientGoCaveat(t *testing.T) {
	d, _ := Load()
	v := d.Explain(Subject{Spec: "S18 a consumer slower than the events x", ClientGo: "v0.33.0", Replacement: "example.com/fork v0.33.0-fork.1"})
	if !v.Known || !strings.Contains(v.Line(), "replaced by example.com/fork") {
		t.Errorf("%s", v.Line())
	}
}

func TestKubeAPIServerRange(t *testing.T) {
	d := Data{Run: Run{Commit: "c", ClientGo: []string{"v0.31.0", "v0.37.2"}}, Entries: []Entry{{
		Spec: "S1 x", Kind: KindChange, Upstream: "u", Why: "w",
		ChangedIn: []Change{{ClientGo: "v0.35.0"}}, KubeAPIServer: &Range{From: "v1.36.0"},
	}}}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	if v := d.Explain(Subject{Spec: "S1 x y", ClientGo: "v0.33.0", KubeAPIServer: "v1.35.2"}); v.Known {
		t.Errorf("on v1.35.2: %s", v.Line())
	}
	v := d.Explain(Subject{Spec: "S1 x y", ClientGo: "v0.33.0", KubeAPIServer: "v1.37.2"})
	if !v.Known || !strings.Contains(v.Line(), "on kube-apiserver v1.36.0 and later") {
		t.Errorf("on v1.37.2: %s", v.Line())
	}
}

// Bad data is refused, saying what is wrong.
func TestParseRefusesBadData(t *testing.T) {
	for _, c := range []struct{ name, json, want string }{
		{"unknown field", `{"run":{"commit":"c","clientGo":["v0.31.0"]},"entries":[],"extra":1}`, "unknown field"},
		{"no versions", `{"run":{"commit":"c"},"entries":[]}`, "run.clientGo: empty"},
		{"bad run version", `{"run":{"commit":"c","clientGo":["0.31"]},"entries":[]}`, `"0.31" is not a client-go version`},
		{"unsorted", `{"run":{"commit":"c","clientGo":["v0.33.0","v0.31.0"]},"entries":[]}`, "not oldest first"},
		{"bad changedIn", `{"run":{"commit":"c","clientGo":["v0.31.0","v0.37.0"]},"entries":[{"spec":"S1","kind":"regression","upstream":"u","why":"w","changedIn":[{"clientGo":"v0.33"}]}]}`, `changedIn "v0.33" is not a client-go version`},
		{"changedIn beyond the run", `{"run":{"commit":"c","clientGo":["v0.31.0","v0.37.0"]},"entries":[{"spec":"S1","kind":"regression","upstream":"u","why":"w","changedIn":[{"clientGo":"v0.40.0"}]}]}`, "outside the run's client-go"},
		{"no changedIn", `{"run":{"commit":"c","clientGo":["v0.31.0"]},"entries":[{"spec":"S1","kind":"documented change","upstream":"u","why":"w"}]}`, "changedIn"},
		{"bad kind", `{"run":{"commit":"c","clientGo":["v0.31.0"]},"entries":[{"spec":"S1","kind":"bug","upstream":"u","why":"w"}]}`, `kind "bug"`},
		{"suite defect without commit", `{"run":{"commit":"c","clientGo":["v0.31.0"]},"entries":[{"spec":"S1","kind":"suite defect, fixed since the run","upstream":"u","why":"w"}]}`, "fixedBySuite"},
		{"no why", `{"run":{"commit":"c","clientGo":["v0.31.0"]},"entries":[{"spec":"S1","kind":"regression","upstream":"u","changedIn":[{"clientGo":"v0.31.0"}]}]}`, "why are required"},
	} {
		_, err := Parse([]byte(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// The known observation changes of a step: the streaming list by default
// between v0.34 and v0.35, not between two v0.35 patches nor back.
func TestExplainObservation(t *testing.T) {
	d, _ := Load()
	const sentence = "pods: GET streaming list /api/v1/namespaces/x/pods: Accept appeared: \"protobuf\""
	if got := d.ExplainObservation(sentence, ComponentClientGo, "v0.34.13", "v0.35.0"); len(got) != 1 || got[0].ID != "watchlist-on" {
		t.Errorf("v0.34.13 -> v0.35.0: %+v", got)
	}
	for _, step := range [][2]string{{"v0.35.0", "v0.35.10"}, {"v0.35.0", "v0.34.13"}} {
		if got := d.ExplainObservation(sentence, ComponentClientGo, step[0], step[1]); len(got) != 0 {
			t.Errorf("%s -> %s: %+v", step[0], step[1], got)
		}
	}
	if got := d.ExplainObservation(sentence, ComponentKubeAPIServer, "v0.34.13", "v0.35.0"); len(got) != 0 {
		t.Errorf("as a server step: %+v", got)
	}
	gz := "pods: GET streaming list /api/v1/pods: Content-Encoding of 2xx answers changed from \"identity\" to \"gzip\""
	if got := d.ExplainObservation(gz, ComponentKubeAPIServer, "v1.36.3", "v1.37.2"); len(got) != 1 {
		t.Errorf("kube-apiserver 1.36 -> 1.37: %+v", got)
	}
}

func TestCheckRefusesBadChanges(t *testing.T) {
	base := Data{Run: Run{Commit: "c", ClientGo: []string{"v0.31.0", "v0.37.2"}}}
	for _, c := range []struct {
		name string
		d    func(d *Data)
		want string
	}{
		{"unknown change", func(d *Data) { d.Observations = []ObservationRule{{Change: "x", Contains: "y"}} }, `change "x" is none of changes`},
		{"bad pattern", func(d *Data) {
			d.Changes = []UpstreamChange{{ID: "x", Kind: KindChange, AddedIn: "v0.32.0", Upstream: "u"}}
			d.Observations = []ObservationRule{{Change: "x", Pattern: "("}}
		}, "pattern"},
		{"bad version", func(d *Data) {
			d.Changes = []UpstreamChange{{ID: "x", Kind: KindChange, AddedIn: "0.32", Upstream: "u"}}
		}, `addedIn "0.32"`},
		{"bad component", func(d *Data) {
			d.Changes = []UpstreamChange{{ID: "x", Kind: KindChange, Component: "kubelet", AddedIn: "v1.2.3", Upstream: "u"}}
		}, `component "kubelet"`},
	} {
		d := base
		c.d(&d)
		if err := d.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestNoiseRules: the shipped noise rules match the lines a verdict run
// showed (S12's storm, S25's two servers) and not another spec's; a rule
// without why, fix or match is refused.
func TestNoiseRules(t *testing.T) {
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]bool{
		"S12 relist storm cost every informer converges after an apiserver restart LIST+WATCH: informer informer-002: start to synced moved from 2.57 s to 0.50 s":                                                                            true,
		`S25 rolling control-plane upgrade each kube-apiserver upgraded in turn streaming list: informer pods: GET streaming list /api/v1/namespaces/<ns>/pods: Content-Encoding of 2xx answers changed from "identity" to "gzip | identity"`: true,
		"S9 sync timeout the informer syncs LIST+WATCH: informer pods: start to synced moved from 2.57 s to 0.50 s":                                                                                                                           false,
	} {
		if r, ok := d.NoiseOf(line); ok != want || ok && (r.Why == "" || r.FixedBySuite == "") {
			t.Errorf("NoiseOf(%.60s...) = %v, %t; want %t", line, r, ok, want)
		}
	}
	bad := d
	bad.Noise = []NoiseRule{{Contains: "x"}, {Why: "w", FixedBySuite: "abc"}, {Why: "w", FixedBySuite: "abc", Pattern: "("}}
	err = bad.Check()
	for _, want := range []string{"noise[0]: why and fixedBySuite", "noise[1]: contains or pattern is required", "noise[2]: pattern"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check of bad noise rules = %v, want %q", err, want)
		}
	}
}

// A control is never client-go's, but a server that takes away what its
// broken client needs to break explains it on that server only.
func TestServerEntryExplainsControls(t *testing.T) {
	d := Data{Run: Run{Commit: "c", ClientGo: []string{"v0.31.0", "v0.37.2"}}, Entries: []Entry{
		{Spec: "S21 x", Kind: KindChange, Upstream: "u", Why: "w", KubeAPIServer: &Range{From: "v1.33.0", Before: "v1.34.0"}},
		{Spec: "S21 x", Kind: KindChange, Upstream: "client-go's", Why: "w", ChangedIn: []Change{{ClientGo: "v0.31.0"}}},
	}}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	control := Subject{Spec: "S21 x fails when y", ClientGo: "v0.37.2", Control: true, KubeAPIServer: "v1.33.13"}
	if v := d.Explain(control); !v.Known || len(v.Entries) != 1 || v.Entries[0].Upstream != "u" {
		t.Errorf("on v1.33.13: %s, want known by the server's entry alone", v.Line())
	}
	for _, c := range []struct{ server, clientGo string }{{"v1.34.4", "v0.37.2"}, {"", "v0.37.2"}, {"v1.33.13", "v0.39.0"}} {
		control.KubeAPIServer, control.ClientGo = c.server, c.clientGo
		if v := d.Explain(control); v.Known || !strings.Contains(v.Line(), "negative control") {
			t.Errorf("on %q with client-go %s: %s, want the control unexplained", c.server, c.clientGo, v.Line())
		}
	}
}
