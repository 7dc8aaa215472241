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
	clientfeaturestesting.SetFeatureDuringTest(current().TB(), features.WatchListClient, m.Streaming)
	AddReportEntry("sync mode", m.Name)
}

// String is the mode's name.
func (m SyncMode) String() string { return m.Name }

// DescribeSyncModes declares a table of two specs running body once per
// sync mode, each labelled with its mode; decorations (labels, ...) apply to
// both. body calls m.Use() before building an informer.
func DescribeSyncModes(text string, body func(ctx ginkgo.SpecContext, m SyncMode), decorations ...any) bool {
	args := append([]any{body, ginkgo.Offset(1)}, decorations...)
	return ginkgo.DescribeTable(text, append(args, syncModeEntries(2)...)...)
}

// BothSyncModes are the DescribeTable entries of DescribeSyncModes, for a
// table with other parameters or entries; decorations apply to both.
func BothSyncModes(decorations ...any) []any { return syncModeEntries(2, decorations...) }

// syncModeEntries builds the entries; offset is how many callers up the
// spec's own code is.
func syncModeEntries(offset int, decorations ...any) []any {
	entry := func(m SyncMode, label string) any {
		args := append([]any{ginkgo.Offset(offset + 6), ginkgo.Label(label)}, decorations...)
		return ginkgo.Entry(m.Name, append(args, m)...)
	}
	return []any{entry(StreamingList, LabelStreamingList), entry(ListWatch, LabelListWatch)}
}
