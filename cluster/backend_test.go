package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestRegisterBackend(t *testing.T) {
	start := func(context.Context, Spec, Harness) (Cluster, error) { return nil, nil }
	supports := func(Spec) string { return "" }
	t.Cleanup(func() {
		backendsMu.Lock()
		delete(backends, "test-registered")
		backendsMu.Unlock()
	})
	RegisterBackend(Backend{Name: "test-registered", Supports: supports, Start: start})
	if b, ok := LookupBackend("test-registered"); !ok || b.Name != "test-registered" {
		t.Errorf("LookupBackend after RegisterBackend: %+v, %v", b, ok)
	}
	if _, ok := LookupBackend("test-never-registered"); ok {
		t.Error("LookupBackend found a backend never registered")
	}
	if !slices.Contains(BackendNames(), "test-registered") {
		t.Errorf("BackendNames %v lacks the registered backend", BackendNames())
	}
	for _, tc := range []struct {
		b    Backend
		want string
	}{
		{Backend{Supports: supports, Start: start}, "without a name"},
		{Backend{Name: "test-no-start", Supports: supports}, "needs Supports and Start"},
		{Backend{Name: "test-no-supports", Start: start}, "needs Supports and Start"},
		{Backend{Name: "test-registered", Supports: supports, Start: start}, "registered twice"},
	} {
		func() {
			defer func() {
				if r, _ := recover().(string); !strings.Contains(r, tc.want) {
					t.Errorf("RegisterBackend(%q): panic %q, want one saying %q", tc.b.Name, r, tc.want)
				}
			}()
			RegisterBackend(tc.b)
		}()
	}
}
