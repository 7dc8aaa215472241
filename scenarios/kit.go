package scenarios

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// The scenario kit: the steps several scenarios share. The others live
// beside it: the background writer (writer.go), a cut-off with changes
// meanwhile (cutoff.go), slow consumers (slowness.go), broken clients
// (controls.go), faults on the wire (e2e/httpfault).

// RelistProfile is the kube-apiserver flag profile of the specs that need a
// relist after a real 410: no watch cache (fixtures/profiles/no-watch-cache.yaml).
const RelistProfile = "no-watch-cache"

// startRelistEnv starts the spec's Env for a relist after a real 410
// (S17, S19): without the watch cache the resume after a cut-off is an
// etcd watch below the compacted revision, answered 410 at once, and the
// informer relists. (The watch cache would serve the resume from its event
// buffer, which compaction does not touch: see S5.) It returns the etcd
// compaction the cut-off needs too; a backend without it skips.
func startRelistEnv(ctx context.Context, s e2e.Setup) (*e2e.Env, context.Context, cluster.EtcdCompactor) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{Profile: RelistProfile})
	return env, ctx, e2e.Require[cluster.EtcdCompactor](ctx, env.Backend, "compact etcd")
}

// createNamed creates n subjects named format with 0..n-1, one after the
// other (in that resourceVersion order), and returns them.
func createNamed(ctx context.Context, subjects *e2e.Subjects, format string, n int) []probe.Object {
	ginkgo.GinkgoHelper()
	out := make([]probe.Object, 0, n)
	for i := range n {
		name := fmt.Sprintf(format, i)
		o, err := subjects.Create(ctx, name)
		Expect(err).NotTo(HaveOccurred(), "create %s %s", subjects.Name(), name)
		out = append(out, o)
	}
	return out
}

// startConverged starts the spec's informer on its subjects (env.Subjects,
// in its namespace, as the test user) with opts, and waits until it
// synced and its store equals the server's.
func startConverged(ctx context.Context, env *e2e.Env, opts probe.Options) *e2e.Observed {
	ginkgo.GinkgoHelper()
	opts.Namespace = env.Namespace
	obs := env.StartProbe(ctx, env.Subjects.Name(), env.User, opts)
	obs.EventuallyConverged(ctx, env.Subjects.Quorum())
	return obs
}
