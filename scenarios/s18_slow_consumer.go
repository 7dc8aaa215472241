package scenarios

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sync/errgroup"

	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// KeepsReading is S18's assertion: the watch was read while the consumer
// worked through the burst.
const KeepsReading = "the watch kept being read while the consumer was slow"

// StreamReadBound bounds how long after the burst's last write the
// informer's watch may take to have read all of the burst's events. With
// the consumer unlocked from the queue (client-go v0.36
// tools/cache/the_real_fifo.go whileProcessing_locked: the queue's lock is
// released around processing while fewer than 2 x 1000 items wait) the
// reflector's watchHandler only waits for the lock around an append
// (RealFIFO.Add), so the stream is read as fast as the server writes it;
// 1 s is far above that and far below the consumer's lag (SlowConsumerLag).
const StreamReadBound = time.Second

// SlowConsumerLag is the least the consumer must trail the burst for S18
// to test anything: the handler's last call at least this long after the
// last write (S18Objects x s18Index's 40 ms per call is 6 s of work).
const SlowConsumerLag = 2 * time.Second

// concurrentDecoding is client-go v0.38's gate that decodes a streaming
// list's watch concurrently, ahead of the reflector.
const concurrentDecoding = "WatchListClientConcurrentDecoding"

// S18Objects is the size of S18's burst.
const S18Objects = 150

// s18Writers is how many of the burst's creates are in flight at once.
const s18Writers = 8

// s18Index is S18's slow-down: 40 ms per index call, about four times what a
// create costs the spec's writer on the local backend (7-11 ms measured), so
// the consumer trails the burst by seconds (6 s of work for S18Objects).
var s18Index = Slowness{Name: "slow index function", IndexDelay: 40 * time.Millisecond}

// S18Slow is S18's value: both sync modes on the typed stack, and its
// negative control (client-go v0.36+).
var S18Slow = Register(Scenario{
	ID: "S18", Title: "a consumer slower than the events", Labels: []string{"slow-consumer", "release-sensitive"},
	Specs: []Spec{
		// On the typed stack only: what it measures is the informer's
		// queue, which every stack shares, and protobuf's length-delimited
		// frames are read one event at a time, so the probe sees when each
		// event left the stream.
		{
			Text: "the watch keeps being read, stays open, and nothing is lost or relisted", Sample: true,
			Entries: []Entry{{Run: func(ctx context.Context, s e2e.Setup, in Input) {
				SlowConsumer(ctx, s, in.Probe())
			}}},
		},
		// client-go's own queue before v0.36: Pop and PopBatch hold the
		// queue's lock while the consumer processes (the_real_fifo.go
		// whileProcessing_locked), so the reflector cannot append. From
		// v0.38 a streaming list's watch is decoded concurrently
		// (WatchListClientConcurrentDecoding, beta and on: rest/request.go
		// newWatchEventDecoder, rest/watch/concurrent_decoder.go) and read
		// ahead of the reflector whatever its queue does: measured on
		// v0.38.0-beta.0, a burst of 300 left the stream at once behind
		// the locked queue. The control switches that off where the
		// client-go has it, so that only the queue holds the stream.
		{
			Text: "fails when the queue stays locked while the consumer works (UnlockWhileProcessingFIFO=false)", Mode: e2e.StreamingList, ClientGo: ">= 0.36.0",
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				e2e.UseClientGoGate(ctx, "UnlockWhileProcessingFIFO", false)
				if _, known := e2e.ClientGoGate(concurrentDecoding); known {
					e2e.UseClientGoGate(ctx, concurrentDecoding, false)
				}
				SlowConsumer(ctx, s, probe.Options{})
			},
			Fails: []string{KeepsReading}, Because: "the S18 assertion catches a watch left unread behind a locked queue",
		},
	},
})

// SlowConsumer is S18: an informer whose index function is slower than the
// event rate (s18Index, 40 ms per call) gets a burst of S18Objects creates.
// The watch must keep being read (all the burst's events read off the
// stream within StreamReadBound of the last write) while the consumer
// trails by seconds; the watch stays open, with no relist, and nothing is
// lost (the store and the handler converge). The report gives the write
// rate, the consumer's rate, the watch's lifetime and the process's heap.
//
// Expected of client-go, by version: with UnlockWhileProcessingFIFO (beta,
// on from v0.36; it needs AtomicFIFO) the queue is unlocked while an item
// or batch is processed (the_real_fifo.go whileProcessing_locked), so the
// reflector keeps appending. Before (v0.31-v0.35, or either gate off) the
// queue's lock is held while the consumer processes (delta_fifo.go Pop,
// the_real_fifo.go Pop and PopBatch; their comment: "Queue depth never goes
// high because processing an item is locking the queue, and new items
// can't be added until processing finish", kubernetes#103789): the
// reflector's Add waits for every item (with batches, for a whole batch of
// up to 1000), the watch is not read, and the server's and the
// connection's buffers fill instead.
func SlowConsumer(ctx context.Context, s e2e.Setup, opts probe.Options) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	writer := env.Subjects
	server := writer.Quorum()
	opts.Namespace = env.Namespace
	s18Index.apply(&opts)
	env.Note("S18 consumer", s18Index.describe())
	obs := env.StartProbe(ctx, writer.Name(), env.User, opts)
	obs.EventuallyConverged(ctx, server)
	readBefore := addedRead(obs.Recorder.Snapshot())
	heapBefore := heapInUse()

	e2e.By(ctx, fmt.Sprintf("a burst of %d creates, faster than the consumer (%s)", S18Objects, s18Index.describe()))
	start := time.Now()
	// Several writers at once, so that the burst outruns the consumer on a
	// loaded machine too (one writer managed 24 creates/s at load 30 on
	// 2 cores, slower than the consumer: S18 tested nothing).
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s18Writers)
	for i := range S18Objects {
		g.Go(func() error {
			_, err := writer.Create(gctx, fmt.Sprintf("burst-%03d", i))
			return err
		})
	}
	Expect(g.Wait()).To(Succeed(), "the burst's creates")
	lastWrite := time.Now()
	var read time.Duration
	err := InterceptGomegaFailure(func() {
		Eventually(func() int {
			read = time.Since(lastWrite)
			return addedRead(obs.Recorder.Snapshot()) - readBefore
		}).WithTimeout(StreamReadBound).WithPolling(10*time.Millisecond).Should(BeNumerically(">=", S18Objects),
			KeepsReading+": the burst's %d ADDED events read off the watch within %s of the last write (%s)", S18Objects, StreamReadBound, relistGates())
	})
	env.RecordBound("watch read the burst", lastWrite, lastWrite.Add(read), StreamReadBound, err == nil)
	// A plain error keeps the named message first in the failure.
	Expect(err).NotTo(HaveOccurred())
	heapPeak := heapInUse()

	converged := obs.EventuallyConverged(ctx, server)
	rec := obs.Recorder.Snapshot()
	lag := lastHandlerCall(rec).Sub(lastWrite)
	n := obs.Report(converged)
	writes := lastWrite.Sub(start)
	env.Note("S18 rates", fmt.Sprintf("writes %.0f/s (%d in %s); watch read them %s after the last; handler's last call %s after it (%.0f events/s); heap in use %s before, %s with the backlog",
		float64(S18Objects)/writes.Seconds(), S18Objects, writes.Round(time.Millisecond), read.Round(time.Millisecond), lag.Round(time.Millisecond),
		float64(S18Objects)/(lag+writes).Seconds(), mib(heapBefore), mib(heapPeak)))
	Expect(lag).To(BeNumerically(">=", SlowConsumerLag), "the consumer trailed the burst by at least %s (else S18 tests nothing); numbers: %s", SlowConsumerLag, n)
	w := lastWatch(rec)
	Expect(w).NotTo(BeNil(), "the informer has a watch")
	Expect(w.OpenWatch()).To(BeTrue(), "the informer's watch is still open after the burst, not ended by the server as a slow watcher: %+v", *w)
	env.Note("S18 watch", fmt.Sprintf("open for %s, %d events", w.Duration().Round(time.Millisecond), w.Events))
	Expect(n.Reinitialisations).To(BeEmpty(), "no re-initialisation while the consumer was slow (%v); numbers: %s", n.ReinitDetails, n)
}

// addedRead is how many ADDED events the informer's watches have read.
func addedRead(rec probe.Record) int {
	total := 0
	for _, r := range rec.Requests {
		if r.Watch && !r.ConsistencyCheck {
			total += r.EventTypes["ADDED"]
		}
	}
	return total
}

// lastWatch is the informer's last watch request, nil if none.
func lastWatch(rec probe.Record) *probe.Request {
	for i := len(rec.Requests) - 1; i >= 0; i-- {
		if r := rec.Requests[i]; r.Watch && !r.ConsistencyCheck {
			return &r
		}
	}
	return nil
}

// lastHandlerCall is when the handler was last called.
func lastHandlerCall(rec probe.Record) time.Time {
	if len(rec.Events) == 0 {
		return time.Time{}
	}
	return rec.Events[len(rec.Events)-1].Time
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
