package lifetime

import (
	"context"
	"slices"
	"testing"
)

// TestTearDownOrder: the teardowns still registered run last registered
// first (a cluster's processes before its work directory), each once.
func TestTearDownOrder(t *testing.T) {
	var ran []string
	reg := func(name string) func() {
		return OnParentDeath(name, func(context.Context) error { ran = append(ran, name); return nil })
	}
	defer reg("work dir")()
	defer reg("etcd")()
	unregister := reg("stopped apiserver")
	defer reg("apiserver")()
	unregister()
	if code := tearDown(1); code != ExitCode {
		t.Errorf("exit code %d, want %d", code, ExitCode)
	}
	if want := []string{"apiserver", "etcd", "work dir"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
}
