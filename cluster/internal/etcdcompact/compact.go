// Package etcdcompact compacts etcd the way kube-apiserver's own compactor
// does, for every backend that reaches an etcd.
package etcdcompact

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// RevKey is the key kube-apiserver's compactor records compactions under.
const RevKey = "compact_rev_key"

// Compact records rev (the current revision when rev <= 0) under RevKey,
// then compacts etcd physically to it, as kube-apiserver's compactor does
// (k8s.io/apiserver/pkg/storage/etcd3/compact.go, Compact). Every
// kube-apiserver watches that key (compactor.runWatchLoop), so its watch
// cache learns of the compaction as in production (the cacher purges its
// snapshots on its next 15 s poll, cacher/compactor.go); a compaction that
// skips the key is never noticed by the watch cache, which then keeps
// serving the compacted history. It returns the revision compacted to.
func Compact(ctx context.Context, cli *clientv3.Client, rev int64) (int64, error) {
	cur, err := cli.Get(ctx, RevKey)
	if err != nil {
		return 0, fmt.Errorf("compact etcd: read %s: %w", RevKey, err)
	}
	if rev <= 0 {
		rev = cur.Header.Revision
	}
	var version int64
	if len(cur.Kvs) > 0 {
		version = cur.Kvs[0].Version
	}
	txn, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.Version(RevKey), "=", version)).
		Then(clientv3.OpPut(RevKey, strconv.FormatInt(rev, 10))).Commit()
	if err != nil {
		return 0, fmt.Errorf("compact etcd: record %s: %w", RevKey, err)
	}
	if !txn.Succeeded {
		return 0, fmt.Errorf("compact etcd: %s changed concurrently (is an apiserver compacting too?)", RevKey)
	}
	if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, fmt.Errorf("compact etcd to revision %d: %w", rev, err)
	}
	return rev, nil
}
