// Package faultlog records when faults were in force: every fault the
// backends, the fault proxy and the HTTP fault injectors apply is a window
// with a start and an end, so a report can draw it next to what the
// informer did (the timeline of issue 16).
//
// The log is one per process, as the faults are: a Ginkgo process runs one
// spec at a time, and each parallel process has its own log. A reader marks
// the log when its spec starts (Mark) and takes the windows begun since
// (Since). A window still open when read has a zero End.
package faultlog

import (
	"sync"
	"time"
)

// Window is one fault, from Start to End (zero End: still in force).
type Window struct {
	// Kind is what the fault does: one of the Kind constants.
	Kind string `json:"kind"`
	// Detail says where: "kube-apiserver-1", "revision 1234", a request
	// match, ...
	Detail string    `json:"detail,omitempty"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end,omitzero"`
}

// The kinds of fault, as the reports name them.
const (
	APIServerDown  = "kube-apiserver down"
	EtcdDown       = "etcd down"
	Compaction     = "etcd compaction"
	Restore        = "etcd restore"
	CertRotation   = "certificate rotation"
	Blackhole      = "blackhole"
	RefuseNew      = "new connections refused"
	ConnectionsCut = "connections cut"
	Stall          = "connections stalled"
	Latency        = "latency"
	Reset          = "connections reset"
	HTTPFault      = "injected HTTP answer"
	StreamFault    = "rewritten watch stream"
)

var (
	mu      sync.Mutex
	windows []Window
)

// Begin records that a fault of kind starts now and returns the function
// that records its end; calling it again does nothing.
func Begin(kind, detail string) (end func()) {
	mu.Lock()
	defer mu.Unlock()
	i := len(windows)
	windows = append(windows, Window{Kind: kind, Detail: detail, Start: time.Now()})
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			windows[i].End = time.Now()
		})
	}
}

// Around records a fault that lasts as long as f (a compaction, a restore)
// and returns f's error.
func Around(kind, detail string, f func() error) error {
	end := Begin(kind, detail)
	defer end()
	return f()
}

// Mark is the log's position now: Since(Mark()) are the windows begun
// after it.
func Mark() int {
	mu.Lock()
	defer mu.Unlock()
	return len(windows)
}

// Since returns the windows begun at or after mark, in the order they
// began.
func Since(mark int) []Window {
	mu.Lock()
	defer mu.Unlock()
	if mark < 0 || mark > len(windows) {
		mark = len(windows)
	}
	return append([]Window(nil), windows[mark:]...)
}
