package e2e

import (
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// A failure message ends with its verdict, once: what the JUnit report
// shows. Outside a spec (a suite node) it is left alone.
func TestFailureMessageEndsWithItsVerdict(t *testing.T) {
	spec := types.SpecReport{LeafNodeType: types.NodeTypeIt, ContainerHierarchyTexts: []string{"S13 GOAWAY across HA kube-apiservers"}, LeafNodeText: "informers move"}
	msg := withVerdict("relisted 3 times", spec)
	if !strings.HasPrefix(msg, "relisted 3 times\n\n"+VerdictPrefix) || strings.Count(msg, VerdictPrefix) != 1 {
		t.Fatalf("message %q", msg)
	}
	if !strings.Contains(msg, "unexplained: ") && !strings.Contains(msg, "known for client-go ") {
		t.Errorf("no verdict in %q", msg)
	}
	if again := withVerdict(msg, spec); again != msg {
		t.Errorf("the verdict twice: %q", again)
	}
	control := spec
	control.ContainerHierarchyTexts = []string{"S13 GOAWAY across HA kube-apiservers"}
	control.LeafNodeText = "fails when the client relists whenever a watch ends"
	control.LeafNodeLabels = []string{LabelNegativeControl}
	if msg := withVerdict("boom", control); !strings.Contains(msg, "a negative control") {
		t.Errorf("control: %q", msg)
	}
	if msg := withVerdict("boom", types.SpecReport{LeafNodeType: types.NodeTypeBeforeSuite}); msg != "boom" {
		t.Errorf("a suite node's failure got a verdict: %q", msg)
	}
}
