package scenarios

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S3Timeouts is S3's value: a server-side watch timeout on every informer
// stack and a client-side deadline mid protobuf frame, with their negative
// controls.
var S3Timeouts = Register(Scenario{
	ID: "S3", Title: "watch timeouts", Labels: []string{"watch-timeout"},
	Specs: []Spec{
		{
			Context: s3ServerTimeout, Sample: true,
			Text:    "resumes with a watch from its last resourceVersion, never relists, and misses no change",
			Entries: []Entry{{Modes: AllStacks, Feature: "kube-apiserver ends each watch at its timeoutSeconds", Run: RunBody(ResumesAfterServerTimeouts)}},
		},
		// A transport that turns the clean end of a watch body (io.EOF)
		// into a read error: the stream watcher reports it as an
		// InternalError and the reflector relists after every timeout. The
		// no-relist assertion must catch it.
		{
			Context: s3ServerTimeout, Text: "fails when the client treats the end of a watch as an error", Mode: e2e.ListWatch,
			Client: EndOfWatchAsError,
			Run:    RunBody(ResumesAfterServerTimeouts),
			Fails:  []string{S3NoRelist}, Because: "the S3 no-relist assertion catches a client that relists at every timeout",
		},
		// The same broken transport under the dynamic client on the custom
		// resource (JSON watch frames, unstructured objects).
		{
			Context: s3ServerTimeout, Text: "fails when the client treats the end of a watch as an error (" + s3CRD.Name + ")", Mode: s3CRD,
			Client: EndOfWatchAsError,
			Run:    RunBody(ResumesAfterServerTimeouts),
			Fails:  []string{S3NoRelist}, Because: "the S3 no-relist assertion catches a client that relists at every timeout on the custom resource",
		},
		// The CBOR stack's encoding check (e2e.ExpectStackEncoding, run by
		// every convergence check): a client whose requests ask for JSON
		// only is answered JSON by a server that serves CBOR, and must fail.
		{
			Context: s3ServerTimeout, Text: "fails when the client asks for JSON only (" + s3CBOR.Name + ")", Mode: s3CBOR,
			Client: AcceptJSONOnly,
			Run:    RunBody(ResumesAfterServerTimeouts),
			Fails:  []string{e2e.AnsweredInCBOR}, Because: "the CBOR stack's encoding check catches a client answered in JSON",
		},
		// Typed (protobuf) only: the length-delimited protobuf framing is
		// what kubernetes#129683 broke; JSON and CBOR watch streams are
		// framed otherwise (a JSON decoder on the stream, CBOR
		// self-delimiting data items), and custom resources are never
		// served in protobuf.
		{
			Context: s3MidFrame, Text: "ends the watch as a timeout and resumes it without relisting",
			Entries: []Entry{{Feature: "a client-side deadline fires while a protobuf watch frame is half read", Run: RunWith(ResumesAfterDeadlineMidFrame, MidFrameInput{})}},
		},
		// The informer built on v0.32's length-delimited frame reader (see
		// PodsWithV032FrameReader) turns the deadline into a decode error
		// and relists: the no-relist assertion must catch it. One sync
		// mode: the control's hand-built ListWatch stands for v0.32, which
		// had no streaming lists by default.
		{
			Context: s3MidFrame, Text: "fails with client-go v0.32's frame reader", Mode: e2e.ListWatch,
			Run:   RunWith(ResumesAfterDeadlineMidFrame, MidFrameInput{Informer: PodsWithV032FrameReader}),
			Fails: []string{S3NoRelist}, Because: "the S3 no-relist assertion catches v0.32's relist after a deadline mid-frame",
		},
	},
})

const (
	s3ServerTimeout = "when kube-apiserver ends each watch at its timeoutSeconds"
	s3MidFrame      = "when a client-side deadline fires while a protobuf watch frame is half read"
)

// s3CRD and s3CBOR are the custom resource's stacks (JSON and CBOR) in
// LIST+WATCH mode.
var (
	s3CRD  = e2e.ListWatch.OnStack(probe.StackDynamicCRD)
	s3CBOR = e2e.ListWatch.OnStack(probe.StackDynamicCRDCBOR)
)

// S3 (seed 000), server side: kube-apiserver ends every watch cleanly at its
// timeout, and the informer must resume with a plain watch from its last
// resourceVersion, never relist, and miss nothing changed in between.
//
// Expected of kube-apiserver 1.36 and client-go v0.36:
//   - apiserver pkg/endpoints/handlers/get.go handleWatch: the watch lasts
//     the client's timeoutSeconds; --min-request-timeout applies only when
//     the client sends none. tools/cache/reflector.go watch always sends one
//     (5-10 min, minWatchTimeout), so the short-request-timeout profile
//     cannot shorten an informer's watches: the spec shortens them with the
//     factory's list-options tweak, which runs after the reflector set its
//     options (informers.WithTweakListOptions, informers/core/v1/pod.go
//     WatchFunc; the filtered dynamic and metadata factories' tweak,
//     dynamicinformer/informer.go NewFilteredDynamicInformer and
//     metadatainformer/informer.go NewFilteredMetadataInformer WatchFunc),
//     so it runs on every stack.
//   - apimachinery pkg/watch/streamwatcher.go receive treats io.EOF as a
//     normal close; reflector.go handleAnyWatch returns nil for a watch that
//     lasted at least a second, and watch() loops to a new WATCH from
//     LastSyncResourceVersion: no LIST, no streaming list. In streaming-list
//     mode the initial streaming WATCH is the first to time out; the ones
//     after it are plain resuming watches.
const (
	// serverWatchTimeout is the timeoutSeconds every watch is sent with:
	// long enough not to be a "very short watch" (< 1 s, no events).
	serverWatchTimeout = 2 * time.Second
	// serverTimeoutsWanted is how many server-side timeouts a run lives through.
	serverTimeoutsWanted = 3
	// serverTimeoutWindow bounds waiting for the next timeout: a watch's
	// timeout, plus (for a client that relists, the negative control) a
	// reflector backoff that doubles from 0.8-1.6 s at each relist.
	serverTimeoutWindow = 15 * time.Second
)

// ResumesAfterServerTimeouts runs S3 server side (above) on an informer of
// the test user (built with s.Client when set: a negative control breaks
// it).
func ResumesAfterServerTimeouts(ctx context.Context, s e2e.Setup) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	writer := env.Subjects
	gone, err := writer.Create(ctx, "gone")
	Expect(err).NotTo(HaveOccurred())

	// The tweak runs before the client marks a watch (Watch=true), so it
	// sets the LIST's timeoutSeconds too: harmless, a LIST is quick.
	timeout := func(o *metav1.ListOptions) { o.TimeoutSeconds = ptr.To(int64(serverWatchTimeout.Seconds())) }
	pods := env.StartProbe(ctx, writer.Name(), env.User, probe.Options{Namespace: env.Namespace, TweakListOptions: timeout})
	var recovery time.Duration
	e2e.Defer(ctx, func() { pods.Report(recovery) })

	for i := 1; i <= serverTimeoutsWanted; i++ {
		e2e.By(ctx, fmt.Sprintf("waiting for server-side timeout %d and the next watch, then changing the %s", i, writer.Name()))
		Eventually(func() int { return endedWatches(pods.Recorder.Snapshot()) }).WithContext(ctx).
			WithTimeout(serverTimeoutWindow).WithPolling(50*time.Millisecond).Should(BeNumerically(">=", i), "watches ended by the server")
		_, err := writer.Create(ctx, fmt.Sprintf("between-%d", i))
		Expect(err).NotTo(HaveOccurred())
		if i == 2 {
			Expect(writer.Delete(ctx, "gone")).To(Succeed())
		}
	}
	changed := time.Now()
	pods.EventuallyConverged(ctx, writer.Quorum())
	recovery = time.Since(changed)
	pods.ExpectDeletesObserved(probe.Object{Key: gone.Key, UID: gone.UID})

	rec := pods.Recorder.Snapshot()
	reinits := probe.Reinitialisations(rec)
	Expect(probe.CountByCause(reinits)).To(BeEmpty(), S3NoRelist+" after %d server-side timeouts (%v)", serverTimeoutsWanted, reinits)
	expectResumingWatches(rec, serverTimeoutsWanted)
}

// endedWatches counts the watches that ended after the first sync.
func endedWatches(rec probe.Record) int {
	n := 0
	for _, r := range rec.Requests {
		if r.Watch && !r.End.IsZero() && !rec.Synced.IsZero() && r.End.After(rec.Synced) {
			n++
		}
	}
	return n
}

// expectResumingWatches checks each watch after the first one that ended
// cleanly: it resumes (no initial events) from a resourceVersion at least
// the previous watch's and at least that of every event delivered before it
// started, so nothing is replayed or skipped.
func expectResumingWatches(rec probe.Record, atLeast int) {
	ginkgo.GinkgoHelper()
	var watches []probe.Request
	for _, r := range rec.Requests {
		if r.Watch {
			watches = append(watches, r)
		}
	}
	resumed := 0
	for i := 1; i < len(watches); i++ {
		prev, w := watches[i-1], watches[i]
		Expect(prev.CleanEOF).To(BeTrue(), "watch #%d was ended by the server's timeout (a clean EOF): %+v", prev.ID, prev)
		Expect(w.SendInitialEvents).To(BeFalse(), "watch #%d after #%d resumes instead of asking for initial events", w.ID, prev.ID)
		rv := resourceVersion(w.ResourceVersion)
		Expect(rv).To(BeNumerically(">", 0), "watch #%d resumes from a resourceVersion: %+v", w.ID, w)
		if p := resourceVersion(prev.ResourceVersion); p > 0 {
			Expect(rv).To(BeNumerically(">=", p), "watch #%d resumes from %d, not before watch #%d's %d", w.ID, rv, prev.ID, p)
		}
		for _, e := range rec.Events {
			if e.Time.Before(w.Start) {
				Expect(rv).To(BeNumerically(">=", resourceVersion(e.ResourceVersion)), "watch #%d resumes after the %s of %s delivered before it (rv %s)", w.ID, e.Kind, e.Key, e.ResourceVersion)
			}
		}
		resumed++
	}
	Expect(resumed).To(BeNumerically(">=", atLeast), "resuming watches")
}

func resourceVersion(s string) uint64 {
	v, _ := strconv.ParseUint(s, 10, 64)
	return v
}

// S3NoRelist starts the message of S3's assertion that the informer never
// re-initialised; its negative controls match it.
const S3NoRelist = "S3: re-initialisations by cause"

// S3 (seed 000), client side: a client-side deadline fires while a protobuf
// watch frame is half read. Upstream kubernetes/kubernetes#129683: v0.32's
// length-delimited frame reader (apimachinery pkg/util/framer/framer.go
// lengthDelimitedFrameReader.Read) answered any read error in the middle of
// a frame with io.ErrShortBuffer; the streaming decoder then failed with
// "got short buffer with n=0", which is neither EOF nor a timeout, the
// stream watcher sent an InternalError and the informer relisted. Fixed in
// apimachinery v0.33.0 (kubernetes/kubernetes#129792): Read now returns the
// underlying error first. THIS SPEC MUST FAIL ON client-go v0.32.x (where
// typed clients defaulted to protobuf). The module builds with v0.31-v0.37,
// so `make matrix CLIENT_GO=v0.32` runs this spec on v0.32 itself; so that
// every run, on any client-go, proves the assertion can fail, the negative
// control runs the same body on a copy of v0.32's frame reader.
//
// Expected of client-go v0.36:
//   - the reflector's watch gets its client-side deadline from
//     rest.Config.Timeout: rest/request.go NewRequest copies
//     c.Client.Timeout (set by rest.HTTPClientFor) into the request, and
//     Watch runs client.Do on that http.Client, whose Timeout covers reading
//     the body; timeoutSeconds only goes to the server.
//   - net/http cancelTimerBody turns the read error into a timeout error
//     ("Client.Timeout or context cancellation while reading body");
//     pkg/util/framer/framer.go lengthDelimitedFrameReader.Read returns it
//     as is (r.remaining > 0 is checked after err), pkg/runtime/serializer/
//     streaming/streaming.go decoder.Decode passes it on, and
//     pkg/watch/streamwatcher.go receive ends the watch quietly on
//     net.IsTimeout. The watch lasted longer than a second, so the reflector
//     resumes with a watch from its last resourceVersion: no relist, and the
//     event cut in half arrives on the next watch.
//
// Made deterministic: a pod with a clientMidFrameAnnotation-byte annotation
// is one protobuf frame far larger than stallAfterBytes; the fault proxy
// lets stallAfterBytes of it through and holds the rest until the client's
// deadline has ended the watch, and a pass-through observer in the client's
// transport confirms the body ended inside a frame.
const (
	// clientWatchDeadline is rest.Config.Timeout: every watch ends after it.
	clientWatchDeadline = 4 * time.Second
	// midFrameAnnotationBytes makes a pod's watch event ~200 KiB.
	midFrameAnnotationBytes = 200 << 10
	// stallAfterBytes of the event reach the client before the stall.
	stallAfterBytes = 64 << 10
	// stallWindow bounds the stall engaging and the deadline ending the watch.
	stallWindow = clientWatchDeadline + 2*time.Second
)

// MidFrameInput configures one run of ResumesAfterDeadlineMidFrame.
type MidFrameInput struct {
	// Informer, if set, builds the pods informer under test on the probe's
	// config and namespace instead of the factory's: a negative control's
	// older client (PodsWithV032FrameReader).
	Informer func(cfg *rest.Config, namespace string) func(informers.SharedInformerFactory) cache.SharedIndexInformer
}

// ResumesAfterDeadlineMidFrame runs S3 client side (above).
func ResumesAfterDeadlineMidFrame(ctx context.Context, s e2e.Setup, in MidFrameInput) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	writer := env.Writer
	gone, err := writer.CoreV1().Pods(env.Namespace).Create(ctx, e2e.Pod(env.Namespace, "gone"), metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())

	cfg := rest.CopyConfig(env.User)
	cfg.Timeout = clientWatchDeadline
	cfg.ContentType = runtime.ContentTypeProtobuf
	frames := &frameObserver{}
	cfg.Wrap(frames.wrap)
	opts := probe.Options{Namespace: env.Namespace}
	if in.Informer != nil {
		opts.Informer = in.Informer(cfg, env.Namespace)
	}
	pods := env.StartProbe(ctx, "pods", cfg, opts)
	var recovery time.Duration
	e2e.Defer(ctx, func() { pods.Report(recovery) })

	e2e.By(ctx, "waiting for a fresh watch")
	var stalled probe.Request
	Eventually(func(g Gomega) {
		stalled = e2e.ExpectWatchOpen(g, "the informer", pods.Recorder.Snapshot().Requests)
		g.Expect(time.Since(stalled.Start)).To(BeNumerically("<", clientWatchDeadline/4), "the watch is fresh")
	}).WithContext(ctx).WithTimeout(e2e.EventTimeout).WithPolling(20 * time.Millisecond).Should(Succeed())

	e2e.By(ctx, "stalling the stream after part of a large event, until the client's deadline ends the watch")
	restore, held := env.Proxy.StallAfter(stallAfterBytes)
	e2e.Defer(ctx, restore)
	big := e2e.Pod(env.Namespace, "big")
	big.Annotations = map[string]string{"informer-conformance/padding": incompressible(midFrameAnnotationBytes)}
	_, err = writer.CoreV1().Pods(env.Namespace).Create(ctx, big, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(writer.CoreV1().Pods(env.Namespace).Delete(ctx, gone.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})).To(Succeed())
	Eventually(held).WithContext(ctx).WithTimeout(stallWindow).WithPolling(20*time.Millisecond).Should(BeNumerically(">", 0), "the proxy holds the rest of the event")
	Eventually(func(g Gomega) {
		r := pods.Recorder.Snapshot().Requests[stalled.ID-1]
		g.Expect(r.End.IsZero()).To(BeFalse(), "watch #%d ended", r.ID)
		stalled = r
	}).WithContext(ctx).WithTimeout(stallWindow).WithPolling(20*time.Millisecond).Should(Succeed(), "the client's deadline ended the stalled watch")
	Expect(stalled.CleanEOF).To(BeFalse(), "the client's deadline, not the server, ended watch #%d", stalled.ID)
	Expect(frames.midFrame()).NotTo(BeEmpty(), "the watch body ended inside a frame (watch #%d: %s)", stalled.ID, stalled.Err)
	env.Note("S3 mid-frame end", fmt.Sprintf("%s; held %d bytes", strings.Join(frames.midFrame(), "; "), held()))

	e2e.By(ctx, "letting the held bytes through")
	restore()
	recovery = pods.EventuallyConverged(ctx, env.Pods)
	pods.ExpectDeletesObserved(probe.Object{Key: env.Namespace + "/" + gone.Name, UID: string(gone.UID)})

	rec := pods.Recorder.Snapshot()
	reinits := probe.Reinitialisations(rec)
	Expect(probe.CountByCause(reinits)).To(BeEmpty(), S3NoRelist+" after a deadline mid-frame (%v)", reinits)
	Expect(len(rec.Requests)).To(BeNumerically(">", stalled.ID), "a request followed the stalled watch")
	next := rec.Requests[stalled.ID]
	Expect(next.Watch && !next.SendInitialEvents).To(BeTrue(), "a plain watch follows the stalled one: %+v", next)
	Expect(resourceVersion(next.ResourceVersion)).To(BeNumerically(">=", resourceVersion(stalled.ResourceVersion)), "watch #%d resumes from the stalled watch's resourceVersion or later", next.ID)
}

// incompressible is n characters of random base64: a padding gzip cannot
// shrink much. kube-apiserver 1.37 compresses a streaming list's stream for
// a client that accepts gzip (Go's transport asks by itself): the
// WatchListCompression gate, beta and on, kubernetes PRs #139308 and
// #140140; a repeated character would shrink the event below the stall's
// byte count.
func incompressible(n int) string {
	b := make([]byte, n*3/4+3)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)[:n]
}

// frameObserver watches the protobuf watch bodies of a client, below
// client-go, without changing them: it notes each body that ended with an
// error inside a length-delimited frame.
type frameObserver struct {
	mu   sync.Mutex
	ends []string
}

func (o *frameObserver) wrap(rt http.RoundTripper) http.RoundTripper {
	return httpfault.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && req.URL.Query().Get("watch") == "true" && strings.Contains(resp.Header.Get("Content-Type"), "protobuf") {
			resp.Body = &frameTracker{ReadCloser: resp.Body, o: o}
		}
		return resp, err
	})
}

func (o *frameObserver) midFrame() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.ends...)
}

type frameTracker struct {
	io.ReadCloser
	o         *frameObserver
	header    [4]byte
	headerN   int
	length    int
	remaining int
	reported  bool
}

func (t *frameTracker) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.consume(p[:n])
	if err != nil && !errors.Is(err, io.EOF) && (t.headerN > 0 || t.remaining > 0) && !t.reported {
		t.reported = true
		t.o.mu.Lock()
		t.o.ends = append(t.o.ends, fmt.Sprintf("%q with %d of a %d-byte frame read", err, t.length-t.remaining, t.length))
		t.o.mu.Unlock()
	}
	return n, err
}

func (t *frameTracker) consume(b []byte) {
	for len(b) > 0 {
		if t.remaining == 0 {
			k := copy(t.header[t.headerN:], b)
			t.headerN += k
			b = b[k:]
			if t.headerN == 4 {
				t.length = int(binary.BigEndian.Uint32(t.header[:]))
				t.remaining, t.headerN = t.length, 0
			}
			continue
		}
		k := min(len(b), t.remaining)
		t.remaining -= k
		b = b[k:]
	}
}

// PodsWithV032FrameReader builds a pods informer like the factory's, on the
// probe's own HTTP client (recorder, deadline and all), whose protobuf
// watch streams are framed by v032FrameReader: the v0.32 client.
func PodsWithV032FrameReader(cfg *rest.Config, namespace string) func(informers.SharedInformerFactory) cache.SharedIndexInformer {
	return func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.InformerFor(&corev1.Pod{}, func(cs kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			c := rest.CopyConfig(cfg)
			gv := corev1.SchemeGroupVersion
			c.GroupVersion, c.APIPath = &gv, "/api"
			c.NegotiatedSerializer = v032Serializer{scheme.Codecs.WithoutConversion()}
			rc, err := rest.RESTClientForConfigAndClient(c, cs.CoreV1().RESTClient().(*rest.RESTClient).Client)
			Expect(err).NotTo(HaveOccurred(), "REST client with v0.32's frame reader")
			lw := cache.NewListWatchFromClient(rc, "pods", namespace, fields.Everything())
			return cache.NewSharedIndexInformer(lw, &corev1.Pod{}, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		})
	}
}

// v032Serializer is client-go's serializer with v0.32's protobuf frame reader.
type v032Serializer struct{ runtime.NegotiatedSerializer }

func (s v032Serializer) SupportedMediaTypes() []runtime.SerializerInfo {
	infos := append([]runtime.SerializerInfo(nil), s.NegotiatedSerializer.SupportedMediaTypes()...)
	for i, info := range infos {
		if info.MediaType == runtime.ContentTypeProtobuf && info.StreamSerializer != nil {
			ss := *info.StreamSerializer
			ss.Framer = v032Framer{ss.Framer}
			infos[i].StreamSerializer = &ss
		}
	}
	return infos
}

type v032Framer struct{ runtime.Framer }

func (v032Framer) NewFrameReader(r io.ReadCloser) io.ReadCloser { return &v032FrameReader{r: r} }

// v032FrameReader is apimachinery v0.32's lengthDelimitedFrameReader.Read:
// once a frame has begun, any error of the underlying reader, a deadline
// included, is reported as io.ErrShortBuffer.
type v032FrameReader struct {
	r         io.ReadCloser
	remaining int
}

func (r *v032FrameReader) Read(data []byte) (int, error) {
	if r.remaining <= 0 {
		var header [4]byte
		if _, err := io.ReadFull(r.r, header[:]); err != nil {
			return 0, err
		}
		r.remaining = int(binary.BigEndian.Uint32(header[:]))
	}
	want := min(r.remaining, len(data))
	n, err := io.ReadAtLeast(r.r, data[:want], want)
	r.remaining -= n
	if err == io.ErrShortBuffer || r.remaining > 0 {
		return n, io.ErrShortBuffer // the bug: err is lost mid-frame
	}
	return n, err
}

func (r *v032FrameReader) Close() error { return r.r.Close() }
