package probe

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Object identifies a version of an object.
type Object struct {
	Key             string `json:"key"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
}

// ObjectOf is obj's key, UID and resourceVersion.
func ObjectOf(obj any) (Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return Object{}, err
	}
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return Object{}, err
	}
	return Object{Key: key, UID: string(m.GetUID()), ResourceVersion: m.GetResourceVersion()}, nil
}

// Lister reads the server's current state with a quorum read.
type Lister func(ctx context.Context) ([]Object, error)

// QuorumPods lists pods in namespace ("" = all) with resourceVersion "",
// which kube-apiserver serves from etcd with a quorum read.
func QuorumPods(cs kubernetes.Interface, namespace string) Lister {
	return Quorum("pods", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().Pods(namespace).List(ctx, o)
	})
}

// Quorum is the Lister of any resource: list is its List (a typed
// clientset's, the dynamic client's, ...), called with resourceVersion ""
// (a quorum read); what names the resource in errors.
//
//	probe.Quorum("secrets", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
//		return cs.CoreV1().Secrets(ns).List(ctx, o)
//	})
func Quorum(what string, list func(context.Context, metav1.ListOptions) (runtime.Object, error)) Lister {
	return func(ctx context.Context) ([]Object, error) {
		l, err := list(ctx, metav1.ListOptions{ResourceVersion: ""})
		if err != nil {
			return nil, fmt.Errorf("quorum list of %s: %w", what, err)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, fmt.Errorf("quorum list of %s: %w", what, err)
		}
		objs := make([]Object, 0, len(items))
		for _, item := range items {
			o, err := ObjectOf(item)
			if err != nil {
				return nil, err
			}
			objs = append(objs, o)
		}
		return objs, nil
	}
}

// StoreObjects lists an informer store as Objects.
func StoreObjects(s cache.Store) ([]Object, error) {
	var objs []Object
	for _, item := range s.List() {
		o, err := ObjectOf(item.(runtime.Object))
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// Converged returns nil when the store holds exactly the server's objects
// (same keys, UIDs and resourceVersions), else an error with the diff.
func Converged(ctx context.Context, store cache.Store, server Lister) error {
	want, err := server(ctx)
	if err != nil {
		return err
	}
	got, err := StoreObjects(store)
	if err != nil {
		return err
	}
	if d := diff(got, want, "the store"); d != "" {
		return fmt.Errorf("informer store differs from a quorum read of the server:\n%s", d)
	}
	return nil
}

// HandlerState replays the handler calls of rec, in the order they were
// made, into what a controller that acts only on its handler calls holds:
// Add and Update put the object under its key (an Update whose UID differs
// replaces the old object), Delete, with the object or a
// DeletedFinalStateUnknown tombstone, removes the key. client-go calls one
// handler from one goroutine (tools/cache/shared_informer.go
// processorListener.run), so the record's order is the calls' order.
func HandlerState(rec Record) []Object {
	state := map[string]Object{}
	for _, e := range rec.Events {
		switch e.Kind {
		case Add, Update:
			state[e.Key] = Object{Key: e.Key, UID: e.UID, ResourceVersion: e.ResourceVersion}
		case Delete:
			delete(state, e.Key)
		}
	}
	objs := make([]Object, 0, len(state))
	for _, o := range state {
		objs = append(objs, o)
	}
	return objs
}

// HandlersConverged returns nil when the handler calls of rec add up
// (HandlerState) to exactly the server's objects: same keys, UIDs and
// resourceVersions; else an error with the diff. A relist that fixes the
// store without telling the handler fails here, not in Converged.
func HandlersConverged(ctx context.Context, rec Record, server Lister) error {
	want, err := server(ctx)
	if err != nil {
		return err
	}
	if d := diff(HandlerState(rec), want, "the handlers' view"); d != "" {
		return fmt.Errorf("the handler calls do not add up to a quorum read of the server:\n%s", d)
	}
	return nil
}

// diff lists how got differs from the server; where names got (the store,
// or the handlers' view).
func diff(store, server []Object, where string) string {
	byKey := func(objs []Object) map[string]Object {
		m := make(map[string]Object, len(objs))
		for _, o := range objs {
			m[o.Key] = o
		}
		return m
	}
	s, v := byKey(store), byKey(server)
	var lines []string
	for k, so := range s {
		vo, ok := v[k]
		switch {
		case !ok:
			lines = append(lines, fmt.Sprintf("  %s: in %s (uid %s rv %s), gone from the server", k, where, so.UID, so.ResourceVersion))
		case so != vo:
			lines = append(lines, fmt.Sprintf("  %s: uid %s rv %s in %s, server uid %s rv %s", k, so.UID, so.ResourceVersion, where, vo.UID, vo.ResourceVersion))
		}
	}
	for k, vo := range v {
		if _, ok := s[k]; !ok {
			lines = append(lines, fmt.Sprintf("  %s: on the server (uid %s rv %s), missing from %s", k, vo.UID, vo.ResourceVersion, where))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// DeletesObserved returns nil when every deleted object (by key and UID)
// reached a Delete handler, as the object or as a DeletedFinalStateUnknown
// tombstone; else an error naming the missed ones.
func DeletesObserved(rec Record, deleted []Object) error {
	seen := map[[2]string]bool{}
	for _, e := range rec.Events {
		if e.Kind == Delete {
			seen[[2]string{e.Key, e.UID}] = true
		}
	}
	var missed []string
	for _, d := range deleted {
		if !seen[[2]string{d.Key, d.UID}] {
			missed = append(missed, fmt.Sprintf("%s (uid %s)", d.Key, d.UID))
		}
	}
	if len(missed) > 0 {
		return fmt.Errorf("deleted on the server but never delivered to a Delete handler: %s", strings.Join(missed, ", "))
	}
	return nil
}

// EndsObserved returns nil when the end of every deleted object (by key
// and UID) reached a handler: a Delete of it (or its tombstone), or an
// Update from it to another UID under the same key, which is how a relist
// that finds the name recreated tells of it (the documented behaviour, S7:
// shared_informer.go processDeltas); else an error naming the missed ones.
// It also returns how many ends came as such an Update.
func EndsObserved(rec Record, deleted []Object) (replaced int, err error) {
	deletes, updates := map[[2]string]bool{}, map[[2]string]bool{}
	for _, e := range rec.Events {
		switch {
		case e.Kind == Delete:
			deletes[[2]string{e.Key, e.UID}] = true
		case e.UIDChanged():
			updates[[2]string{e.Key, e.OldUID}] = true
		}
	}
	var missed []string
	for _, d := range deleted {
		k := [2]string{d.Key, d.UID}
		switch {
		case deletes[k]:
		case updates[k]:
			replaced++
		default:
			missed = append(missed, fmt.Sprintf("%s (uid %s)", d.Key, d.UID))
		}
	}
	if len(missed) > 0 {
		return replaced, fmt.Errorf("deleted on the server, yet no handler heard the end (neither a Delete nor an Update to another UID): %s", strings.Join(missed, ", "))
	}
	return replaced, nil
}

// LeakCheck snapshots the goroutines running now; its Find reports the ones
// started since that are still running (after, say, Factory.Shutdown).
type LeakCheck struct {
	baseline goleak.Option
	ignore   []string
}

// NewLeakCheck takes the baseline; its Find ignores goroutines running
// any of the functions ignore names (goleak's IgnoreAnyFunction: fully
// qualified, as runtime.FuncForPC names them), such as the fault proxy's
// own (faultproxy.Goroutines).
func NewLeakCheck(ignore ...string) *LeakCheck {
	return &LeakCheck{baseline: goleak.IgnoreCurrent(), ignore: ignore}
}

// Find retries for a while (goleak's default, bounded: v1.3.0 retries 20
// times, sleeping 1 µs doubling to at most 100 ms, options.go retry, so
// about 0.45 s plus the stack snapshots) and returns the leaked
// goroutines as an error. Idle HTTP connections of the client's transport
// (their read and write loops, under the names of every Go release the
// suite builds with) and what NewLeakCheck was told to ignore (the
// network, not the informer) are ignored.
func (l *LeakCheck) Find() error {
	opts := []goleak.Option{l.baseline}
	for _, f := range l.ignore {
		opts = append(opts, goleak.IgnoreAnyFunction(f))
	}
	return goleak.Find(append(opts,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*http2clientConnReadLoop).run"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*clientConnReadLoop).run"),
		// Go 1.27 moved net/http's bundled HTTP/2 into a package of its own:
		// the same idle connections under other names (the v0.38.0-alpha.2
		// column, built with go1.27.3, found them "left after Shutdown").
		goleak.IgnoreAnyFunction("net/http/internal/http2.(*ClientConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http/internal/http2.(*clientConnReadLoop).run"),
	)...)
}
