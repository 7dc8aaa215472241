package probe_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/cluster/local/localtest"
	"github.com/informer-conformance/informer-conformance/probe"
)

const convergeTimeout = 30 * time.Second

// dropDeletes is a broken controller's handler: it never sees deletes.
type dropDeletes struct{ cache.ResourceEventHandler }

func (dropDeletes) OnDelete(any) {}

// TestChecksAndTheirNegativeControls runs each check against a working
// informer (it passes) and against a deliberately broken setup (it fails).
func TestChecksAndTheirNegativeControls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := localtest.Start(t, local.Options{})
	admin, _ := c.RESTConfig(cluster.Admin)
	writer := kubernetes.NewForConfigOrDie(admin)
	server := probe.QuorumPods(writer, "default")
	user, _ := c.RESTConfig(cluster.TestUser)

	start := func(t *testing.T, opts probe.Options) *probe.Probe {
		opts.Namespace = "default"
		p, err := probe.New(user, opts)
		if err != nil {
			t.Fatal(err)
		}
		p.Start()
		t.Cleanup(p.Stop)
		if err := p.WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
		return p
	}
	eventuallyConverged := func(t *testing.T, p *probe.Probe) error {
		var last error
		_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, convergeTimeout, true, func(ctx context.Context) (bool, error) {
			last = probe.Converged(ctx, p.Informer.GetStore(), server)
			return last == nil, nil
		})
		return last
	}
	// deletePod deletes a fresh pod and returns what was deleted.
	deletePod := func(t *testing.T, name string) probe.Object {
		created, err := writer.CoreV1().Pods("default").Create(ctx, pod(name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := writer.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		return probe.Object{Key: "default/" + name, UID: string(created.UID)}
	}

	t.Run("working informer passes every check", func(t *testing.T) {
		leaks := probe.NewLeakCheck()
		p := start(t, probe.Options{})
		gone := deletePod(t, "checked")
		if _, err := writer.CoreV1().Pods("default").Create(ctx, pod("kept"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := eventuallyConverged(t, p); err != nil {
			t.Fatalf("convergence: %v", err)
		}
		if err := probe.DeletesObserved(p.Recorder.Snapshot(), []probe.Object{gone}); err != nil {
			t.Errorf("delete accounting: %v", err)
		}
		p.Stop()
		if err := leaks.Find(); err != nil {
			t.Errorf("goroutines left after Factory.Shutdown: %v", err)
		}
	})

	t.Run("negative control: a handler that drops deletes fails delete accounting", func(t *testing.T) {
		p := start(t, probe.Options{WrapHandler: func(h cache.ResourceEventHandler) cache.ResourceEventHandler { return dropDeletes{h} }})
		gone := deletePod(t, "dropped")
		if err := eventuallyConverged(t, p); err != nil {
			t.Fatalf("the store itself must converge: %v", err)
		}
		err := probe.DeletesObserved(p.Recorder.Snapshot(), []probe.Object{gone})
		if err == nil || !strings.Contains(err.Error(), "default/dropped") {
			t.Errorf("want delete accounting to name default/dropped, got %v", err)
		}
	})

	t.Run("negative control: a store that misses an object fails convergence", func(t *testing.T) {
		p := start(t, probe.Options{})
		if err := eventuallyConverged(t, p); err != nil {
			t.Fatal(err)
		}
		obj, exists, err := p.Informer.GetStore().GetByKey("default/kept")
		if err != nil || !exists {
			t.Fatalf("default/kept not in the store: %v", err)
		}
		if err := p.Informer.GetStore().Delete(obj); err != nil {
			t.Fatal(err)
		}
		err = probe.Converged(ctx, p.Informer.GetStore(), server)
		if err == nil || !strings.Contains(err.Error(), "default/kept: on the server") {
			t.Errorf("want the diff to name default/kept as missing from the store, got %v", err)
		}
	})

	t.Run("negative control: a goroutine left running fails the leak check", func(t *testing.T) {
		leaks := probe.NewLeakCheck()
		release := make(chan struct{})
		go func() { <-release }()
		defer close(release)
		if err := leaks.Find(); err == nil {
			t.Errorf("a goroutine started after the baseline and still running was not reported")
		}
	})
}

func TestUIDChanged(t *testing.T) {
	for _, tc := range []struct {
		e    probe.Event
		want bool
	}{
		{probe.Event{Kind: probe.Update, Key: "ns/a", UID: "u2", OldUID: "u1"}, true},
		{probe.Event{Kind: probe.Update, Key: "ns/b", UID: "u3", OldUID: "u3"}, false},
		{probe.Event{Kind: probe.Add, Key: "ns/c", UID: "u4"}, false},
	} {
		if got := tc.e.UIDChanged(); got != tc.want {
			t.Errorf("%s %s: UIDChanged = %v, want %v", tc.e.Kind, tc.e.Key, got, tc.want)
		}
	}
}

func TestHandlerState(t *testing.T) {
	rec := probe.Record{Events: []probe.Event{
		{Kind: probe.Add, Key: "ns/kept", UID: "u1", ResourceVersion: "1", InInitialList: true},
		{Kind: probe.Add, Key: "ns/gone", UID: "u2", ResourceVersion: "2", InInitialList: true},
		{Kind: probe.Add, Key: "ns/same", UID: "u3", ResourceVersion: "3", InInitialList: true},
		{Kind: probe.Update, Key: "ns/kept", UID: "u1", ResourceVersion: "4", OldUID: "u1", OldResourceVersion: "1"},
		{Kind: probe.Delete, Key: "ns/gone", UID: "u2", ResourceVersion: "2", Tombstone: true},
		{Kind: probe.Update, Key: "ns/same", UID: "u5", ResourceVersion: "6", OldUID: "u3", OldResourceVersion: "3"},
	}}
	server := []probe.Object{{Key: "ns/kept", UID: "u1", ResourceVersion: "4"}, {Key: "ns/same", UID: "u5", ResourceVersion: "6"}}
	lister := func(context.Context) ([]probe.Object, error) { return server, nil }
	if err := probe.HandlersConverged(context.Background(), rec, lister); err != nil {
		t.Errorf("handler calls replayed: %v", err)
	}

	// Negative control: a relist that fixed the store but told no handler
	// (the recreate's Update and the tombstone never delivered).
	rec.Events = rec.Events[:4]
	err := probe.HandlersConverged(context.Background(), rec, lister)
	for _, want := range []string{"ns/gone: in the handlers' view (uid u2 rv 2), gone from the server", "ns/same: uid u3 rv 3 in the handlers' view, server uid u5 rv 6"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in the diff, got %v", want, err)
		}
	}
}

func TestStackOrTypedAndTyped(t *testing.T) {
	for _, tc := range []struct {
		s       probe.Stack
		orTyped probe.Stack
		typed   bool
	}{
		{"", probe.StackTyped, true},
		{probe.StackTyped, probe.StackTyped, true},
		{probe.StackTypedJSON, probe.StackTypedJSON, true},
		{probe.StackDynamic, probe.StackDynamic, false},
		{probe.StackDynamicCRDCBOR, probe.StackDynamicCRDCBOR, false},
	} {
		if got := tc.s.OrTyped(); got != tc.orTyped {
			t.Errorf("Stack(%q).OrTyped() = %q, want %q", tc.s, got, tc.orTyped)
		}
		if got := tc.s.Typed(); got != tc.typed {
			t.Errorf("Stack(%q).Typed() = %v, want %v", tc.s, got, tc.typed)
		}
	}
}

// TestEndsObserved: an object's end is heard as a Delete of its UID or as
// an Update from its UID to another under the same key; anything else
// (an Update keeping the UID, a Delete of another UID) is missed.
func TestEndsObserved(t *testing.T) {
	rec := probe.Record{Events: []probe.Event{
		{Kind: probe.Delete, Key: "ns/a", UID: "a1"},
		{Kind: probe.Update, Key: "ns/b", OldUID: "b1", UID: "b2"},
		{Kind: probe.Update, Key: "ns/c", OldUID: "c1", UID: "c1"},
		{Kind: probe.Delete, Key: "ns/d", UID: "d2"},
	}}
	replaced, err := probe.EndsObserved(rec, []probe.Object{{Key: "ns/a", UID: "a1"}, {Key: "ns/b", UID: "b1"}})
	if err != nil || replaced != 1 {
		t.Errorf("a deleted, b replaced: replaced %d, err %v", replaced, err)
	}
	_, err = probe.EndsObserved(rec, []probe.Object{{Key: "ns/c", UID: "c1"}, {Key: "ns/d", UID: "d1"}})
	if err == nil || !strings.Contains(err.Error(), "ns/c (uid c1), ns/d (uid d1)") {
		t.Errorf("c updated in place, d's other UID deleted: err %v, want both missed", err)
	}
}
