package scenarios

import (
	"context"
	"fmt"
	"strconv"
	"time"

	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/probe"
)

// InServerOrder is S16's assertion: the handler heard of the changes in
// the order the server made them.
const InServerOrder = "the handler heard of the changes in the server's order"

// S16Objects is how many objects S16's burst changes.
const S16Objects = 10

// S16Backlog is the least the handler's last call must trail the burst's
// last write with a slow index function (40 writes, 60 index calls of
// SlowIndex: 6 s of work).
const S16Backlog = time.Second

// HandlerOrder is S16: a burst of creates, updates and deletes of several
// objects, interleaved across them, reaches an informer whose consumer may
// be slowed (slow). The handler must hear of every change in the order the
// server made it: resourceVersions strictly increasing from call to call.
//
// Expected of client-go, by version (tools/cache/controller.go
// newQueueFIFO): with the InOrderInformers gate on (beta and on by default
// from v0.33, GA and locked from v0.36) the informer's queue is a RealFIFO
// (the_real_fifo.go), a list of deltas popped in arrival order: order kept,
// with or without batches (InOrderInformersBatchProcess, v0.35+: PopBatch
// batches a run of distinct objects and calls the handlers in its order).
// Before (v0.31, v0.32, or InOrderInformers=false) it is a DeltaFIFO
// (delta_fifo.go): deltas are queued per object, and Pop hands over all of
// one object's queued deltas at once, so when the consumer is slower than
// the events (a slow index function), an object's later changes overtake
// other objects' earlier ones: the handler hears them out of the server's
// order. A slow handler alone never reorders: each handler has its own
// goroutine behind an unbounded buffer, fed in the queue's order.
func HandlerOrder(ctx context.Context, opts probe.Options, slow Slowness) {
	env := e2e.StartEnv(ctx, cluster.Spec{})
	writer := env.Subjects
	server := writer.Quorum()
	opts.Namespace = env.Namespace
	slow.apply(&opts)
	e2e.AddReportEntry("S16 consumer", slow.describe())
	obs := e2e.StartProbe(ctx, writer.Name(), env.User, opts)
	obs.EventuallyConverged(ctx, server)
	before := len(obs.Recorder.Snapshot().Events)

	names := make([]string, S16Objects)
	for i := range names {
		names[i] = fmt.Sprintf("order-%02d", i)
	}
	e2e.By(fmt.Sprintf("a burst across %d objects: each created, then each relabelled, then each deleted", len(names)))
	start := time.Now()
	for _, name := range names {
		_, err := writer.Create(ctx, name)
		Expect(err).NotTo(HaveOccurred())
	}
	for _, name := range names {
		_, err := writer.SetLabels(ctx, name, map[string]string{"step": "relabelled"})
		Expect(err).NotTo(HaveOccurred())
	}
	for _, name := range names {
		Expect(writer.Delete(ctx, name)).To(Succeed())
	}
	lastWrite := time.Now()
	burst := lastWrite.Sub(start)
	delivered := obs.EventuallyConverged(ctx, server)
	n := obs.Report(delivered)

	events := obs.Recorder.Snapshot().Events[before:]
	var lag time.Duration
	if len(events) > 0 {
		lag = events[len(events)-1].Time.Sub(lastWrite)
	}
	e2e.AddReportEntry("S16 consumer lag", fmt.Sprintf("the handler's last call %s after the last write", lag.Round(time.Millisecond)))
	if slow.IndexDelay > 0 {
		// A per-object queue reorders only a backlog.
		Expect(lag).To(BeNumerically(">=", S16Backlog), "the slow index function left a backlog (the handler's last call at least %s after the last write), else S16 tests nothing; numbers: %s", S16Backlog, n)
	}
	disorder, err := outOfOrder(events)
	Expect(err).NotTo(HaveOccurred())
	// Nothing lost: EventuallyConverged checked the handler calls add up
	// to the server's state. (A pod's delete is two changes: its deletion
	// timestamp set, then its removal.)
	e2e.AddReportEntry("S16 order", fmt.Sprintf("%d handler calls for %d writes in %s; %d out of the server's order%s",
		len(events), 3*len(names), burst.Round(time.Millisecond), len(disorder), firstOf(disorder, 3)))
	Expect(disorder).To(BeEmpty(), InServerOrder+" (resourceVersion increasing from call to call), %s; numbers: %s", slow.describe(), n)
}

// outOfOrder lists the handler calls whose resourceVersion is not above
// the call before's. resourceVersions are etcd revisions: integers, the
// server's order (the API calls them opaque; every kube-apiserver on etcd
// writes the revision).
func outOfOrder(events []probe.Event) ([]string, error) {
	var out []string
	var last uint64
	lastCall := ""
	for _, e := range events {
		rv, err := strconv.ParseUint(e.ResourceVersion, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s of %s: resourceVersion %q is not an etcd revision: %w", e.Kind, e.Key, e.ResourceVersion, err)
		}
		call := fmt.Sprintf("%s %s@%d", e.Kind, e.Key, rv)
		if rv <= last {
			out = append(out, fmt.Sprintf("%s after %s", call, lastCall))
		}
		last, lastCall = rv, call
	}
	return out, nil
}

// firstOf is ": " and the first n of list, "" when it is empty.
func firstOf(list []string, n int) string {
	if len(list) == 0 {
		return ""
	}
	more := ""
	if len(list) > n {
		list, more = list[:n], fmt.Sprintf(", ... (%d more)", len(list)-n)
	}
	s := ": "
	for i, l := range list {
		if i > 0 {
			s += "; "
		}
		s += l
	}
	return s + more
}
