package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DetectorNote names the report entry of every spec whose informers stream
// their lists: whether client-go's watch-list consistency detector checked
// them ("on", or "off" and why). The detector compares each streaming list
// with a LIST at its resourceVersion; a report fails the spec, naming the
// detector and the informer.
const DetectorNote = "watch-list consistency detector"

// Write writes sum's report files f: the JSON, the summary (markdown, for a
// CI job's summary), the markdown report (the summary and a row per spec
// and informer) and the HTML page.
func Write(f Files, sum SuiteSummary) error {
	if err := os.MkdirAll(filepath.Dir(f.JSON), 0o755); err != nil {
		return err
	}
	if err := Classify(&sum); err != nil {
		return err
	}
	data, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(f.JSON, data, 0o644); err != nil {
		return err
	}
	title := Title(sum)
	header := gatesLine(sum.ClientGoGates) + "\n\n" + DetectorNote + ": " + sum.WatchListConsistencyDetector
	if sum.ClientSettings != nil {
		header += "\n\n" + sum.ClientSettings.Line()
	}
	if sum.ClientGoUnknown != "" {
		header = ClientGoUnknownLine(sum) + "\n\n" + header
	}
	top := summaryMarkdown(title, header, summarize(sum.Specs)) + failuresMarkdown(sum.Specs)
	if err := os.WriteFile(f.Summary, []byte(top), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(f.Markdown, []byte(top+"\n"+markdown(sum.Specs)), 0o644); err != nil {
		return err
	}
	page, err := htmlReport(sum, title)
	if err != nil {
		return fmt.Errorf("HTML report: %w", err)
	}
	return os.WriteFile(f.HTML, page, 0o644)
}

// Title names the suite and the versions it ran with: "conformance
// (client-go v0.36.6, kube-apiserver v1.36.3, etcd v3.6.16)" (etcd when
// known), a replaced client-go with
// its replacement ("client-go v0.36.6 replaced by ../client-go (a local
// directory)"), an unknown version as such ("client-go version unknown,
// replaced by ..."; ClientGoUnknownLine says why, under the title).
func Title(sum SuiteSummary) string {
	orUnknown := func(v string) string {
		if v == "" {
			return "version unknown"
		}
		return v
	}
	clientGo := orUnknown(sum.ClientGo)
	switch {
	case sum.ClientGoReplacement != "" && sum.ClientGo == "":
		clientGo += ", replaced by " + sum.ClientGoReplacement
	case sum.ClientGoReplacement != "":
		clientGo += " replaced by " + sum.ClientGoReplacement
	case sum.ClientGoUnknown != "" && sum.ClientGo != "":
		clientGo += ", replacement unknown"
	}
	server := "kube-apiserver " + orUnknown(sum.KubeAPIServer)
	if sum.Etcd != "" {
		server += ", etcd " + sum.Etcd
	}
	return fmt.Sprintf("%s (client-go %s, %s)", sum.Suite, clientGo, server)
}

// ClientGoUnknownLine is the report's line saying what of client-go the
// run could not know and why; "" when it knew everything.
func ClientGoUnknownLine(sum SuiteSummary) string {
	if sum.ClientGoUnknown == "" {
		return ""
	}
	return "client-go: not known: " + sum.ClientGoUnknown + ". The checks that depend on its version say so (skip reasons, spec notes)."
}

// gatesLine names every client-go gate with its value, the ones off their
// default first and set apart.
func gatesLine(gates map[string]Gate) string {
	var changed, defaults []string
	for _, name := range slices.Sorted(maps.Keys(gates)) {
		g := gates[name]
		s := fmt.Sprintf("%s=%t", name, g.Enabled)
		if g.Enabled != g.Default {
			changed = append(changed, s)
		} else {
			defaults = append(defaults, s)
		}
	}
	line := "client-go feature gates: "
	if len(changed) > 0 {
		line += "**changed: " + strings.Join(changed, ", ") + "**; "
	}
	return line + "defaults: " + strings.Join(defaults, ", ")
}

// markdown is the table of the markdown report: a row per spec and
// informer, by scenario (byScenario).
func markdown(specs []Spec) string {
	var b strings.Builder
	b.WriteString("## Specs by scenario\n\n")
	b.WriteString("| spec | outcome | informer | re-initialisations by cause | dials | requests | events | recovery | notes |\n")
	b.WriteString("|---|---|---|---|---:|---|---|---:|---|\n")
	for _, s := range byScenario(specs) {
		notes := notesCell(s.NoteList())
		if len(s.Informers) == 0 {
			fmt.Fprintf(&b, "| %s | %s | | | | | | | %s |\n", s.Spec, s.Outcome, notes)
			continue
		}
		for _, n := range s.Informers {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s | %s | %.2f s | %s |\n",
				s.Spec, s.Outcome, n.Informer, Counts(n.Reinitialisations), n.Dials, Counts(n.Requests), Counts(n.Events), n.RecoverySeconds, notes)
		}
	}
	return b.String()
}

func notesCell(notes []Note) string {
	var parts []string
	for _, n := range notes {
		parts = append(parts, n.Name+": "+strings.ReplaceAll(n.Text, "|", "\\|"))
	}
	return strings.ReplaceAll(strings.Join(parts, "; "), "\n", " ")
}

// Note is a line of a spec's notes as the reports show them: a name and
// its text.
type Note struct{ Name, Text string }

// NoteList is what the reports show of s beside its numbers: why it
// skipped, its sync mode, stack, the consistency detector's state and the
// upstream limitation it documents, then its notes by name.
func (s Spec) NoteList() []Note {
	var out []Note
	for _, n := range []Note{{"skipped", s.Skipped}, {"sync mode", s.SyncMode}, {"stack", s.Stack}, {DetectorNote, s.Detector}, {"upstream limitation", s.UpstreamLimitation}} {
		if n.Text != "" {
			out = append(out, n)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Notes)) {
		out = append(out, Note{k, s.Notes[k]})
	}
	return out
}
