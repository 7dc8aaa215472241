package kind

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"sigs.k8s.io/kind/pkg/log"
)

// logger writes kind's user-facing messages (V(0), warnings, errors) to w,
// one line each, prefixed "kind: ".
type logger struct {
	mu sync.Mutex
	w  io.Writer
}

func newLogger(w io.Writer) *logger { return &logger{w: w} }

func (l *logger) line(prefix, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "kind: %s%s\n", prefix, strings.TrimSpace(msg))
}

func (l *logger) Warn(m string)                    { l.line("WARNING: ", m) }
func (l *logger) Warnf(f string, a ...interface{}) { l.line("WARNING: ", fmt.Sprintf(f, a...)) }
func (l *logger) Error(m string)                   { l.line("ERROR: ", m) }
func (l *logger) Errorf(f string, a ...interface{}) {
	l.line("ERROR: ", fmt.Sprintf(f, a...))
}
func (l *logger) V(v log.Level) log.InfoLogger { return infoLogger{l: l, on: v <= 0} }

type infoLogger struct {
	l  *logger
	on bool
}

func (i infoLogger) Info(m string) {
	if i.on {
		i.l.line("", m)
	}
}
func (i infoLogger) Infof(f string, a ...interface{}) {
	if i.on {
		i.l.line("", fmt.Sprintf(f, a...))
	}
}
func (i infoLogger) Enabled() bool { return i.on }
