package e2e

import (
	"github.com/onsi/ginkgo/v2"
	"k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
)

// SyncMode is one of client-go's two ways for a reflector to list: a
// streaming list (a WATCH with sendInitialEvents=true, the default from
// client-go 1.35) or a LIST followed by a WATCH. The feature gate is
// features.WatchListClient (env KUBE_FEATURE_WatchListClient).
type SyncMode struct {
	Name      string
	Streaming bool
}

var (
	// StreamingList is the WatchListClient feature on.
	StreamingList = SyncMode{Name: "streaming list", Streaming: true}
	// ListWatch is the WatchListClient feature off.
	ListWatch = SyncMode{Name: "LIST+WATCH", Streaming: false}
)

// Labels of the two modes, so `--label-filter=sync:list` runs one of them.
const (
	LabelStreamingList = "sync:streaming-list"
	LabelListWatch     = "sync:list"
)

// Use switches client-go to the mode for the rest of the current spec
// (restored after it; Ginkgo runs one spec at a time per process) and
// records it in the spec's report. Call it before building an informer.
func (m SyncMode) Use() {
	clientfeaturestesting.SetFeatureDuringTest(ginkgo.GinkgoTB(), features.WatchListClient, m.Streaming)
	ginkgo.AddReportEntry("sync mode", m.Name)
}

// String is the mode's name.
func (m SyncMode) String() string { return m.Name }

// BothSyncModes are DescribeTable entries for the two modes, each labelled;
// the table's body receives the SyncMode after the SpecContext:
//
//	DescribeTable("...", func(ctx SpecContext, m e2e.SyncMode) { m.Use(); ... }, e2e.BothSyncModes()...)
//
// Extra decorations (labels, ...) are added to both entries.
func BothSyncModes(decorations ...any) []any {
	return []any{
		ginkgo.Entry(StreamingList.Name, append(decorations, ginkgo.Label(LabelStreamingList), StreamingList)...),
		ginkgo.Entry(ListWatch.Name, append(append([]any{}, decorations...), ginkgo.Label(LabelListWatch), ListWatch)...),
	}
}
