package scenarios

import (
	"context"

	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S7 (seed 003 scenario 5): a pod (on the CRD stacks a custom resource) is
// deleted and recreated under the same name (new UID) while the informer is cut off, and etcd's history is
// compacted, so the informer must re-initialise. It must converge, and the
// handler must learn of the old object's end: either a Delete of the old UID,
// or an Update whose old and new UIDs differ. The report says which.
//
// Expected of client-go v0.36: the relist replaces the store
// (tools/cache/delta_fifo.go Replace, or the watch-list's temporary store);
// for a key present before and after, the shared informer delivers
// OnUpdate(old, new) (shared_informer.go processDeltas) although the UIDs
// differ - the documented behaviour (the SharedInformer doc comment: clients
// are notified only of an update; upstream PR #133565 to send a delete was
// closed unmerged). Business logic keyed on UID breaks on it; the report
// flags it as "Update (UID changed)".
//
// RecreatedWhileDisconnected runs it with the probe options given (a
// negative control wraps the handler).
func RecreatedWhileDisconnected(ctx context.Context, s e2e.Setup, opts probe.Options) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	c := e2e.Require[cluster.EtcdCompactor](env.Backend, "compact etcd")
	proxy, writer := env.Proxy, env.Subjects
	server := writer.Quorum()
	old, err := writer.Create(ctx, "same")
	Expect(err).NotTo(HaveOccurred())

	opts.Namespace = env.Namespace
	pods := env.StartProbe(ctx, writer.Name(), env.User, opts)
	pods.EventuallyConverged(ctx, server)

	var recreated probe.Object
	changeWhileCutOff(ctx, proxy, c, "deleting and recreating the object under the same name", func() {
		Expect(writer.Delete(ctx, "same")).To(Succeed())
		recreated, err = writer.Create(ctx, "same")
		Expect(err).NotTo(HaveOccurred())
		Expect(recreated.UID).NotTo(Equal(old.UID))
	})
	recovery := pods.EventuallyConverged(ctx, server)
	n := pods.Report(recovery)

	rec := pods.Recorder.Snapshot()
	deletedOld, uidChange := false, false
	for _, e := range rec.Events {
		deletedOld = deletedOld || e.Kind == probe.Delete && e.UID == old.UID
		uidChange = uidChange || e.UIDChanged() && e.OldUID == old.UID && e.UID == recreated.UID
	}
	switch {
	case deletedOld:
		e2e.AddReportEntry("S7 outcome", "Delete of the old UID delivered")
	case uidChange:
		e2e.AddReportEntry("S7 outcome", "Update with a UID change (documented client-go behaviour; UID-keyed logic misses the delete)")
	}
	Expect(deletedOld || uidChange).To(BeTrue(), OldObjectEnded+" (Delete of uid %s, or an Update from it to uid %s); numbers: %s", old.UID, recreated.UID, n)
}
