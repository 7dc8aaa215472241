package scenarios

import (
	"context"

	. "github.com/onsi/gomega"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/e2e"
)

// changeWhileCutOff cuts the informers behind proxy off (new connections
// refused, the current ones reset), makes the change (what names it),
// compacts etcd so that their resume is past the server's history, and
// lets them back in. The scenarios that need a relist after changes the
// informer never heard (S7, S17, S19) share it.
func changeWhileCutOff(ctx context.Context, proxy *faultproxy.Proxy, c cluster.EtcdCompactor, what string, change func()) {
	e2e.By(ctx, "cutting the informer off: new connections refused, the current one reset")
	reconnect := proxy.RefuseNew()
	proxy.ResetAll()

	e2e.By(ctx, what+", then compacting etcd")
	change()
	_, err := c.CompactEtcd(ctx, 0)
	Expect(err).NotTo(HaveOccurred())

	e2e.By(ctx, "letting the informer back in")
	Expect(reconnect()).To(Succeed())
}
