package scenarios

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
)

// S34's assertions. The first holds on every client-go in both sync modes;
// the second for every streaming list; the third for a streaming list from
// client-go StreamingTransformFrom.
const (
	TransformShrinksCache = "with a transform stripping the objects' data the informer retains a small fraction of the heap it retains without"
	StreamingPeakBounded  = "a streaming list's peak heap stays within its bound of the heap the informer retains: no copy of the list beside its objects"
	StreamingStripPeak    = "with a transform stripping the objects' data a streaming list's peak heap is a small fraction of its peak without: the objects are stripped as they arrive"
)

// StreamingTransformFrom is the first client-go whose reflector runs the
// informer's transform on a streaming list's objects as they arrive (its
// temporary store, tools/cache/reflector.go watchList: TransformingStore,
// WithTransformer): kubernetes PR #131799, in effect from v0.34.3, the
// change that makes S19 see a streaming list's objects transformed twice
// (TransformedTwiceFrom; docs/bisect/s19-transform-twice.md).
const StreamingTransformFrom = TransformedTwiceFrom

// S34's objects: S34Objects ConfigMaps of S34ObjectData bytes of data each
// (s34Keys keys of equal size), 32 MiB in all, created by S34Writers
// parallel writers (the admin client, no client-side rate limit). Fewer
// than 500 objects: a LIST is one page whatever the server does with the
// pager's limit (tools/pager: PageSize 500).
const (
	S34Objects    = 256
	S34ObjectData = 128 << 10
	S34Writers    = 8
	s34Keys       = 4
	s34Prefix     = "s34-"
)

// How S34 measures. S34GCPercent is the GC target (debug.SetGCPercent)
// during each sync: a GC cycle runs each time the heap grows by a tenth
// (130 cycles in a 3 s streaming sync, measured), so the live heap each
// cycle marks follows the true one closely, and the heap in use (live,
// and dead objects not yet swept) holds little garbage; with Go's default
// of 100 a cycle runs each time the heap doubles, and either number could
// miss the peak by as much as the live heap. The sampler reads the heap
// every S34SamplePeriod.
const (
	S34GCPercent    = 10
	S34SamplePeriod = time.Millisecond
)

// S34's bounds, as shares of what the spec measures (the heap retained
// without a transform is the objects' data and metadata as decoded, 1.02
// to 1.04 times the data, measured):
//   - S34MinHeldShare: without a transform the informer retains at least
//     this share of the objects' data (else the measurement does not see
//     the objects, and S34 tests nothing);
//   - S34StrippedShare: with the stripping transform it retains at most
//     this share of what it retains without (TransformShrinksCache;
//     measured 0.01-0.04);
//   - S34StreamingPeakRatio: a streaming list's peak live heap is at most
//     this multiple of what the informer retains (StreamingPeakBounded;
//     measured 1.06-1.21: the objects, the HTTP/2 stream's receive window,
//     up to 4 MiB the client reads ahead of the decoder, x/net/http2
//     transportDefaultStreamFlow, and one event being decoded; a client
//     that holds the stream's bytes whole measured 2.0-2.4);
//   - S34StrippedPeakShare: from StreamingTransformFrom, a streaming
//     list's peak live heap with the stripping transform is at most this
//     share of its peak without (StreamingStripPeak; measured 0.16-0.18:
//     the stripped objects, the stream's receive window, one event; where
//     the objects arrive whole, v0.31.14, v0.34.2 or the StripInHandler
//     control, 0.96-1.09).
const (
	S34MinHeldShare       = 0.8
	S34StrippedShare      = 0.1
	S34StreamingPeakRatio = 1.5
	S34StrippedPeakShare  = 0.5
)

// Stripper is what S34's stripped informer drops the objects' data with:
// its transform (SetTransform) and, when Handler is set, a handler of its
// own that is given every object it is told of.
type Stripper struct {
	Name      string
	Transform cache.TransformFunc
	Handler   func(obj any)
}

// StripData is the transform S34 measures: a ConfigMap's data and binary
// data set to nil, in place (as client-go allows since v1.27; idempotent,
// so a streaming list's objects transformed twice from v0.34.3 are fine).
var StripData = Stripper{Name: "a transform stripping the data", Transform: stripData}

func stripData(obj any) (any, error) {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		cm.Data, cm.BinaryData = nil, nil
	}
	return obj, nil
}

// KeepData is a negative control's transform: it strips the managed
// fields only (as many controllers' transforms do), keeping the data.
var KeepData = Stripper{Name: "a transform stripping only the managed fields", Transform: func(obj any) (any, error) {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		cm.ManagedFields = nil
	}
	return obj, nil
}}

// StripInHandler is a negative control's stripping: the transform leaves
// the objects as they are and a handler strips them in the cache (in
// place), once the informer hands them on: the cache ends as small, but the
// objects arrive whole.
var StripInHandler = Stripper{
	Name:      "a handler stripping the data in the cache",
	Transform: func(obj any) (any, error) { return obj, nil },
	Handler:   func(obj any) { _, _ = stripData(obj) },
}

// syncMemory is what S34 measured of one informer's initial sync, in bytes
// of heap above the baseline (the heap after a forced GC just before the
// informer was built).
type syncMemory struct {
	// peak is the highest live heap the GC cycles during the sync marked,
	// and peakInUse the highest heap in use (live, and dead objects not
	// yet swept), the consistency detector's LIST left out (samples from
	// the moment it is sent are not counted: its copy of the whole list is
	// the detector's, a test aid, not the informer's); peakAll is the
	// highest live heap with it.
	peak, peakInUse, peakAll int64
	// detector: the detector's LIST was sent.
	detector bool
	// retained is the heap after a forced GC once the informer synced.
	retained int64
	// base is the baseline: the test process's live heap before the
	// informer was built.
	base uint64
	// samples and cycles count the sampler's reads and the GC cycles
	// during the sync.
	samples, cycles int
	took            time.Duration
	// first is the kind of the informer's first request ("list",
	// "streaming list").
	first string
}

// S34SyncMemory is S34's value: both sync modes, and its negative controls.
var S34SyncMemory = Register(Scenario{
	ID: "S34", Title: "memory of the initial sync", Labels: []string{"memory"},
	// Slow: each spec fills its namespace with 32 MiB of ConfigMaps.
	Speed: Slow,
	Specs: []Spec{
		{
			Text: "an informer over many large objects, with and without a transform stripping them: the heap its sync needs and the heap it keeps",
			Entries: []Entry{{Run: func(ctx context.Context, s e2e.Setup, in Input) {
				InitialSyncMemory(ctx, s, in.Probe(), StripData)
			}}},
		},
		{
			Text: "fails when the transform keeps the objects' data", Mode: e2e.ListWatch,
			Run:   RunWith2(InitialSyncMemory, probe.Options{}, KeepData),
			Fails: []string{TransformShrinksCache}, Because: "the S34 assertion catches a transform that keeps the bulk",
		},
		{
			Text: "fails when the client buffers a streaming list's initial events", Mode: e2e.StreamingList,
			Client: BufferInitialEvents,
			Run:    RunWith2(InitialSyncMemory, probe.Options{}, StripData),
			Fails:  []string{StreamingPeakBounded}, Because: "the S34 assertion catches a streaming list held whole in memory",
		},
		{
			Text: "fails when the objects are stripped in a handler instead of the transform", Mode: e2e.StreamingList,
			ClientGo: ">= " + StreamingTransformFrom,
			Run:      RunWith2(InitialSyncMemory, probe.Options{}, StripInHandler),
			Fails:    []string{StreamingStripPeak}, Because: "the S34 assertion catches a streaming list's objects arriving whole",
		},
	},
})

// InitialSyncMemory is S34: how much heap an informer needs to sync over
// many large objects, and how much it keeps, with and without a transform
// that strips them (SetTransform): what streaming lists and transforms
// were made for, measured. The namespace gets S34Objects ConfigMaps of
// S34ObjectData bytes of data (32 MiB); then, in the test process, an
// informer on them with the stripping transform (strip: StripData, or a
// negative control's) syncs, then one without a transform, each measured
// while it syncs, each stopped once measured (in this order: a stopped
// probe stays in the spec's report, and what the stripped one keeps is
// small beside the second's measurement).
//
// The measurement: GC target S34GCPercent for the syncs (restored after);
// a forced GC (runtime.GC, twice) and the heap read then are the
// baseline; a goroutine reads runtime/metrics (without stopping the
// world) every S34SamplePeriod while the informer is built and syncs
// (HasSynced of every handler, and LastSyncResourceVersion set: the
// reflector's list or watchList returned, so nothing of the list is
// referenced from its stack any more): /gc/heap/live:bytes, the live heap
// the last GC cycle marked, and /memory/classes/heap/objects:bytes, the
// heap in use (MemStats.HeapAlloc: live objects and dead ones not yet
// swept). Their highest samples above the baseline are the peak live heap
// (asserted) and the peak heap in use (observed: it depends on when the
// GC ran, and varies from run to run). Then a forced GC: the heap above
// the baseline is what the informer retains. Resolution: the live heap is
// known at the end of each GC cycle, one per tenth of growth, so a peak
// shorter than a cycle (a buffer copied as it grows) may be missed by up
// to a tenth of the heap. The heap is the whole test process's (4-5 MiB
// at the baseline, measured): Ginkgo runs one spec at a time per process,
// but the process also holds the harness (the cluster's handle, the
// in-process fault proxy the informer's connection goes through, with
// 32 KiB buffers per connection, the admin client, the spec's report
// data) and the probe's instruments (its recorder, a goroutine framing
// each watch event once more to note bookmarks and errors): they sit in
// the baseline and allocate little during the sync. In streaming-list
// mode with client-go's watch-list consistency detector on (as make runs
// the suite), the reflector sends a LIST of every object after the
// stream, before it replaces its store: as that request goes out a
// transport wrapper samples, forces a GC and samples again (the live heap
// with the stream's objects all in, exactly), and samples after it do not
// count in the peaks: the detector's copy of the whole list is a test
// aid's, not the informer's; the peak live heap with it is reported apart.
// What the reflector does after it (Replace, the handlers) allocates
// little more than pointers to objects already counted.
//
// Asserted: without a transform the informer retains at least
// S34MinHeldShare of the data (a precondition); with the stripping
// transform it retains at most S34StrippedShare of that
// (TransformShrinksCache); in streaming-list mode the peak without a
// transform is at most S34StreamingPeakRatio times what the informer
// retains (StreamingPeakBounded); from client-go StreamingTransformFrom,
// the streaming list's peak with the stripping transform is at most
// S34StrippedPeakShare of its peak without (StreamingStripPeak). Observed
// (MiB, report.UnitMiB), for each informer: the peak live heap (varying
// from run to run after a LIST), the heap retained, and, varying, the peak
// heap in use and the peak live heap with the detector's LIST.
//
// Expected of client-go (tools/cache), from the source:
//   - LIST (reflector.go list, v0.31-v0.37 and v0.38.0-alpha.2 alike): the
//     pager sends limit=500&resourceVersion=0 (one page here; the watch
//     cache serves resourceVersion=0 whole anyway, the reflector's comment
//     says) and the REST client reads the whole answer into one buffer
//     (rest/request.go transformResponse: io.ReadAll) and decodes it into a
//     list; meta.ExtractListWithAlloc copies the items' structs; syncWith
//     hands them to the queue's Replace. The transform runs
//     only there, when an object enters the queue (delta_fifo.go
//     queueActionLocked, v0.31-v0.32 and with InOrderInformers off;
//     the_real_fifo.go addToItems_locked, v0.33+, and from v0.36
//     addReplaceToItemsLocked for the atomic Replace), after the whole list
//     was read and decoded: the peak holds the answer's bytes and every
//     object whole, with or without a transform; only what is retained
//     shrinks.
//   - Streaming list (reflector.go watchList): the objects arrive one
//     event at a time (handleListWatch) into a temporary store, which is
//     handed to the queue's Replace once the initial-events-end bookmark
//     came; no copy of the whole list. v0.31-v0.34.2: the temporary store
//     is a plain NewStore, the transform runs only in the queue's Replace:
//     the peak holds every object whole, with or without a transform.
//     From v0.34.3 (StreamingTransformFrom) the temporary store runs the
//     informer's transform as each object arrives (NewStore with
//     WithTransformer when the reflector's store implements
//     TransformingStore, which the informers' queues do from v0.34.3,
//     delta_fifo.go and the_real_fifo.go Transformer; store.go cache.Add):
//     a streaming list's peak with a stripping transform is the stripped
//     objects. The transform is set on the queue by the informer
//     (shared_informer.go SetTransform; Run, v0.31-v0.33, and
//     controller.go newQueueFIFO, v0.34+, build the queue with it).
//   - The consistency detector (util/consistencydetector
//     CheckDataConsistency, reached from reflector.go watchList through
//     checkWatchListDataConsistencyIfRequested) reads the whole list once
//     more and, from v0.34.3, transforms its items only once decoded.
func InitialSyncMemory(ctx context.Context, s e2e.Setup, opts probe.Options, strip Stripper) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	e2e.By(ctx, fmt.Sprintf("%d ConfigMaps of %d KiB of data each", S34Objects, S34ObjectData>>10))
	start := time.Now()
	Expect(fillConfigMaps(ctx, env.Writer, env.Namespace)).To(Succeed(), "create S34's ConfigMaps")
	env.Note("S34 objects", fmt.Sprintf("%d ConfigMaps of %d KiB of data (%.0f MiB) created in %s", S34Objects, S34ObjectData>>10, inMiB(S34Objects*S34ObjectData), time.Since(start).Round(time.Millisecond)))

	opts.Namespace = env.Namespace
	opts.Informer = func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().ConfigMaps().Informer()
	}
	old := debug.SetGCPercent(S34GCPercent)
	defer debug.SetGCPercent(old)

	e2e.By(ctx, "an informer with "+strip.Name+" syncs")
	stripped := measureSync(ctx, env, "configmaps-stripped", opts, &strip)
	e2e.By(ctx, "an informer without a transform syncs")
	whole := measureSync(ctx, env, "configmaps", opts, nil)

	data := float64(S34Objects * S34ObjectData)
	recordSyncMemory(env, "without a transform", whole)
	recordSyncMemory(env, "with "+strip.Name, stripped)
	Expect(float64(whole.retained)).To(BeNumerically(">=", S34MinHeldShare*data),
		"without a transform the informer retained its objects' data (%.1f MiB retained, %.1f MiB of data): else S34 measures nothing", inMiB(whole.retained), inMiB(int64(data)))
	Expect(float64(stripped.retained)).To(BeNumerically("<=", S34StrippedShare*float64(whole.retained)),
		TransformShrinksCache+" (%.0f%%): %.1f MiB with %s, %.1f MiB without", 100*S34StrippedShare, inMiB(stripped.retained), strip.Name, inMiB(whole.retained))
	if whole.first != "streaming list" {
		return
	}
	Expect(float64(whole.peak)).To(BeNumerically("<=", S34StreamingPeakRatio*float64(whole.retained)),
		StreamingPeakBounded+" (%.1f x): peak %.1f MiB, retained %.1f MiB", S34StreamingPeakRatio, inMiB(whole.peak), inMiB(whole.retained))
	switch atLeast, known := e2e.ClientGoAtLeast(StreamingTransformFrom); {
	case !known:
		env.Note("S34 not judged", fmt.Sprintf("%s: the streaming list's peak with %s is not judged: client-go strips a streaming list's objects as they arrive only from v%s, and the version in use is unknown (%s)", StreamingStripPeak, strip.Name, StreamingTransformFrom, e2e.ClientGoUnknown()))
	case !atLeast:
		env.Note("S34 not judged", fmt.Sprintf("%s: not asserted on %s, whose reflector transforms a streaming list's objects only once the whole list came (from v%s as they arrive)", StreamingStripPeak, e2e.ClientGoName(), StreamingTransformFrom))
	default:
		Expect(float64(stripped.peak)).To(BeNumerically("<=", S34StrippedPeakShare*float64(whole.peak)),
			StreamingStripPeak+" (%.0f%%, client-go v%s+): peak %.1f MiB with %s, %.1f MiB without", 100*S34StrippedPeakShare, StreamingTransformFrom, inMiB(stripped.peak), strip.Name, inMiB(whole.peak))
	}
}

// recordSyncMemory observes and notes what one informer's sync, what,
// took of the heap.
func recordSyncMemory(env *e2e.Env, what string, m syncMemory) {
	data := float64(S34Objects * S34ObjectData)
	// A LIST's peak falls where a GC cycle meets the answer's buffer
	// growing and being decoded: 64-110 MiB over ten runs of the same
	// code. A streaming list's grows with the objects: 36-40 MiB.
	peak := report.MiB("peak live heap during the sync, "+what, inMiB(m.peak))
	if m.first != "streaming list" {
		peak = peak.Varying()
	}
	env.Observe(peak)
	env.Observe(report.MiB("peak heap in use during the sync, "+what, inMiB(m.peakInUse)).Varying())
	env.Observe(report.MiB("heap retained after the sync, "+what, inMiB(m.retained)))
	detector := ""
	if m.detector {
		env.Observe(report.MiB("peak live heap with the consistency detector's LIST, "+what, inMiB(m.peakAll)).Varying())
		detector = fmt.Sprintf("; %.1f MiB with the consistency detector's LIST", inMiB(m.peakAll))
	}
	env.Note("S34 "+what, fmt.Sprintf("%s: peak live heap %.1f MiB (%.2f x the data), in use %.1f MiB%s; retained %.1f MiB (%.2f x the data); above a baseline of %.1f MiB; synced in %s (%d heap samples, %d GC cycles)",
		m.first, inMiB(m.peak), float64(m.peak)/data, inMiB(m.peakInUse), detector, inMiB(m.retained), float64(m.retained)/data,
		inMiB(m.base), m.took.Round(time.Millisecond), m.samples, m.cycles))
}

// measureSync starts an informer on S34's ConfigMaps (with strip's
// transform and handler, when strip is set), measures its initial sync,
// and stops it.
func measureSync(ctx context.Context, env *e2e.Env, name string, opts probe.Options, strip *Stripper) syncMemory {
	var regs []cache.ResourceEventHandlerRegistration
	if strip != nil {
		opts.Prepare = chain(opts.Prepare, func(inf cache.SharedIndexInformer) error {
			if err := inf.SetTransform(strip.Transform); err != nil {
				return err
			}
			if strip.Handler == nil {
				return nil
			}
			reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    strip.Handler,
				UpdateFunc: func(_, obj any) { strip.Handler(obj) },
			})
			regs = append(regs, reg)
			return err
		})
	}
	base := settledHeap()
	h := startHeapSampler(base)
	start := time.Now()
	obs := env.StartProbe(ctx, name, h.markDetectorList(env.User), opts)
	obs.SyncMeasuresLoad = true // many large objects
	Eventually(func() bool {
		for _, r := range regs {
			if !r.HasSynced() {
				return false
			}
		}
		return obs.Informer.LastSyncResourceVersion() != ""
	}).WithContext(ctx).WithTimeout(e2e.EventTimeout).Should(BeTrue(), "informer %s's handlers synced and its reflector set its resourceVersion", name)
	m := h.stop()
	m.took = time.Since(start)
	m.retained = int64(settledHeap()) - int64(base)

	n := 0
	for _, k := range obs.Informer.GetStore().ListKeys() {
		if strings.HasPrefix(k, env.Namespace+"/"+s34Prefix) {
			n++
		}
	}
	Expect(n).To(Equal(S34Objects), "informer %s holds every ConfigMap", name)
	if reqs := obs.Recorder.Snapshot().ObjectRequests(); len(reqs) > 0 {
		m.first = reqs[0].Kind()
	}
	Expect(obs.StopWithin(e2e.ShutdownTimeout)).To(Succeed())
	return m
}

// fillConfigMaps creates S34's ConfigMaps in ns, S34Writers at a time.
// Their data is one random string under each key: letters and digits,
// nothing for JSON to escape and little for the answers' gzip to compress.
func fillConfigMaps(ctx context.Context, cs kubernetes.Interface, ns string) error {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	r := rand.New(rand.NewPCG(34, 34))
	b := make([]byte, S34ObjectData/s34Keys)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	data := map[string]string{}
	for k := range s34Keys {
		data[fmt.Sprintf("part-%d", k)] = string(b)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(S34Writers)
	for i := range S34Objects {
		g.Go(func() error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%03d", s34Prefix, i)},
				Data:       data,
			}, metav1.CreateOptions{})
			return err
		})
	}
	return g.Wait()
}

// The runtime/metrics S34 samples: the bytes of heap objects, live and
// dead ones not yet swept (MemStats.HeapAlloc: the heap in use), and the
// live heap as the last GC cycle marked it (objects allocated during the
// cycle included).
const (
	heapObjects = "/memory/classes/heap/objects:bytes"
	heapLive    = "/gc/heap/live:bytes"
)

func readHeap() uint64 {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// settledHeap is the heap after two forced GCs: the live heap.
func settledHeap() uint64 {
	runtime.GC()
	runtime.GC()
	return readHeap()
}

// heapSampler reads the heap every S34SamplePeriod until stopped.
type heapSampler struct {
	base uint64
	done chan struct{}
	wg   sync.WaitGroup

	mu sync.Mutex
	// live and inUse are the highest samples; liveBefore and inUseBefore
	// those before the detector's LIST.
	live, inUse             uint64
	liveBefore, inUseBefore uint64
	detector                bool
	samples, cycles         int
	firstCycle              uint64
}

const gcCycles = "/gc/cycles/total:gc-cycles"

func startHeapSampler(base uint64) *heapSampler {
	h := &heapSampler{base: base, done: make(chan struct{})}
	s := []metrics.Sample{{Name: heapObjects}, {Name: heapLive}, {Name: gcCycles}}
	metrics.Read(s)
	h.firstCycle = s[2].Value.Uint64()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(S34SamplePeriod)
		defer t.Stop()
		for {
			h.sample(s)
			select {
			case <-h.done:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

// sample reads s (heapObjects, heapLive, gcCycles) and keeps the highest.
func (h *heapSampler) sample(s []metrics.Sample) {
	metrics.Read(s)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.samples++
	h.inUse = max(h.inUse, s[0].Value.Uint64())
	h.live = max(h.live, s[1].Value.Uint64())
	h.cycles = int(s[2].Value.Uint64() - h.firstCycle)
	if !h.detector {
		h.liveBefore, h.inUseBefore = h.live, h.inUse
	}
}

// detectorList is called as the detector's LIST goes out, the stream's
// objects all in: a sample, then a forced GC and a sample of the live heap
// it marked, the informer's exactly at that moment; no sample after it
// counts in the peaks the informer is judged by.
func (h *heapSampler) detectorList() {
	s := []metrics.Sample{{Name: heapObjects}, {Name: heapLive}, {Name: gcCycles}}
	h.sample(s)
	runtime.GC()
	h.sample(s)
	h.mu.Lock()
	h.detector = true
	h.mu.Unlock()
}

func (h *heapSampler) stop() syncMemory {
	close(h.done)
	h.wg.Wait()
	h.sample([]metrics.Sample{{Name: heapObjects}, {Name: heapLive}, {Name: gcCycles}})
	h.mu.Lock()
	defer h.mu.Unlock()
	above := func(v uint64) int64 { return max(int64(v)-int64(h.base), 0) }
	return syncMemory{
		peak: above(h.liveBefore), peakInUse: above(h.inUseBefore), peakAll: above(h.live),
		detector: h.detector, base: h.base, samples: h.samples, cycles: h.cycles,
	}
}

// markDetectorList wraps cfg's transport, innermost, to tell the sampler
// when the consistency detector's LIST goes out (probe.IsConsistencyCheck).
func (h *heapSampler) markDetectorList(cfg *rest.Config) *rest.Config {
	return httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
		if probe.IsConsistencyCheck(req.Method, req.URL.Query()) {
			h.detectorList()
		}
		return rt.RoundTrip(req)
	})
}

// inMiB is n bytes in MiB, to a tenth.
func inMiB[T int64 | uint64 | float64 | int](n T) float64 {
	return math.Round(float64(n)/(1<<20)*10) / 10
}

// BufferInitialEvents is a negative control's broken client: it reads
// each streaming list's initial events whole (up to the bookmark that ends
// them) before it hands the first on, as a client or proxy that buffers a
// response would: the stream's bytes sit in memory beside the objects the
// reflector decodes from them.
func BufferInitialEvents(cfg *rest.Config) *rest.Config {
	return httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusOK || !httpfault.StreamingLists(req) {
			return resp, err
		}
		resp.Body = &bufferedInitialEvents{rc: resp.Body}
		return resp, nil
	})
}

// bufferedInitialEvents reads its stream up to the initial-events-end
// bookmark (its annotation's key, in JSON and in protobuf alike) on the
// first Read, then hands that on and passes the rest through.
type bufferedInitialEvents struct {
	rc      io.ReadCloser
	filled  bool
	pending []byte
	err     error
}

func (b *bufferedInitialEvents) Read(p []byte) (int, error) {
	if !b.filled {
		b.filled = true
		marker := []byte(metav1.InitialEventsAnnotationKey)
		chunk := make([]byte, 64<<10)
		for {
			n, err := b.rc.Read(chunk)
			from := max(len(b.pending)-len(marker), 0)
			b.pending = append(b.pending, chunk[:n]...)
			if err != nil {
				b.err = err
				break
			}
			if bytes.Contains(b.pending[from:], marker) {
				break
			}
		}
	}
	if len(b.pending) > 0 {
		n := copy(p, b.pending)
		b.pending = b.pending[n:]
		if len(b.pending) == 0 {
			b.pending = nil
		}
		return n, nil
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.rc.Read(p)
}

func (b *bufferedInitialEvents) Close() error { return b.rc.Close() }
