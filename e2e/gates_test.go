package e2e

import (
	"os"
	"strings"
	"testing"

	"k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
)

// TestReportStatesEveryClientGoGate: the report names every gate of the
// client-go in use with its value, defaults included, and sets apart one
// that is off its default.
func TestReportStatesEveryClientGoGate(t *testing.T) {
	gates, err := ClientGoGates()
	if err != nil {
		t.Fatal(err)
	}
	wl, ok := gates[string(features.WatchListClient)]
	if !ok || len(gates) < 3 {
		t.Fatalf("gates %v: want every client-go gate, WatchListClient among them", gates)
	}
	clientfeaturestesting.SetFeatureDuringTest(t, features.WatchListClient, !wl.Default)

	setenv(t, "INFORMER_CONFORMANCE_ARTIFACTS", t.TempDir())
	if err := writeSummary(SuiteSummary{Suite: "gates"}); err != nil {
		t.Fatal(err)
	}
	mdPath := reportFiles("gates").Markdown
	sum := readSummary(t, "gates")
	if len(sum.ClientGoGates) != len(gates) {
		t.Errorf("report has %d gates, client-go %d", len(sum.ClientGoGates), len(gates))
	}
	if g := sum.ClientGoGates[string(features.WatchListClient)]; g.Enabled == g.Default {
		t.Errorf("WatchListClient in the report %+v: want its override", g)
	}
	md, err := os.ReadFile(mdPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "**changed: WatchListClient=") {
		t.Errorf("markdown does not set the changed gate apart:\n%s", md)
	}
}
