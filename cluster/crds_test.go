package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestCRDResources: the shipped CRDs parse, and each names the resource
// RBAC rules and clean-ups use (its storage version's).
func TestCRDResources(t *testing.T) {
	got, err := CRDResources()
	if err != nil {
		t.Fatal(err)
	}
	want := schema.GroupVersionResource{Group: "conformance.informer-conformance.io", Version: "v1", Resource: "widgets"}
	if len(got) != 1 || got[0] != want {
		t.Errorf("CRDResources() = %v, want [%v]", got, want)
	}
	crds, err := fixtureCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if name := crds[0].GetName(); name != want.Resource+"."+want.Group {
		t.Errorf("CRD name %q: the apiserver accepts only <plural>.<group>", name)
	}
}
