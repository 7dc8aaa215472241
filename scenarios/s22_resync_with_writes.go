package scenarios

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// ResyncHidesNothing is S22's assertion: resyncs neither hid a change nor
// delivered one the handler had not heard as a change.
const ResyncHidesNothing = "every change reached the handler as a change, and resyncs re-delivered only what it had heard"

// S22Resync is S22's resync period (factory and handler), S22Objects how
// many objects it relabels, S22Rounds how many times each at least: the
// rounds go on until S22ResyncsDuring resync calls were heard during them
// (a fast machine writes 100 in 0.7 s, under one resync period), for at
// most S22WritesBound.
const (
	S22Resync        = time.Second
	S22Objects       = 5
	S22Rounds        = 20
	S22ResyncsDuring = 2 * S22Objects
	S22WritesBound   = 20 * S22Resync
)

// ResyncWithWrites is S22: an informer resyncs every S22Resync while its
// objects are relabelled, S22Rounds times each, round after round (a few
// seconds of writes, several resyncs among them). Every write's
// resourceVersion must reach the handler as a change (an Add or an Update
// whose old and new resourceVersions differ), and every resync (an Update
// with the same resourceVersion on both sides) must carry a
// resourceVersion the handler had already heard of as a change of that
// object: a resync hides no change and announces none.
//
// Expected of client-go v0.31-v0.37: a resync re-delivers the store's
// objects (delta_fifo.go Resync: a Sync delta per key with nothing queued;
// the_real_fifo.go Resync, and with AtomicFIFO one SyncAll delta that
// controller.go processDeltas turns into OnUpdate(obj, obj) for every object
// of the store), and the store holds only what was processed, in order,
// before; shared_informer.go OnUpdate marks an update with equal
// resourceVersions a sync and hands it only to handlers due a resync.
func ResyncWithWrites(ctx context.Context, s e2e.Setup, opts probe.Options) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	writer := env.Subjects
	server := writer.Quorum()
	names := make([]string, S22Objects)
	for i := range names {
		names[i] = fmt.Sprintf("resynced-%d", i)
		_, err := writer.Create(ctx, names[i])
		Expect(err).NotTo(HaveOccurred())
	}
	opts.Namespace = env.Namespace
	opts.Resync = S22Resync
	obs := env.StartProbe(ctx, writer.Name(), env.User, opts)
	obs.EventuallyConverged(ctx, server)

	e2e.By(fmt.Sprintf("relabelling %d objects at least %d times each while the informer resyncs every %s, until %d resync calls came among the writes", S22Objects, S22Rounds, S22Resync, S22ResyncsDuring))
	written := map[string][]string{}
	start := time.Now()
	rounds := 0
	for ; rounds < S22Rounds || countResyncs(obs.Recorder.Snapshot().Events, start) < S22ResyncsDuring; rounds++ {
		if time.Since(start) > S22WritesBound {
			break // the precondition below fails, naming the numbers
		}
		for _, name := range names {
			o, err := writer.SetLabels(ctx, name, map[string]string{"round": fmt.Sprint(rounds)})
			Expect(err).NotTo(HaveOccurred())
			written[o.Key] = append(written[o.Key], o.ResourceVersion)
		}
	}
	end := time.Now()
	// One resync more after the writes, so the last one saw the last
	// changes.
	resyncsAfter := func() int { return countResyncs(obs.Recorder.Snapshot().Events, end) }
	Eventually(resyncsAfter).WithTimeout(e2e.HandlerLagTimeout+S22Resync).Should(BeNumerically(">=", S22Objects), "a resync after the writes")
	recovery := obs.EventuallyConverged(ctx, server)
	n := obs.Report(recovery)

	events := obs.Recorder.Snapshot().Events
	heard := map[string]map[string]bool{}
	var hidden, announced []string
	during := 0
	for _, e := range events {
		resync := e.Resync()
		switch {
		case resync:
			if !e.Time.Before(start) && e.Time.Before(end) {
				during++
			}
			if !heard[e.Key][e.ResourceVersion] {
				announced = append(announced, fmt.Sprintf("resync of %s@%s before any change to it", e.Key, e.ResourceVersion))
			}
		case e.Kind == probe.Add || e.Kind == probe.Update:
			if heard[e.Key] == nil {
				heard[e.Key] = map[string]bool{}
			}
			heard[e.Key][e.ResourceVersion] = true
		}
	}
	for key, rvs := range written {
		for _, rv := range rvs {
			if !heard[key][rv] {
				hidden = append(hidden, fmt.Sprintf("%s@%s never heard as a change", key, rv))
			}
		}
	}
	e2e.AddReportEntry("S22 resyncs", fmt.Sprintf("%d writes in %s; %d resync calls during them; %d changes hidden%s; %d resyncs of something unheard%s",
		S22Objects*rounds, end.Sub(start).Round(time.Millisecond), during, len(hidden), firstOf(hidden, 3), len(announced), firstOf(announced, 3)))
	Expect(during).To(BeNumerically(">=", S22ResyncsDuring), "resyncs happened while the objects changed (within %s of writes), else S22 tests nothing; numbers: %s", S22WritesBound, n)
	Expect(append(hidden, announced...)).To(BeEmpty(), ResyncHidesNothing+"; numbers: %s", n)
}

// countResyncs counts the resync calls (probe.Event.Resync) at or after
// since.
func countResyncs(events []probe.Event, since time.Time) int {
	k := 0
	for _, e := range events {
		if e.Resync() && !e.Time.Before(since) {
			k++
		}
	}
	return k
}
