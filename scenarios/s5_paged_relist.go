package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S5's assertion of a collection past one page.
const HeldEveryPage = "after each list of a collection past one page the informer's store held every object: the pager followed every continue token"

// S5Pages is how many pages of client-go's pager (500 objects,
// tools/pager/pager.go defaultPageSize) S5's paged collection spans: its
// last page partly filled.
const (
	S5Pages        = 3
	s5PageSize     = 500
	s5PagedObjects = (S5Pages-1)*s5PageSize + s5PageSize/5
	// s5CreateWorkers create the collection in parallel (small objects:
	// a second or two on 2 cores).
	s5CreateWorkers = 16
)

// PagedRelist is S5's collection past one page: s5PagedObjects pods (S5Pages
// pages of client-go's pager), without the watch cache (RelistProfile),
// so that every LIST goes to etcd, which pages: limit=500, then continue
// tokens. The informer syncs (its store must hold every object at once:
// HeldEveryPage), is cut off while pods on the first, middle and last
// page are deleted and etcd compacted, and its resume is answered 410;
// it relists (client-go tools/cache/reflector.go list: the LIST at its
// last resourceVersion is too old after the compaction, so it lists
// again at "" - a consistent list - keeping the pager's page size because
// the first list came back paginated, r.paginatedResult) and must hold
// every object again and hear every delete (as tombstones). The report
// names the informer's LIST requests and how many followed a continue
// token. In streaming-list mode kube-apiserver streams the sync and the
// relist without the watch cache too (measured on v1.37): no page, the
// store's checks hold.
//
// Expected of client-go v0.31-v0.37: tools/pager ListPager.List follows
// every continue token (pager.go List, EachListItem), and the reflector
// replaces its store with the whole list.
//
// s.Client, when set, is a negative control's broken client.
func PagedRelist(ctx context.Context, s e2e.Setup) {
	env, ctx, c := startRelistEnv(ctx, s)
	e2e.By(ctx, fmt.Sprintf("%d pods (%d pages of %d), created %d at a time", s5PagedObjects, S5Pages, s5PageSize, s5CreateWorkers))
	created := createInParallel(ctx, env.Subjects, "page-%04d", s5PagedObjects)
	pods := env.StartProbe(ctx, env.Subjects.Name(), env.User, probe.Options{Namespace: env.Namespace})
	pods.SyncMeasuresLoad = true // pages of pods: the machine's throughput
	expectEveryPage(pods, s5PagedObjects, "the initial sync")

	doomed := []probe.Object{created[0], created[s5PagedObjects/2], created[s5PagedObjects-1]}
	changeWhileCutOff(ctx, env.Proxy, c, "deleting a pod of the first, the middle and the last page", func() {
		for _, o := range doomed {
			Expect(env.Subjects.Delete(ctx, strings.TrimPrefix(o.Key, env.Namespace+"/"))).To(Succeed())
		}
	})
	recovery := pods.EventuallyConverged(ctx, env.Subjects.Quorum())
	expectEveryPage(pods, s5PagedObjects-len(doomed), "the relist")
	pods.ExpectDeletesObserved(doomed...)
	n := pods.Report(recovery)
	lists, continued := pagedLists(pods.Recorder.Snapshot())
	if s.Mode.Streaming && lists == 0 {
		// kube-apiserver streams a streaming list without the watch cache
		// too (measured on v1.37): no page, the store checks above hold.
		env.Note("S5 paged relist", fmt.Sprintf("%d pods, synced and relisted by streaming lists (the server streamed them: no page); re-initialisations: %v", s5PagedObjects, n.ReinitDetails))
		return
	}
	env.Note("S5 paged relist", fmt.Sprintf("%d pods; the informer's LISTs: %d, %d of them following a continue token; re-initialisations: %v", s5PagedObjects, lists, continued, n.ReinitDetails))
	// Two lists (the sync, the relist), each of S5Pages pages: else S5
	// tested no pager.
	Expect(continued).To(BeNumerically(">=", 2*(S5Pages-1)), "the server paged the informer's lists (%d LISTs, %d after a continue token)", lists, continued)
}

// expectEveryPage: the informer's store holds want objects right after
// what (a sync, or a relist the store converged after; nothing is written
// meanwhile).
func expectEveryPage(pods *e2e.Observed, want int, what string) {
	Expect(len(pods.Informer.GetStore().List())).To(Equal(want), HeldEveryPage+" (%s: the store's objects, of %d)", what, want)
}

// pagedLists counts the informer's LIST requests and those that followed
// a continue token.
func pagedLists(rec probe.Record) (lists, continued int) {
	for _, r := range rec.Requests {
		if r.Method != "GET" || r.Watch || r.Discovery() || r.Kind() != "list" {
			continue
		}
		lists++
		if strings.Contains(r.Query, "continue=") {
			continued++
		}
	}
	return lists, continued
}

// createInParallel creates n subjects named format with 0..n-1,
// s5CreateWorkers at a time, and returns them in name order.
func createInParallel(ctx context.Context, subjects *e2e.Subjects, format string, n int) []probe.Object {
	out := make([]probe.Object, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range s5CreateWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = subjects.Create(ctx, fmt.Sprintf(format, i))
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		Expect(err).NotTo(HaveOccurred(), "create %s %s", subjects.Name(), fmt.Sprintf(format, i))
	}
	return out
}

// TruncateAtFirstPage is a negative control's broken client: every LIST
// answer reaches client-go without its continue token (a proxy that drops
// it): the pager stops after the first page.
func TruncateAtFirstPage(cfg *rest.Config) *rest.Config {
	return httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || !isInformerList(req, resp) {
			return resp, err
		}
		return rewriteList(resp, func(l metav1.ListInterface) {
			l.SetContinue("")
			l.SetRemainingItemCount(nil)
		})
	})
}
