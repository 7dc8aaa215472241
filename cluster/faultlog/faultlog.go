// Package faultlog records when faults were in force: every fault the
// backends, the fault proxy and the HTTP fault injectors apply is a window
// with a start and an end, so a report can draw it next to what the
// informer did (the timeline of issue 16).
//
// A Log is one spec's: the harness makes one per spec (e2e.StartEnv) and
// hands it to what applies faults in that spec, the fault proxy and the
// HTTP fault injectors as a value, the backends in the context of the call
// that applies the fault (NewContext: every fault method of the cluster
// capabilities takes one). A fault applied with no log (a benchmark, a
// tool) is recorded nowhere. A window still open when read has a zero End.
package faultlog

import (
	"context"
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

// Log is the fault windows of one spec, in the order they began. A nil
// *Log records nothing. Safe for concurrent use.
type Log struct {
	mu      sync.Mutex
	windows []Window
}

// New is an empty log.
func New() *Log { return &Log{} }

// Begin records that a fault of kind starts now and returns the function
// that records its end; calling it again does nothing.
func (l *Log) Begin(kind, detail string) (end func()) {
	if l == nil {
		return func() {}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	i := len(l.windows)
	l.windows = append(l.windows, Window{Kind: kind, Detail: detail, Start: time.Now()})
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.windows[i].End = time.Now()
		})
	}
}

// Around records a fault that lasts as long as f (a compaction, a restore)
// and returns f's error.
func (l *Log) Around(kind, detail string, f func() error) error {
	end := l.Begin(kind, detail)
	defer end()
	return f()
}

// Windows are the windows recorded so far, in the order they began.
func (l *Log) Windows() []Window {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Window(nil), l.windows...)
}

type contextKey struct{}

// NewContext is ctx carrying l: a backend's fault method called with it
// records its fault in l (FromContext).
func NewContext(ctx context.Context, l *Log) context.Context {
	return context.WithValue(ctx, contextKey{}, l)
}

// FromContext is the log ctx carries (NewContext), or nil: a fault applied
// with it is recorded nowhere.
func FromContext(ctx context.Context) *Log {
	l, _ := ctx.Value(contextKey{}).(*Log)
	return l
}
